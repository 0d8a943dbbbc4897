"""skillpress's own API as a skill: derived from the checked-in OpenAPI document, passing the
same checks as any other package, and operating a running skillpress through the runtime."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.api.app import api_document
from skillpress.derive.package import derive_package
from skillpress.runtime.calling.execute import default_env_var
from skillpress.runtime.package.skill import load_skill
from tests.api.conftest import PETSTORE, Served
from tests.cli.test_up import home_env

pytestmark = pytest.mark.integration  # starts real servers

OPENAPI = Path(__file__).parents[2] / "skillpress" / "schemas" / "openapi.json"


def test_skillpress_derives_a_skill_from_its_own_api_and_every_operation_is_a_tool() -> None:
    package = derive_package(OPENAPI.read_bytes())
    again = derive_package(json.dumps(api_document(), indent=2, sort_keys=True).encode() + b"\n")
    assert package.version_id == again.version_id  # the checked-in document is the served one
    m = package.manifest
    declared = sum(len(item) for item in api_document()["paths"].values())
    assert declared >= 25
    assert (m.slug, m.auth.header, m.stats.operations, m.stats.tools) == (
        "skillpress",
        "Authorization",
        declared,
        declared,
    )
    skill = load_skill(package.files)  # the publish check
    assert "skillpress_create_skill" in {t.name for t in skill.tools}
    assert "Authorization" not in json.dumps([t.schema for t in skill.tools])


def test_an_agent_operates_skillpress_through_its_own_skill(served: Served, tmp_path: Path) -> None:
    out = tmp_path / "skillpress"  # bound as `skillpress`: its key is in SKILLPRESS_API_KEY
    env = home_env(tmp_path / "client-home") | {default_env_var("skillpress"): served.token}

    def skillpress(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "skillpress.cli.main", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    # derived for where this skillpress listens (the document names the default address)
    derived = skillpress("derive", str(OPENAPI), "--out", str(out), "--base-url", served.base)
    assert derived.returncode == 0, derived.stderr
    created = skillpress(
        "call",
        str(out),
        "create_skill",
        "--json",
        "--args",
        json.dumps({"slug": "dogfood", "spec": PETSTORE.read_text()}),
    )
    assert created.returncode == 0, created.stderr
    answer = json.loads(created.stdout)
    assert answer["status"] == 202 and answer["body"]["skill"] == "dogfood"
    status = skillpress(
        "call",
        str(out),
        "get_submission",
        "--json",
        "--args",
        json.dumps({"submission": answer["body"]["submission"]}),
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["body"]["submission"] == answer["body"]["submission"]
    listed = skillpress("call", str(out), "list_skills", "--json")
    assert "dogfood" in [s["slug"] for s in json.loads(listed.stdout)["body"]]
