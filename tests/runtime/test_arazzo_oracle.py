"""Arazzo that another runner agrees with: documents modelled on the specification's examples
are imported, run by `skillpress run` against a local server, exported, and run again by
arazzo-runner (the Python Arazzo runner, from PyPI): both send the same requests in the same
order, the export is valid Arazzo 1.0.1, and export → import → export gives the same bytes.

arazzo-runner fills no input defaults, so each run is given every input; it sends no
Idempotency-Key (skillpress's own, from an identity), so headers are not compared."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from skillpress.runtime.interop.arazzo_schema import problems
from tests.cli_process import skillpress
from tests.fake_api import FakeApi, Reply, Seen
from tests.runtime.guesthouse import KEY, GuesthouseServer

# runs another project's runner (arazzo-runner) beside the command line
pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parents[2] / "skillpress" / "examples"
Sent = tuple[str, str, dict[str, list[str]], Any]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return skillpress(*args, env=env)


def _oracle(document: Path, workflow: str, inputs: dict[str, Any], env: dict[str, str]) -> Any:
    """arazzo-runner's run of `workflow` in `document` (its source description beside it)."""
    from arazzo_runner import ArazzoRunner

    logging.getLogger("arazzo-runner").setLevel(logging.ERROR)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return ArazzoRunner.from_arazzo_path(str(document)).execute_workflow(workflow, inputs)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _round_trip(package: Path, exported: Path, tmp_path: Path, source: str) -> None:
    """The export is valid Arazzo, and importing it and exporting again gives the same bytes."""
    assert problems(yaml.safe_load(exported.read_text())) == []
    again_pkg = tmp_path / "again" / package.name
    again_pkg.parent.mkdir()
    subprocess.run(["cp", "-r", str(package), str(again_pkg)], check=True)
    (again_pkg / "workflows.yaml").unlink()
    imported = _cli("workflow", "import", str(exported), str(again_pkg))
    assert imported.returncode == 0, imported.stderr
    second = tmp_path / "again.arazzo.yaml"
    out = _cli("workflow", "export", str(again_pkg), "--source-url", source, "--out", str(second))
    assert out.returncode == 0, out.stderr
    assert second.read_bytes() == exported.read_bytes()


def _imported(
    tmp_path: Path,
    spec: dict[str, Any],
    urls: tuple[str, str],
    document: dict[str, Any],
    identities: Mapping[str, list[str]] | None = None,
) -> Path:
    """A package derived from `spec` served at ours (`urls[0]`), with `document` imported; the
    same spec at theirs (`urls[1]`) written beside as theirs.openapi.json for the oracle.
    `identities`: the fields that make two of an operation's writes the same, written into its
    file as a person confirming the guess would (a retry of a write needs one)."""
    for url, name in zip(urls, ("ours", "theirs"), strict=True):
        (tmp_path / f"{name}.openapi.json").write_text(
            json.dumps(dict(spec, servers=[{"url": url}]))
        )
    package = tmp_path / "pkg" / "derived"
    derived = _cli("derive", str(tmp_path / "ours.openapi.json"), "--out", str(package))
    assert derived.returncode == 0, derived.stderr
    for operation, fields in (identities or {}).items():
        op = package / "references" / f"{operation}.md"
        op = op if op.exists() else package / f"{operation}.md"
        text = op.read_text()
        op.write_text(text.replace("---\n", f"---\nidentity: {json.dumps(fields)}\n", 1))
    source = tmp_path / "document.arazzo.json"
    source.write_text(json.dumps(document))
    imported = _cli("workflow", "import", str(source), str(package))
    assert imported.returncode == 0, imported.stderr
    return package


def _exported(package: Path, tmp_path: Path) -> Path:
    """The package's workflows exported, their source description theirs.openapi.json."""
    exported = tmp_path / "theirs.arazzo.yaml"
    out = _cli("workflow", "export", str(package), "--source-url", THEIRS, "--out", str(exported))
    assert out.returncode == 0, out.stderr
    return exported


THEIRS = "./theirs.openapi.json"
FORM = "application/x-www-form-urlencoded"


# --- the guesthouse: availability, then a booking only when the room is free ----------------


def _guesthouse_package(tmp_path: Path, server: GuesthouseServer, name: str) -> Path:
    """Hollowbrook derived from its OpenAPI document (so skill.json knows the spec's
    operationIds), with the example's workflows."""
    spec = tmp_path / f"{name}.openapi.yaml"
    text = (EXAMPLES / "hollowbrook.yaml").read_text()
    spec.write_text(text.replace("http://hollowbrook.localhost:8084", server.url))
    package = tmp_path / name / "hollowbrook"
    derived = _cli("derive", str(spec), "--out", str(package), "--slug", "hollowbrook")
    assert derived.returncode == 0, derived.stderr
    # the example's workflow, less the fields the spec's NewBooking does not have
    flows = yaml.safe_load((EXAMPLES / "hollowbrook-skill" / "workflows.yaml").read_text())
    flow = flows["workflows"][0]
    del flow["parameters"]["properties"]["guests"]
    book = flow["steps"][1]["then"][0]
    del book["args"]["guests"], book["args"]["notes"]
    (package / "workflows.yaml").write_text(yaml.safe_dump(flows, sort_keys=False))
    return package


def _sent_to(server: GuesthouseServer) -> list[Sent]:
    return [
        (s.method, s.path, s.query, json.loads(s.body) if s.body else None)
        for s in server.house.seen
    ]


STAY = {
    "room_id": "oak",
    "guest_name": "Ada Lovelace",
    "arrival": "2026-12-24",
    "departure": "2026-12-27",
}


def test_arazzo_runner_runs_the_booking_export_and_sends_what_skillpress_sends(
    tmp_path: Path,
) -> None:
    line = f"/book_room {json.dumps(STAY)}"
    env = {"HOLLOWBROOK_API_KEY": KEY, "SKILLPRESS_HOME": str(tmp_path / "home")}
    with GuesthouseServer() as ours, GuesthouseServer() as theirs:
        package = _guesthouse_package(tmp_path, ours, "ours")
        first = _cli("run", str(package), line, "--unsafe", "--approve", "--json", env=env)
        assert first.returncode == 0, first.stderr
        taken = _cli("run", str(package), line, "--unsafe", "--approve", env=env)
        assert taken.returncode == 1 and "oak is taken" in taken.stderr

        exported = tmp_path / "theirs.arazzo.yaml"
        source = "./theirs.openapi.yaml"
        _guesthouse_package(tmp_path, theirs, "theirs")  # writes theirs.openapi.yaml
        out = _cli(
            "workflow", "export", str(package), "--source-url", source, "--out", str(exported)
        )
        assert out.returncode == 0, out.stderr
        steps = yaml.safe_load(exported.read_text())["workflows"][0]["steps"]
        # named by the spec's own operationIds, which a runner finds in the source description
        assert [s["operationId"] for s in steps] == ["checkAvailability", "createBooking"]
        # arazzo-runner reads the key from HOLLOWBROOK_APIKEY (its name for the apiKey scheme)
        booked = _oracle(exported, "book_room", STAY, {"HOLLOWBROOK_APIKEY": KEY})
        assert booked.outputs == {"booking_id": "bk-1", "total_pence": 28500}, booked
        refused = _oracle(exported, "book_room", STAY, {"HOLLOWBROOK_APIKEY": KEY})
        assert refused.outputs == {"booking_id": None, "total_pence": None}
        # the same requests in the same order: a booking when free, only the check when taken
        assert _sent_to(theirs) == _sent_to(ours)
        assert [(m, p) for m, p, _, _ in _sent_to(ours)] == [
            ("GET", "/rooms/oak/availability"),
            ("POST", "/bookings"),
            ("GET", "/rooms/oak/availability"),
        ]
        _round_trip(package, exported, tmp_path, source)


def _body_op(
    op_id: str,
    fields: dict[str, str],
    required: list[str],
    media: str = "application/json",
    parameters: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """An OpenAPI POST operation taking a body of `fields` (name → type)."""
    schema = {
        "type": "object",
        "required": required,
        "properties": {k: {"type": t} for k, t in fields.items()},
    }
    return {
        "operationId": op_id,
        **({"parameters": list(parameters)} if parameters else {}),
        "requestBody": {"required": True, "content": {media: {"schema": schema}}},
        "responses": {"200": {"description": "its answer"}},
    }


def _spec(title: str, paths: dict[str, Any]) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": title, "version": "1.0.0"}, "paths": paths}


# --- pet adoption, as in the specification's example -----------------------------------------

PETS_SPEC = _spec(
    "Pet adoptions",
    {
        "/pets": {
            "get": {
                "operationId": "findPetsByStatus",
                "parameters": [
                    {
                        "name": "status",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {"200": {"description": "the pets with that status"}},
            }
        },
        "/pets/{petId}/adoptions": {
            "post": _body_op(
                "adoptPet",
                {"adopter": "string", "note": "string"},
                ["adopter"],
                parameters=(
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}},
                ),
            )
        },
    },
)

# camelCase ids, a qualified operationId, a simple condition on a saved value, workflow
# outputs that no `end` carries (the way that runs off the last step answers them), inputs and
# a parameter from `components`, and a step with two outputs, one a pointer into the answer
ADOPTION = {
    "arazzo": "1.0.1",
    "info": {"title": "Adopt a pet", "version": "1.0.0"},
    "sourceDescriptions": [{"name": "petstore", "url": "./pets.openapi.json", "type": "openapi"}],
    "workflows": [
        {
            "workflowId": "adoptPet",
            "summary": "Adopt the first pet of a status, when it may be adopted.",
            "inputs": {"$ref": "#/components/inputs/adopting"},
            "steps": [
                {
                    "stepId": "findPets",
                    "operationId": "$sourceDescriptions.petstore.findPetsByStatus",
                    "parameters": [{"reference": "$components.parameters.byStatus"}],
                    "successCriteria": [{"condition": "$statusCode < 400"}],
                    "outputs": {"pets": "$response.body"},
                    "onSuccess": [
                        {
                            "name": "adoptable",
                            "type": "goto",
                            "stepId": "adopt-pet",
                            "criteria": [
                                {"condition": "$steps.findPets.outputs.pets.0.adoptable == true"}
                            ],
                        },
                        {"name": "noneAdoptable", "type": "end"},
                    ],
                },
                {
                    "stepId": "adopt-pet",
                    "operationId": "adoptPet",
                    "parameters": [
                        {
                            "name": "petId",
                            "in": "path",
                            "value": "$steps.findPets.outputs.pets.0.id",
                        }
                    ],
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {
                            "adopter": "$inputs.adopter",
                            "note": "adopted by {$inputs.adopter}",
                        },
                    },
                    "successCriteria": [{"condition": "$statusCode < 400"}],
                    "outputs": {"adoption": "$response.body", "adoptionId": "$response.body#/id"},
                },
            ],
            "outputs": {"adoptionId": "$steps.adopt-pet.outputs.adoptionId"},
        }
    ],
    "components": {
        "inputs": {
            "adopting": {
                "type": "object",
                "properties": {"status": {"type": "string"}, "adopter": {"type": "string"}},
                "required": ["status", "adopter"],
            }
        },
        "parameters": {"byStatus": {"name": "status", "in": "query", "value": "$inputs.status"}},
    },
}


class _Shelter:
    """`GET /pets?status=` answers the pets of that status (`calm` ones may be adopted, `shy`
    ones not); `POST /pets/{id}/adoptions` answers 201 with an adoption id."""

    def __init__(self) -> None:
        self.api = FakeApi(self.answer)
        self.url = self.api.url

    @property
    def seen(self) -> list[Sent]:
        return [self.sent(r) for r in self.api.seen]

    def sent(self, request: Seen) -> Sent:
        """What a request is kept as: its method, path, query and JSON body."""
        return (
            request.method,
            request.route,
            parse_qs(urlsplit(request.path).query),
            _json(request),
        )

    def answer(self, request: Seen) -> Reply:
        if request.method == "GET":
            status = request.query.get("status", [""])[0]
            return Reply(200, [{"id": f"{status}-1", "adoptable": status == "calm"}])
        pet = request.route.split("/")[2]
        return Reply(201, {"id": f"adoption-of-{pet}", "pet": pet})


def _json(request: Seen) -> Any:
    return request.json() if request.body else None


@pytest.fixture
def shelters() -> Iterator[tuple[_Shelter, _Shelter]]:
    ours, theirs = _Shelter(), _Shelter()
    yield ours, theirs
    for s in (ours, theirs):
        s.api.close()


def test_a_pet_adoption_document_imports_runs_and_runs_the_same_in_arazzo_runner(
    tmp_path: Path, shelters: tuple[_Shelter, _Shelter]
) -> None:
    ours, theirs = shelters
    env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
    package = _imported(tmp_path, PETS_SPEC, (ours.url, theirs.url), ADOPTION)
    flows = yaml.safe_load((package / "workflows.yaml").read_text())["workflows"]
    assert flows[0]["name"] == "adoptPet" and [s["id"] for s in flows[0]["steps"]] == [
        "findPets",
        "adoptable",
    ]

    for status in ("calm", "shy"):
        given = {"status": status, "adopter": "Ada"}
        done = _cli(
            "run", str(package), f"/adoptPet {json.dumps(given)}", "--unsafe", "--json", env=env
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == (
            {"adoptionId": "adoption-of-calm-1"}
            if status == "calm"
            else [{"id": "shy-1", "adoptable": False}]
        )

    exported = _exported(package, tmp_path)
    for status in ("calm", "shy"):
        ran = _oracle(exported, "adoptPet", {"status": status, "adopter": "Ada"}, {})
        assert ran.error is None, ran
    assert theirs.seen == ours.seen
    assert [(m, p) for m, p, _, _ in ours.seen] == [
        ("GET", "/pets"),
        ("POST", "/pets/calm-1/adoptions"),
        ("GET", "/pets"),
    ]
    assert ours.seen[1][3] == {"adopter": "Ada", "note": "adopted by Ada"}
    # (arazzo-runner 0.9.6 itself does not resolve a parameter given by `reference`: it runs
    # the export, where every value is inline)
    _round_trip(package, exported, tmp_path, THEIRS)


# --- buy now, pay later, as in the specification's example ------------------------------------

BNPL_SPEC = _spec(
    "Pay later",
    {
        "/eligibility-checks": {
            "post": _body_op(
                "checkEligibility",
                {"customer": "string", "amount": "integer"},
                ["customer", "amount"],
            )
        },
        "/applications": {
            "post": _body_op(
                "createApplication", {"customer": "string", "plan": "string"}, ["customer", "plan"]
            )
        },
        "/declines": {"post": _body_op("recordDecline", {"customer": "string"}, ["customer"])},
        "/notifications": {
            "post": _body_op("notifyCustomer", {"customer": "string"}, ["customer"])
        },
    },
)

# success on one exact status and tests of the answer's body (a comparison, a regex), a branch
# on a value the step saved, a retry, kebab-case ids, inputs and an action from
# `components`, and a diamond: both ways (an application, or a decline recorded) meet at notify
BNPL = {
    "arazzo": "1.0.1",
    "info": {"title": "Apply for pay later", "version": "1.0.0"},
    "sourceDescriptions": [{"name": "bnpl", "url": "./bnpl.openapi.json", "type": "openapi"}],
    "workflows": [
        {
            "workflowId": "apply-pay-later",
            "inputs": {"$ref": "#/components/inputs/applicant"},
            "steps": [
                {
                    "stepId": "check-eligibility",
                    "operationId": "checkEligibility",
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {"customer": "$inputs.customer", "amount": "$inputs.amount"},
                    },
                    "successCriteria": [
                        {"condition": "$statusCode == 200"},
                        {"condition": "$response.body#/eligible != null"},
                    ],
                    "outputs": {"eligibility": "$response.body"},
                    "onSuccess": [
                        {
                            "name": "eligible",
                            "type": "goto",
                            "stepId": "create-application",
                            "criteria": [
                                # a jsonpath `$.eligible` would hold for `false` too (a presence
                                # test, in arazzo-runner as here): the value itself is the test
                                {
                                    "condition": "$steps.check-eligibility.outputs.eligibility.eligible == true"
                                }
                            ],
                        },
                        {"reference": "$components.successActions.declined"},
                    ],
                },
                {
                    "stepId": "create-application",
                    "operationId": "createApplication",
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {
                            "customer": "$inputs.customer",
                            "plan": "$steps.check-eligibility.outputs.eligibility.plan",
                        },
                    },
                    "successCriteria": [
                        {"condition": "$statusCode == 201"},
                        {"context": "$response.body#/id", "condition": "^app-", "type": "regex"},
                    ],
                    "onFailure": [
                        {"name": "again", "type": "retry", "retryAfter": 0, "retryLimit": 1}
                    ],
                    "outputs": {"application": "$response.body"},
                    "onSuccess": [{"name": "toNotify", "type": "goto", "stepId": "notify"}],
                },
                {
                    "stepId": "record-decline",
                    "operationId": "recordDecline",
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {"customer": "$inputs.customer"},
                    },
                    "successCriteria": [{"condition": "$statusCode == 201"}],
                },
                {
                    "stepId": "notify",
                    "operationId": "notifyCustomer",
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {"customer": "$inputs.customer"},
                    },
                    "successCriteria": [{"condition": "$statusCode == 202"}],
                },
            ],
            "outputs": {"applicationId": "$steps.create-application.outputs.application.id"},
        }
    ],
    "components": {
        "inputs": {
            "applicant": {
                "type": "object",
                "properties": {"customer": {"type": "string"}, "amount": {"type": "integer"}},
                "required": ["customer", "amount"],
            }
        },
        "successActions": {
            "declined": {"name": "notEligible", "type": "goto", "stepId": "record-decline"}
        },
    },
}


class _Lender(_Shelter):
    """`POST /eligibility-checks`: eligible (plan `p3`) under 500; `POST /applications`: 201."""

    def answer(self, request: Seen) -> Reply:
        if request.method == "GET":
            return super().answer(request)
        body = _json(request)
        if request.route == "/eligibility-checks":
            ok = int(body["amount"]) < 500
            return Reply(200, {"eligible": ok, "plan": "p3" if ok else None})
        if request.route == "/declines":
            return Reply(201, {"id": f"decline-{body['customer']}"})
        if request.route == "/notifications":
            return Reply(202, {"sent": True})
        return Reply(201, {"id": f"app-{body['customer']}", "plan": body["plan"]})


def test_a_pay_later_application_imports_runs_and_runs_the_same_in_arazzo_runner(
    tmp_path: Path,
) -> None:
    ours, theirs = _Lender(), _Lender()
    try:
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        package = _imported(
            tmp_path,
            BNPL_SPEC,
            (ours.url, theirs.url),
            BNPL,
            {"create_application": ["customer", "plan"]},
        )
        (flow,) = yaml.safe_load((package / "workflows.yaml").read_text())["workflows"]
        assert flow["steps"][0]["success"] == [
            "$statusCode == 200",
            "$response.body#/eligible != null",
        ]
        assert flow["steps"][1]["then"][0]["success"] == [
            "$statusCode == 201",
            {"context": "$response.body#/id", "regex": "^app-"},
        ]
        assert flow["steps"][1]["if"] == "eligibility.eligible"
        assert flow["steps"][1]["then"][0]["retry"] == {"limit": 1, "after": 0}
        # the diamond: each way once, and where they meet once, after them
        assert [s["id"] for s in flow["steps"][1]["else"]] == ["record-decline"]
        assert [s["id"] for s in flow["steps"]] == ["check-eligibility", "eligible", "notify"]
        for amount in (120, 900):
            given = {"customer": "ada", "amount": amount}
            line = f"/apply-pay-later {json.dumps(given)}"
            done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
            assert done.returncode == 0, done.stderr
        exported = _exported(package, tmp_path)
        for amount in (120, 900):
            ran = _oracle(exported, "apply-pay-later", {"customer": "ada", "amount": amount}, {})
            assert ran.error is None, ran
        assert theirs.seen == ours.seen
        assert [(m, p) for m, p, _, _ in ours.seen] == [
            ("POST", "/eligibility-checks"),
            ("POST", "/applications"),
            ("POST", "/notifications"),
            ("POST", "/eligibility-checks"),
            ("POST", "/declines"),
            ("POST", "/notifications"),
        ]
        assert ours.seen[1][3] == {"customer": "ada", "plan": "p3"}
        _round_trip(package, exported, tmp_path, THEIRS)
    finally:
        for lender in (ours, theirs):
            lender.api.close()


# --- an OAuth 2 token, then a call that presents it (with a header parameter), as in the
# specification's OAuth example ---

OAUTH_SPEC = _spec(
    "Token service",
    {
        "/oauth/token": {
            "post": _body_op(
                "getToken",
                {"grant_type": "string", "client_id": "string", "scope": "string"},
                ["grant_type", "client_id"],
                FORM,
            )
        },
        "/oauth/introspect": {
            "post": _body_op(
                "introspectToken",
                {"token": "string"},
                ["token"],
                FORM,
                parameters=(
                    {
                        "name": "X-Client-Id",
                        "in": "header",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ),
            )
        },
    },
)

OAUTH = {
    "arazzo": "1.0.1",
    "info": {"title": "Get a token and check it", "version": "1.0.0"},
    "sourceDescriptions": [{"name": "auth", "url": "./auth.openapi.json", "type": "openapi"}],
    "workflows": [
        {
            "workflowId": "tokenAndIntrospect",
            "inputs": {
                "type": "object",
                "properties": {"clientId": {"type": "string"}, "scope": {"type": "string"}},
                "required": ["clientId", "scope"],
            },
            "steps": [
                {
                    "stepId": "getToken",
                    "operationId": "getToken",
                    "requestBody": {
                        "contentType": "application/x-www-form-urlencoded",
                        "payload": {
                            "grant_type": "client_credentials",
                            "client_id": "$inputs.clientId",
                            "scope": "$inputs.scope",
                        },
                    },
                    "successCriteria": [{"condition": "$statusCode == 200"}],
                    "outputs": {"tokenResponse": "$response.body"},
                },
                {
                    "stepId": "introspect",
                    "operationId": "introspectToken",
                    "parameters": [
                        {"name": "X-Client-Id", "in": "header", "value": "$inputs.clientId"}
                    ],
                    "requestBody": {
                        "contentType": "application/x-www-form-urlencoded",
                        "payload": {"token": "$steps.getToken.outputs.tokenResponse.access_token"},
                    },
                    "successCriteria": [{"condition": "$statusCode == 200"}],
                    "outputs": {"introspection": "$response.body"},
                },
            ],
            "outputs": {"active": "$steps.introspect.outputs.introspection.active"},
        }
    ],
}


class _Issuer(_Shelter):
    """`POST /oauth/token` (a form) answers a token for the client; `POST /oauth/introspect`
    says whether a token is one it issued."""

    def sent(self, request: Seen) -> Sent:
        client = request.header("X-Client-Id")  # a header parameter, kept with the query
        return (
            request.method,
            request.path,
            {"X-Client-Id": [client]} if client else {},
            _form(request),
        )

    def answer(self, request: Seen) -> Reply:
        if request.method == "GET":
            return super().answer(request)
        form = _form(request)
        if request.path == "/oauth/token":
            return Reply(200, {"access_token": f"tok-{form['client_id']}", "expires_in": 60})
        return Reply(200, {"active": form.get("token", "").startswith("tok-")})


def _form(request: Seen) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.body.decode()).items()}


def test_an_oauth_token_flow_imports_runs_and_runs_the_same_in_arazzo_runner(
    tmp_path: Path,
) -> None:
    ours, theirs = _Issuer(), _Issuer()
    try:
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        package = _imported(tmp_path, OAUTH_SPEC, (ours.url, theirs.url), OAUTH)
        given = {"clientId": "app-1", "scope": "read"}
        line = f"/tokenAndIntrospect {json.dumps(given)}"
        done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"active": True}
        # the run's record keeps the token the first answer held redacted
        runs = _cli("runs", "--show", "1", "--json", env=env)
        assert runs.returncode == 0, runs.stderr
        record = json.loads(runs.stdout)
        assert record["steps"][0]["answer"] == {"access_token": "[redacted]", "expires_in": 60}
        assert record["steps"][1]["request"]["body"] == "token=%5Bredacted%5D"
        assert "tok-app-1" not in runs.stdout
        exported = _exported(package, tmp_path)
        ran = _oracle(exported, "tokenAndIntrospect", given, {})
        assert ran.error is None and ran.outputs == {"active": True}, ran
        assert theirs.seen == ours.seen
        assert ours.seen == [
            (
                "POST",
                "/oauth/token",
                {},
                {"grant_type": "client_credentials", "client_id": "app-1", "scope": "read"},
            ),
            ("POST", "/oauth/introspect", {"X-Client-Id": ["app-1"]}, {"token": "tok-app-1"}),
        ]
        _round_trip(package, exported, tmp_path, THEIRS)
    finally:
        for issuer in (ours, theirs):
            issuer.api.close()


# --- the specification's own OAuth example, as published --------------------------------------

PUBLISHED = Path(__file__).parents[1] / "fixtures" / "arazzo"


class _Authority(_Shelter):
    """`GET /authorize` answers a code (and, as the example's criteria want, a token);
    `POST /oauth/token` (a form) answers tokens by grant type."""

    def sent(self, request: Seen) -> Sent:
        if request.method == "GET":
            return (request.method, request.route, parse_qs(urlsplit(request.path).query), None)
        return (request.method, request.path, {}, _form(request))

    def answer(self, request: Seen) -> Reply:
        if request.method == "GET":
            client = parse_qs(urlsplit(request.path).query)["client_id"][0]
            return Reply(200, {"code": f"code-{client}", "access_token": "pre"})
        grant = _form(request)["grant_type"]
        refresh = {"refresh_token": f"r-{grant}", "expires_in": 3600}
        return Reply(200, {"access_token": f"t-{grant}", **refresh})


def _published_spec(url: str, refresh_token: bool) -> str:
    text = (PUBLISHED / "oauth.openapi.yaml").read_text()
    text = text.replace("https://auth.example.com", url)
    if refresh_token:  # the field the document sends and the published spec leaves out
        text = text.replace(
            "                client_secret:\n                  type: string\n",
            "                client_secret:\n                  type: string\n"
            "                refresh_token:\n                  type: string\n",
        )
    return text


def _oauth_imported(tmp_path: Path, url: str, document: Path) -> Path:
    """The oauth spec (with the field the document sends) derived, `document` imported into it."""
    spec = tmp_path / "ours.openapi.yaml"
    spec.write_text(_published_spec(url, refresh_token=True))
    package = tmp_path / "pkg" / "auth"
    assert _cli("derive", str(spec), "--out", str(package)).returncode == 0
    imported = _cli("workflow", "import", str(document), str(package))
    assert imported.returncode == 0, imported.stderr
    return package


def test_the_specifications_oauth_example_imports_whole_and_runs_as_arazzo_runner_runs_it(
    tmp_path: Path,
) -> None:
    ours, theirs = _Authority(), _Authority()
    try:
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        document = PUBLISHED / "oauth.arazzo.yaml"
        as_published = tmp_path / "published.openapi.yaml"
        as_published.write_text(_published_spec(ours.url, refresh_token=False))
        first = tmp_path / "first" / "auth"
        assert _cli("derive", str(as_published), "--out", str(first)).returncode == 0
        refused = _cli("workflow", "import", str(document), str(first))
        # the one thing wrong with the document, in one answer: a field its spec does not have
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "error: refresh-token-flow step do-the-refresh: get_token takes no argument"
            " 'refresh_token' (it takes client_id, client_secret, code, grant_type, redirect_uri)"
        )
        package = _oauth_imported(tmp_path, ours.url, document)
        given = {"my_client_id": "app", "my_client_secret": "s3", "my_redirect_uri": "https://cb"}
        line = f"/refresh-token-flow {json.dumps(given)}"
        done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "access_token": "t-refresh_token",
            "refresh_token": "r-refresh_token",
            "expires_in": 3600,
        }
        # arazzo-runner runs the export: it cannot run the document as published, whose
        # criterion `$.access_token != null` its JSONPath parser refuses (a parse error at
        # `!=`); the export writes it as the simple condition `$response.body#/access_token
        # != null`, which it reads
        (tmp_path / "theirs.openapi.json").write_text(
            json.dumps(yaml.safe_load(_published_spec(theirs.url, refresh_token=True)))
        )
        exported = _exported(package, tmp_path)
        ran = _oracle(exported, "refresh-token-flow", given, {})
        assert ran.error is None, ran
        assert theirs.seen == ours.seen
        assert [(m, p) for m, p, _, _ in ours.seen] == [
            ("GET", "/authorize"),
            ("POST", "/oauth/token"),
            ("POST", "/oauth/token"),
        ]
        assert ours.seen[2][3] == {
            "grant_type": "refresh_token",
            "refresh_token": "r-authorization_code",
        }
        exported = _exported(package, tmp_path)
        _round_trip(package, exported, tmp_path, THEIRS)
    finally:
        for authority in (ours, theirs):
            authority.api.close()


def test_the_oauth_example_as_upstream_writes_it_now_imports_and_runs(tmp_path: Path) -> None:
    """#56.1: the OAI's oauth example now tests its token answers with an RFC 9535 filter,
    `$[?@.access_token != null]` (upstream removed the `$.access_token != null` form this
    repository's copy has): imported unedited, evaluated by an RFC 9535 implementation, it runs
    as the older form does."""
    ours = _Authority()
    try:
        text = (PUBLISHED / "oauth.arazzo.yaml").read_text()
        assert text.count("condition: $.access_token != null") == 4
        document = tmp_path / "oauth-now.arazzo.yaml"
        document.write_text(
            text.replace(
                "condition: $.access_token != null", "condition: $[?@.access_token != null]"
            )
        )
        package = _oauth_imported(tmp_path, ours.url, document)
        flows = yaml.safe_load((package / "workflows.yaml").read_text())["workflows"]
        said = json.dumps(flows)
        assert "$[?@.access_token != null]" in said, said[:2000]
        given = {"my_client_id": "app", "my_client_secret": "s3", "my_redirect_uri": "https://cb"}
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        line = f"/refresh-token-flow {json.dumps(given)}"
        done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["access_token"] == "t-refresh_token"
    finally:
        ours.api.close()


def _fapi_authority(seen: Seen) -> Reply:
    """An authorization server as the FAPI-PAR document's steps expect it to answer."""
    answers = {
        "/as/par.oauth2": Reply(200, {"request_uri": "urn:par:1", "expires_in": 60}),
        "/as/authorize.oauth2": Reply(302, {"code": "code-1"}),
        "/as/token.oauth2": Reply(200, {"access_token": "tok-1", "token_type": "Bearer"}),
    }
    return answers.get(seen.route, Reply(404, {}))


def test_the_fapi_par_example_imports_unedited_and_runs_as_arazzo_runner_runs_its_export(
    tmp_path: Path,
) -> None:
    """#56: the OAI FAPI-PAR example as published imports in one go. Two things in it are said,
    not refused: its `TokenRequestBody` input, which no step reads (the token step writes its
    body from the other inputs), is kept as declared; its first step names the operation `PAR`
    where the source's operationId is `Par`. A run sends the three requests the document
    describes. arazzo-runner cannot run the document as published: it reads no qualified
    operationId (`$sourceDescriptions.auth-api.Token`, which Arazzo 1.0 defines, is looked
    for as an operationId of that spelling) and would find no `PAR` besides; it logs each step
    as not found and reports the workflow complete having sent nothing. It runs the export
    (plain operationIds, `Par`) against its own server and sends the same three."""
    ours, theirs = FakeApi(_fapi_authority), FakeApi(_fapi_authority)
    try:
        spec = (PUBLISHED / "FAPI-PAR.openapi.yaml").read_bytes().decode()  # CRLF, as published
        served = {
            name: spec.replace("https://api.uat.example.com/", f"{api.url}/")
            for name, api in (("ours", ours), ("theirs", theirs))
        }
        (tmp_path / "ours.openapi.yaml").write_text(served["ours"], newline="")
        (tmp_path / "theirs.openapi.json").write_text(json.dumps(yaml.safe_load(served["theirs"])))
        package = tmp_path / "pkg" / "fapi-par"
        derived = _cli("derive", str(tmp_path / "ours.openapi.yaml"), "--out", str(package))
        assert derived.returncode == 0, derived.stderr
        imported = _cli("workflow", "import", str(PUBLISHED / "FAPI-PAR.arazzo.yaml"), str(package))
        assert imported.returncode == 0, imported.stderr
        notes = [line for line in imported.stderr.splitlines() if line.startswith("note: ")]
        assert notes == [
            "note: OIDC-PAR-AuthzCode step PARStep: operationId 'PAR' is no operationId of the"
            " source; taken as 'Par', which the export writes",
            "note: OIDC-PAR-AuthzCode input TokenRequestBody: no step reads it; kept as the"
            " document declares it (a run takes it and sends none of it)",
        ]
        written = (package / "workflows.yaml").read_text()
        assert all(f"# {note.removeprefix('note: ')}\n" in written for note in notes)
        assertion = {"iss": "app", "sub": "app", "aud": "as", "exp": "1", "iat": "0", "jti": "j"}
        given = {
            "client_id": "app",
            "client_assertion": assertion,
            "redirect_uri": "https://cb",
            "code_verifier": "v-1",
            "PARrequestBody": {"response_type": "code", "client_id": "app", "scope": "openid"},
            "TokenRequestBody": {
                "grant_type": "unused",
                "code": "x",
                "redirect_uri": "x",
                "code_verifier": "x",
            },
        }
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        line = f"/OIDC-PAR-AuthzCode {json.dumps(given)}"
        done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "access_token": {"access_token": "tok-1", "token_type": "Bearer"}
        }
        # the document as published: arazzo-runner finds none of its operations, sends nothing
        as_published = tmp_path / "published"
        as_published.mkdir()
        (as_published / "FAPI-PAR.arazzo.yaml").write_bytes(
            (PUBLISHED / "FAPI-PAR.arazzo.yaml").read_bytes()
        )
        (as_published / "FAPI-PAR.openapi.yaml").write_text(served["theirs"], newline="")
        _oracle(as_published / "FAPI-PAR.arazzo.yaml", "OIDC-PAR-AuthzCode", given, {})
        assert theirs.seen == []
        exported = _exported(package, tmp_path)
        ran = _oracle(exported, "OIDC-PAR-AuthzCode", given, {})
        assert ran.error is None, ran
        token = json.dumps(assertion, separators=(",", ":"))
        jwt = ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
        sent = [(s.method, s.route, s.query, s.json() if s.body else None) for s in ours.seen]
        assert sent == [
            (
                "POST",
                "/as/par.oauth2",
                {"client_id": ["app"], "client_assertion_type": jwt, "client_assertion": [token]},
                {"response_type": "code", "client_id": "app", "scope": "openid"},
            ),
            (
                "GET",
                "/as/authorize.oauth2",
                {"request_uri": ["urn:par:1"], "client_id": ["app"]},
                None,
            ),
            (
                "POST",
                "/as/token.oauth2",
                {"client_id": ["app"], "client_assertion_type": jwt, "client_assertion": [token]},
                {
                    "grant_type": "authorization_code",
                    "code": "code-1",
                    "redirect_uri": "https://cb",
                    "code_verifier": "v-1",
                },
            ),
        ]
        # the same requests in the same order, but for `client_assertion`: a query parameter
        # with `content: application/json` is that JSON's text (OpenAPI 3's rule, as sent
        # here); arazzo-runner's serializer does not read a parameter's `content` and sends
        # the object's keys
        theirs_sent = [
            (s.method, s.route, s.query, s.json() if s.body else None) for s in theirs.seen
        ]
        for q in (theirs_sent[0][2], theirs_sent[2][2]):
            assert q.pop("client_assertion") == list(assertion)
        for q in (sent[0][2], sent[2][2]):
            q.pop("client_assertion")
        assert theirs_sent == sent
        _round_trip(package, exported, tmp_path, THEIRS)
    finally:
        ours.close()
        theirs.close()


def test_the_museum_tickets_example_imports_unedited_and_never_sends_the_documents_credential(
    tmp_path: Path,
) -> None:
    """#56: Redocly's museum tickets as published gives every step `Authorization: Basic Og==`
    as a workflow parameter. That header is the skill's credential: import says so and leaves
    the parameter out, and a run sends the operator's credential (MUSEUM_API_KEY), never the
    document's value. arazzo-runner, running the document as published against its own
    server, sends the same request with no `Authorization` at all (it reads no workflow-level
    `parameters`)."""
    ticket = {"ticketId": "t-1", "ticketType": "general"}
    ours, theirs = (FakeApi(lambda _: Reply(201, ticket)) for _ in range(2))
    try:
        spec = (PUBLISHED / "museum.openapi.yaml").read_text()
        served = {
            name: spec.replace("https://api.fake-museum-example.com/v1.1", f"{api.url}/v1.1")
            for name, api in (("ours", ours), ("theirs", theirs))
        }
        (tmp_path / "ours.openapi.yaml").write_text(served["ours"])
        package = tmp_path / "pkg" / "museum"
        derived = _cli("derive", str(tmp_path / "ours.openapi.yaml"), "--out", str(package))
        assert derived.returncode == 0, derived.stderr
        document = PUBLISHED / "museum-tickets.arazzo.yaml"
        imported = _cli("workflow", "import", str(document), str(package))
        assert imported.returncode == 0, imported.stderr
        assert [line for line in imported.stderr.splitlines() if line.startswith("note: ")] == [
            "note: get-museum-tickets's parameters: header 'Authorization' is museum's"
            " credential, which every call carries from MUSEUM_API_KEY: the value the document"
            " gives is not sent"
        ]
        assert "Og==" not in (package / "workflows.yaml").read_text()
        env = {"SKILLPRESS_HOME": str(tmp_path / "home"), "MUSEUM_API_KEY": "ops:s3cret"}
        done = _cli("run", str(package), "/get-museum-tickets {}", "--unsafe", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"ticketId": "t-1"}
        # the published document beside its spec, where its source description says (../)
        (tmp_path / "published" / "arazzo").mkdir(parents=True)
        (tmp_path / "published" / "openapi.yaml").write_text(served["theirs"])
        as_published = tmp_path / "published" / "arazzo" / "museum-tickets.arazzo.yaml"
        as_published.write_bytes(document.read_bytes())
        ran = _oracle(as_published, "get-museum-tickets", {}, {})
        assert ran.error is None and ran.outputs == {"ticketId": "t-1"}, ran
        body = {"ticketType": "general", "ticketDate": "2023-09-07", "email": "todd@example.com"}
        for api in (ours, theirs):
            [seen] = api.seen
            assert (seen.method, seen.route, seen.json()) == ("POST", "/v1.1/tickets", body)
        assert ours.seen[0].header("Authorization") == "Basic b3BzOnMzY3JldA=="  # ops:s3cret
        assert theirs.seen[0].header("Authorization") is None
    finally:
        ours.close()
        theirs.close()
