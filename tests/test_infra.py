"""infra/ checked without a container engine: the compose files and the Kubernetes manifests parse,
reference only images, services, volumes, secrets, variables and ports that exist, set only real
settings, run only real commands, and the manifests validate against the Kubernetes JSON schemas
of a current version (kubernetes-validate, offline)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.platform.nats_roles import ROLES, permissions
from skillpress.platform.settings import Settings
from skillpress.workers.app import WORKERS

INFRA = Path(__file__).parents[1] / "infra"
COMPOSE = INFRA / "compose" / "compose.yaml"
CLUSTER = INFRA / "compose" / "compose.cluster.yaml"
K8S = INFRA / "k8s" / "skillpress.yaml"
KEDA = INFRA / "k8s" / "keda-scaledobjects.yaml"
OUR_IMAGE = "skillpress:0.1.0"
PUBLIC_IMAGES = {"nats", "postgres", "minio/minio", "minio/mc"}
# what an operator exports before `docker compose up`: references, never values in the files
OPERATOR_VARIABLES = {
    "OTEL_EXPORTER_OTLP_ENDPOINT",  # where traces go; empty: none are sent
    "NATS_OPERATOR_PASSWORD",
    "NATS_STAGE_PASSWORD",
    "NATS_PUBLISHER_PASSWORD",
    "NATS_FOLLOWER_PASSWORD",
    "NATS_RUNTIME_PASSWORD",
    "NATS_ROUTE_PASSWORD",
    "POSTGRES_PASSWORD",
    "MINIO_ROOT_USER",
    "MINIO_ROOT_PASSWORD",
}


def _settings_variables() -> set[str]:
    """Every SKILLPRESS_* variable skillpress reads: its settings, and the variables the
    settings name as holding credentials (by their default names)."""
    names = {f"SKILLPRESS_{name.upper()}" for name in Settings.model_fields}
    defaults = Settings(home=Path("/nonexistent"))
    names |= {defaults.s3_access_key_env, defaults.s3_secret_key_env}
    names |= {defaults.nats_password_env, defaults.nats_token_env}
    return names


def _skillpress_env_ok(env: dict[str, Any], where: str) -> None:
    known = _settings_variables()
    for key, value in env.items():
        if key.startswith("SKILLPRESS_"):
            assert key in known, f"{where}: {key} is not a skillpress setting"
        if key.endswith("_ENV") and key.startswith("SKILLPRESS_"):
            assert value in known or re.fullmatch(r"[A-Z_][A-Z0-9_]*", str(value)), where
    if "SKILLPRESS_STREAM_REPLICAS" in env:
        replicas = int(env["SKILLPRESS_STREAM_REPLICAS"])
        Settings(home=Path("/x"), stream_replicas=replicas)  # in range, or this raises


def _command_ok(argv: list[str], where: str) -> None:
    """A skillpress command line the CLI has: a real command, real worker names."""
    assert argv[0] in {"serve", "worker", "refresh", "up", "migrate"}, (
        f"{where}: no command {argv[0]!r}"
    )
    if argv[0] == "worker":
        names = [a for a in argv[1:] if not a.startswith("--")]
        assert names and all(n in WORKERS for n in names), f"{where}: {argv}"


def _load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), path
    return doc


def _merged() -> dict[str, Any]:
    """compose.yaml with the cluster override laid over it, as `docker compose -f … -f …` does
    for what these files use (maps merged key by key, lists and scalars replaced)."""

    def merge(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            return {
                k: merge(a[k], b[k]) if k in a and k in b else b.get(k, a.get(k))
                for k in {**a, **b}
            }
        return b

    return merge(_load(COMPOSE), _load(CLUSTER))


@pytest.mark.parametrize("files", ["one host", "cluster"])
def test_the_compose_files_reference_only_what_exists(files: str) -> None:
    doc = _load(COMPOSE) if files == "one host" else _merged()
    services = doc["services"]
    volumes, secrets = set(doc.get("volumes") or {}), set(doc.get("secrets") or {})
    assert (INFRA / "Dockerfile").is_file()
    text = COMPOSE.read_text() + (CLUSTER.read_text() if files == "cluster" else "")
    assert set(re.findall(r"\$\{([A-Z_]+)", text)) <= OPERATOR_VARIABLES
    for name, svc in services.items():
        image = svc["image"]
        if image == OUR_IMAGE:
            assert svc["build"]["dockerfile"] == "infra/Dockerfile", name
            _command_ok(svc["command"], name)
            _skillpress_env_ok(svc["environment"], name)
            for dep in svc.get("depends_on", {}):
                assert dep in services, f"{name} depends on {dep}, which is not a service"
        else:
            assert image.split(":")[0] in PUBLIC_IMAGES and ":" in image, f"{name}: {image}"
        for mount in svc.get("volumes", []):
            source = mount.split(":")[0]
            if source.startswith("../"):  # a file of the repository, bound read-only
                assert (COMPOSE.parent / source).is_file() and mount.endswith(":ro"), mount
                continue
            assert source in volumes, f"{name}: volume {mount}"
        for secret in svc.get("secrets", []):
            assert secret in secrets, f"{name}: secret {secret}"
        for port in svc.get("ports", []):
            host, published, target = port.split(":")
            assert host == "127.0.0.1" and published == target == "8787", f"{name}: {port}"
    workers = {s["command"][1] for s in services.values() if s.get("command", [""])[0] == "worker"}
    assert workers == set(WORKERS), "a service for every worker kind"
    nats_nodes = [n for n, s in services.items() if s["image"].startswith("nats:")]
    if files == "cluster":
        assert len(nats_nodes) == 3
        names = {
            s["command"][s["command"].index("--name") + 1]
            for n, s in services.items()
            if n in nats_nodes
        }
        assert names == {"n1", "n2", "n3"}, "a unique server_name per node"
        urls = services["api"]["environment"]["SKILLPRESS_NATS_URL"].split(",")
        assert {u.split("//")[1].split(":")[0] for u in urls} == set(nats_nodes)
        assert services["worker-render"]["environment"]["SKILLPRESS_STREAM_REPLICAS"] == "3"
        assert {s["volumes"][0].split(":")[0] for n, s in services.items() if n in nats_nodes} == {
            "nats-data",
            "nats-2-data",
            "nats-3-data",
        }, "one data volume per node"
    for node in nats_nodes:
        assert "healthz?js-enabled-only=true" in " ".join(services[node]["healthcheck"]["test"])


def _k8s_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(K8S.read_text()) if d]


def test_the_kubernetes_manifests_validate_against_a_current_schema() -> None:
    import kubernetes_validate

    version = kubernetes_validate.utils.latest_version()
    docs = _k8s_docs()
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)  # raises with the field named
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert ("Service", "skillpress-api") in kinds and ("CronJob", "skillpress-refresh") in kinds
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    assert {f"skillpress-worker-{w}" for w in WORKERS} | {"skillpress-api"} == set(deployments)
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    _skillpress_env_ok(config["data"], "ConfigMap")
    for name, dep in deployments.items():
        pod = dep["spec"]["template"]["spec"]
        assert (
            dep["spec"]["selector"]["matchLabels"].items()
            <= dep["spec"]["template"]["metadata"]["labels"].items()
        )
        for c in pod["containers"]:
            assert c["image"] == OUR_IMAGE and c["securityContext"]["runAsNonRoot"] is True
            _command_ok(c["args"], name)
            env = {e["name"]: e.get("value", "") for e in c["env"]}
            _skillpress_env_ok(env, name)
            for e in c["env"]:  # credentials only as references
                if e["name"] in (
                    "SKILLPRESS_DATABASE_URL",
                    "SKILLPRESS_S3_ACCESS_KEY",
                    "SKILLPRESS_S3_SECRET_KEY",
                ):
                    assert "secretKeyRef" in e["valueFrom"], f"{name}: {e['name']}"
            mounts = {m["name"] for m in c["volumeMounts"]}
            assert mounts <= {v["name"] for v in pod["volumes"]}, name
    service = next(d for d in docs if d["kind"] == "Service")
    api = deployments["skillpress-api"]["spec"]["template"]["spec"]["containers"][0]
    assert service["spec"]["ports"][0]["targetPort"] in {p["name"] for p in api["ports"]}
    assert (
        service["spec"]["selector"]
        == deployments["skillpress-api"]["spec"]["selector"]["matchLabels"]
    )
    cron = next(d for d in docs if d["kind"] == "CronJob")
    _command_ok(
        cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"], "cron"
    )


def test_the_nats_values_and_the_lag_scaler_name_what_skillpress_runs() -> None:
    values = yaml.safe_load((INFRA / "k8s" / "nats-values.yaml").read_text())
    assert values["config"]["cluster"] == {"enabled": True, "replicas": 3}
    assert values["config"]["jetstream"]["fileStore"]["pvc"]["enabled"] is True
    assert "kubernetes.io/hostname" in values["podTemplate"]["topologySpreadConstraints"]
    scaled = yaml.safe_load(KEDA.read_text())
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "nats-jetstream" and trigger["metadata"]["stream"] == "SKILLPRESS"
    consumers = {step.consumer for steps in WORKERS.values() for step in steps}
    assert trigger["metadata"]["consumer"] in consumers
    deployments = {d["metadata"]["name"] for d in _k8s_docs() if d["kind"] == "Deployment"}
    assert scaled["spec"]["scaleTargetRef"]["name"] in deployments
    assert "Caveat, clustered" in KEDA.read_text()


def _role_of(argv: list[str]) -> str:
    """The NATS role a skillpress command runs as (`nats_roles`)."""
    from skillpress.platform.nats_roles import role_of_worker

    if argv[0] == "worker":
        roles = {role_of_worker(n) for n in argv[1:] if not n.startswith("--")}
        assert len(roles) == 1, argv
        return roles.pop()
    return "operator"


def test_every_process_the_manifests_run_is_its_roles_nats_user() -> None:
    """No deployment talks to an open NATS, and none holds more than its role: each skillpress
    process is given its role's user and that role's password (a stage's cannot send a command
    that publishes or write a live pointer), and every NATS server asks for them with the
    permissions `nats_roles` gives each."""
    from skillpress.platform.nats_roles import password_variable, user_of

    for files in ("one host", "cluster"):
        doc = _load(COMPOSE) if files == "one host" else _merged()
        for name, svc in doc["services"].items():
            if svc["image"] == OUR_IMAGE and svc["command"][0] != "migrate":
                env, role = svc["environment"], _role_of(svc["command"])
                assert env["SKILLPRESS_NATS_USER"] == user_of(role), (files, name)
                variable = f"NATS_{role.upper()}_PASSWORD"
                assert env["SKILLPRESS_NATS_PASSWORD"] == f"${{{variable}:?set {variable}}}"
            elif svc["image"].startswith("nats:"):
                assert svc["command"][-2:] == ["-c", "/etc/nats/permissions.conf"], name
                assert "../nats/permissions.conf:/etc/nats/permissions.conf:ro" in svc["volumes"]
                for role in ROLES:
                    assert password_variable(role) in svc["environment"], (files, name, role)
    for doc in yaml.safe_load_all((INFRA / "k8s" / "skillpress.yaml").read_text()):
        if doc.get("kind") == "ConfigMap":
            assert "SKILLPRESS_NATS_USER" not in doc["data"]  # each Deployment its own
        spec = (doc.get("spec") or {}).get("template") or (
            ((doc.get("spec") or {}).get("jobTemplate") or {}).get("spec", {}).get("template")
        )
        if doc.get("kind") in ("Deployment", "CronJob") and spec is not None:
            for container in spec["spec"]["containers"]:
                env = {e["name"]: e for e in container.get("env", [])}
                role = _role_of(container["args"])
                assert env["SKILLPRESS_NATS_USER"]["value"] == user_of(role)
                key = env["SKILLPRESS_NATS_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"]
                assert key == f"nats-{role}-password", doc["metadata"]["name"]
    values = _load(INFRA / "k8s" / "nats-values.yaml")
    users = values["config"]["merge"]["authorization"]["users"]
    assert [u["user"] for u in users] == [user_of(r) for r in ROLES]
    for user, role in zip(users, ROLES, strict=True):
        assert user["permissions"] == permissions(role)
        assert user["password"] == f"<< ${password_variable(role)} >>"
        key = values["container"]["env"][password_variable(role)]["valueFrom"]["secretKeyRef"]
        assert key["key"] == f"nats-{role}-password"


def test_the_production_nats_permissions_are_the_roles() -> None:
    """infra/nats/permissions.conf is what `nats_roles` writes (`just nats-permissions`)."""
    from skillpress.platform.nats_roles import production_config

    assert (INFRA / "nats" / "permissions.conf").read_text() == production_config(), (
        "run `just nats-permissions` and commit infra/nats/permissions.conf"
    )


def test_the_scrape_config_finds_every_process_that_answers_metrics() -> None:
    """#44.1: the compose job names the api and every worker service (on the port each
    answers /metrics), and the Kubernetes job keeps exactly the pods the manifests annotate."""
    scrape = _load(INFRA / "prometheus" / "prometheus.yml")
    jobs = {j["job_name"]: j for j in scrape["scrape_configs"]}
    services = _load(COMPOSE)["services"]
    found = {
        name: sd["port"]
        for sd in jobs["skillpress-compose"]["dns_sd_configs"]
        for name in sd["names"]
    }
    ours = {n for n, s in services.items() if s.get("image") == OUR_IMAGE and n != "migrate"}
    assert set(found) == ours
    anchor_env = services["worker-render"]["environment"]
    assert all(
        p == int(anchor_env["SKILLPRESS_PROBE_PORT"]) for n, p in found.items() if n != "api"
    )
    assert found["api"] == 8787
    annotated = {
        d["metadata"]["name"]: d["spec"]["template"]["metadata"].get("annotations", {})
        for d in _k8s_docs()
        if d["kind"] == "Deployment"
    }
    assert all(a.get("prometheus.io/scrape") == "true" for a in annotated.values()), annotated
    config = next(d for d in _k8s_docs() if d["kind"] == "ConfigMap")["data"]
    for name, a in annotated.items():
        port = "8787" if name == "skillpress-api" else config["SKILLPRESS_PROBE_PORT"]
        assert a["prometheus.io/port"] == port, name
    keep = jobs["skillpress-kubernetes"]["relabel_configs"][0]
    assert keep["action"] == "keep" and keep["regex"] == "true"


def test_the_alert_rules_name_only_metrics_skillpress_exports() -> None:
    """#57.3: infra/prometheus/alerts.yml answers the first questions (behind, failing, dead
    letters, an outage, down), is loaded by the scrape config, and every skillpress metric an
    expression names is one skillpress/platform/metrics.py exports (a renamed metric would leave
    an alert that can never fire)."""
    import re

    scrape = _load(INFRA / "prometheus" / "prometheus.yml")
    assert scrape["rule_files"] == ["alerts.yml"]
    rules = _load(INFRA / "prometheus" / "alerts.yml")["groups"][0]["rules"]
    names = {r["alert"] for r in rules}
    assert {"SkillpressBehind", "SkillpressStageFailing", "SkillpressDeadLetters"} <= names
    exported = set(
        re.findall(
            r'"(skillpress_[a-z_]+)"',
            (Path(__file__).parents[1] / "skillpress" / "platform" / "metrics.py").read_text(),
        )
    )
    for rule in rules:
        for name in re.findall(
            r"\b(skillpress_[a-z_]+?)(?:_total|_bucket|_count|_sum)?\b", rule["expr"]
        ):
            base = name if name in exported else re.sub(r"_(total|bucket|count|sum)$", "", name)
            assert base in exported or f"{base}_total" in exported, (rule["alert"], name)
