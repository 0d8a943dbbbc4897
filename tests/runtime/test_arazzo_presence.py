"""An Arazzo `jsonpath` test is a presence test (#56.5): a branch on `$.redirectAuthToken`, as the
specification's pay-later example writes it, goes its way whenever the answer carries the token,
whatever its value (a string here), as arazzo-runner takes it; the import keeps it a presence
test (never a boolean `if`, which stopped the run on the string "tok-1") and the export writes it
back as the same jsonpath test (never `== true`, which would change its meaning)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fake_api import Reply, Seen
from tests.runtime.test_arazzo_oracle import (
    THEIRS,
    _body_op,
    _cli,
    _exported,
    _imported,
    _json,
    _oracle,
    _round_trip,
    _Shelter,
    _spec,
)

# runs another project's runner (arazzo-runner) beside the command line
pytestmark = pytest.mark.integration


def _get(op_id: str, name: str, where: str) -> dict[str, Any]:
    return {
        "operationId": op_id,
        "parameters": [{"name": name, "in": where, "required": True, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "its answer"}},
    }


LOANS_SPEC = _spec(
    "Loans",
    {
        "/loan-transactions": {"post": _body_op("createLoan", {"amount": "integer"}, ["amount"])},
        "/auth": {"get": _get("getAuthorization", "redirectAuthToken", "query")},
        "/loan-transactions/{loanId}": {"get": _get("getLoan", "loanId", "path")},
    },
)

LOANS = {
    "arazzo": "1.0.1",
    "info": {"title": "Take a loan, authorized when the lender asks", "version": "1.0.0"},
    "sourceDescriptions": [{"name": "loans", "url": "./loans.openapi.json", "type": "openapi"}],
    "workflows": [
        {
            "workflowId": "take-loan",
            "inputs": {
                "type": "object",
                "properties": {"amount": {"type": "integer"}},
                "required": ["amount"],
            },
            "steps": [
                {
                    "stepId": "initiate",
                    "operationId": "createLoan",
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {"amount": "$inputs.amount"},
                    },
                    "successCriteria": [{"condition": "$statusCode == 200"}],
                    "outputs": {"loan": "$response.body"},
                    "onSuccess": [
                        {
                            "name": "authorizationRequired",
                            "type": "goto",
                            "stepId": "authorize",
                            "criteria": [
                                {
                                    "context": "$response.body",
                                    "condition": "$.redirectAuthToken",
                                    "type": "jsonpath",
                                }
                            ],
                        },
                        {"name": "authorizationNotRequired", "type": "goto", "stepId": "finalize"},
                    ],
                },
                {
                    "stepId": "authorize",
                    "operationId": "getAuthorization",
                    "parameters": [
                        {
                            "name": "redirectAuthToken",
                            "in": "query",
                            "value": "$steps.initiate.outputs.loan.redirectAuthToken",
                        }
                    ],
                    "successCriteria": [{"condition": "$statusCode == 200"}],
                },
                {
                    "stepId": "finalize",
                    "operationId": "getLoan",
                    "parameters": [
                        {
                            "name": "loanId",
                            "in": "path",
                            "value": "$steps.initiate.outputs.loan.loanId",
                        }
                    ],
                    "successCriteria": [{"condition": "$statusCode == 200"}],
                    "outputs": {"status": "$response.body.status"},
                },
            ],
            "outputs": {"status": "$steps.finalize.outputs.status"},
        }
    ],
}


class _Lender(_Shelter):
    """A loan of 500 or more answers a redirect token (a string) to authorize with."""

    def answer(self, request: Seen) -> Reply:
        if request.method == "POST":
            amount = int(_json(request)["amount"])
            token = {"redirectAuthToken": "tok-1"} if amount >= 500 else {}
            return Reply(200, {"loanId": f"L-{amount}", **token})
        if request.route == "/auth":
            return Reply(200, {"authorized": True})
        return Reply(200, {"status": "Finalised"})


def test_a_jsonpath_branch_is_a_presence_test_here_in_the_export_and_in_arazzo_runner(
    tmp_path: Path,
) -> None:
    ours, theirs = _Lender(), _Lender()
    try:
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        package = _imported(tmp_path, LOANS_SPEC, (ours.url, theirs.url), LOANS)
        (flow,) = yaml.safe_load((package / "workflows.yaml").read_text())["workflows"]
        branch = flow["steps"][1]
        assert branch["if"] == {"context": "loan", "jsonpath": "$.redirectAuthToken"}
        for amount in (900, 120):
            line = f"/take-loan {json.dumps({'amount': amount})}"
            done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout) == {"status": "Finalised"}
        assert [(m, p) for m, p, _, _ in ours.seen] == [
            ("POST", "/loan-transactions"),
            ("GET", "/auth"),  # the token is a string: present, so this way
            ("GET", "/loan-transactions/L-900"),
            ("POST", "/loan-transactions"),
            ("GET", "/loan-transactions/L-120"),
        ]
        assert ours.seen[1][2] == {"redirectAuthToken": ["tok-1"]}
        exported = _exported(package, tmp_path)
        steps = yaml.safe_load(exported.read_text())["workflows"][0]["steps"]
        assert steps[0]["onSuccess"][0]["criteria"] == [
            {
                "context": "$steps.initiate.outputs.loan",
                "condition": "$.redirectAuthToken",
                "type": "jsonpath",
            }
        ]
        for amount in (900, 120):
            ran = _oracle(exported, "take-loan", {"amount": amount}, {})
            assert ran.error is None, ran
        assert theirs.seen == ours.seen
        _round_trip(package, exported, tmp_path, THEIRS)
    finally:
        for lender in (ours, theirs):
            lender.api.close()
