"""Ways on as documents write them (#56.2): an `onSuccess` of several actions, each with several
criteria (`$statusCode == 200` beside a body test, `== false`, `!= null`, a jsonpath test), `end`
actions with criteria, and no way taken at all (the next step, as arazzo-runner goes on). The
OAI pay-later example's shape: imported unedited, run, and run the same by arazzo-runner from the
export (it reads no `$statusCode` or `$response` in an action's criteria); the export imports back
to the same bytes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.runtime.interop.arazzo import ArazzoRefused
from skillpress.runtime.interop.arazzo_in import from_arazzo
from skillpress.runtime.interop.arazzo_out import to_arazzo
from skillpress.runtime.package.model import Skill
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.if_tests import IfTest, if_tests
from skillpress.runtime.workflows.load import load_workflows
from tests.fake_api import Reply, Seen
from tests.runtime.test_arazzo_as_written import LOOK, MAKE, _doc, shop  # noqa: F401
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


def _get(op_id: str, params: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    return {
        "operationId": op_id,
        "parameters": [
            {"name": n, "in": where, "required": True, "schema": {"type": "string"}}
            for n, where in params
        ],
        "responses": {"200": {"description": "its answer"}},
    }


LENDER_SPEC = _spec(
    "Lender",
    {
        "/eligibility": {"post": _body_op("checkEligibility", {"amount": "integer"}, ["amount"])},
        "/terms": {"get": _get("getTerms")},
        "/customers": {"post": _body_op("createCustomer", {"name": "string"}, ["name"])},
        "/loans": {"post": _body_op("createLoan", {"amount": "integer"}, ["amount"])},
        "/auth": {"get": _get("authorize", (("token", "query"),))},
        "/loans/{loanId}": {"get": _get("getLoan", (("loanId", "path"),))},
    },
)

OK = [{"condition": "$statusCode == 200"}]


def _step(sid: str, op: str, **more: Any) -> dict[str, Any]:
    return {"stepId": sid, "operationId": op, "successCriteria": OK, **more}


def _way(name: str, criteria: list[dict[str, Any]], goto: str | None = None) -> dict[str, Any]:
    way: dict[str, Any] = {"name": name, "type": "goto" if goto else "end", "criteria": criteria}
    return {**way, "stepId": goto} if goto else way


AMOUNT = {"contentType": "application/json", "payload": {"amount": "$inputs.amount"}}
LENDER = {
    "arazzo": "1.0.1",
    "info": {"title": "A loan at checkout, the pay-later example's ways", "version": "1.0.0"},
    "sourceDescriptions": [{"name": "lender", "url": THEIRS, "type": "openapi"}],
    "workflows": [
        {
            "workflowId": "apply",
            "inputs": {
                "type": "object",
                "properties": {"amount": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["amount", "name"],
            },
            "steps": [
                _step(
                    "check",
                    "checkEligibility",
                    requestBody=AMOUNT,
                    outputs={"needsCheck": "$response.body#/checkRequired"},
                    onSuccess=[  # three ways, each with two criteria; none taken: terms next
                        _way(
                            "notEligible", [*OK, {"condition": "$response.body#/eligible == false"}]
                        ),
                        _way(
                            "productsFound",
                            [
                                *OK,
                                {
                                    "context": "$response.body",
                                    "type": "jsonpath",
                                    "condition": "$.products[0]",
                                },
                            ],
                            "terms",
                        ),
                        _way(
                            "noProducts", [*OK, {"condition": "$response.body#/products == null"}]
                        ),
                    ],
                ),
                _step(
                    "terms",
                    "getTerms",
                    onSuccess=[  # as bnpl writes it: the first way goes where none taken goes
                        _way(
                            "checkRequired",
                            [{"condition": "$steps.check.outputs.needsCheck == true"}],
                            "customer",
                        ),
                        _way(
                            "checkNotRequired",
                            [{"condition": "$steps.check.outputs.needsCheck == false"}],
                            "loan",
                        ),
                    ],
                ),
                {
                    "stepId": "customer",
                    "operationId": "createCustomer",
                    "requestBody": {
                        "contentType": "application/json",
                        "payload": {"name": "$inputs.name"},
                    },
                    # it succeeds on two statuses, and its ways test which (as bnpl's does)
                    "successCriteria": [{"condition": "$statusCode == 200 || $statusCode == 201"}],
                    "onSuccess": [
                        _way("customerEligible", [{"condition": "$statusCode == 201"}], "loan"),
                        _way("customerNotEligible", [{"condition": "$statusCode == 200"}]),
                    ],
                },
                _step(
                    "loan",
                    "createLoan",
                    requestBody=AMOUNT,
                    outputs={
                        "token": "$response.body#/redirectAuthToken",
                        "loanId": "$response.body#/loanId",
                        "where": "$response.header.Location",
                    },
                    onSuccess=[
                        _way(
                            "authRequired",
                            [{"condition": "$response.body#/redirectAuthToken != null"}],
                            "auth",
                        ),
                        _way(
                            "authNotRequired",
                            [{"condition": "$response.body#/redirectAuthToken == null"}],
                            "finalize",
                        ),
                    ],
                ),
                _step(
                    "auth",
                    "authorize",
                    parameters=[
                        {"name": "token", "in": "query", "value": "$steps.loan.outputs.token"}
                    ],
                ),
                _step(
                    "finalize",
                    "getLoan",
                    parameters=[
                        {"name": "loanId", "in": "path", "value": "$steps.loan.outputs.loanId"}
                    ],
                    outputs={"status": "$response.body#/status"},
                ),
            ],
            "outputs": {
                "status": "$steps.finalize.outputs.status",
                "where": "$steps.loan.outputs.where",
            },
        }
    ],
}


class _Lender(_Shelter):
    """Under 100: not eligible; under 200: no products; from 500 a customer check; from 800 an
    authorization token."""

    def answer(self, request: Seen) -> Reply:
        route = request.route
        if route == "/eligibility":
            amount = int(_json(request)["amount"])
            if amount < 100:
                return Reply(200, {"eligible": False})
            if amount < 200:
                return Reply(200, {"eligible": True})
            return Reply(
                200, {"eligible": True, "products": ["p1"], "checkRequired": amount >= 500}
            )
        if route == "/customers":  # Bob is known already: 200, no customer made
            return Reply(200 if _json(request)["name"] == "Bob" else 201, {"id": "c1"})
        if route == "/loans":
            amount = int(_json(request)["amount"])
            token = {"redirectAuthToken": "t"} if amount >= 800 else {}
            return Reply(200, {"loanId": f"L{amount}", **token}, {"Location": f"/loans/L{amount}"})
        if route.startswith("/loans/"):
            return Reply(200, {"status": "Finalised"})
        return Reply(200, {"ok": True})


RUNS = {  # (amount, name): the requests, in order
    (50, "Ann"): ["/eligibility"],
    (150, "Ann"): ["/eligibility"],
    (300, "Ann"): ["/eligibility", "/terms", "/loans", "/loans/L300"],
    (600, "Ann"): ["/eligibility", "/terms", "/customers", "/loans", "/loans/L600"],
    (600, "Bob"): ["/eligibility", "/terms", "/customers"],
    (900, "Ann"): ["/eligibility", "/terms", "/customers", "/loans", "/auth", "/loans/L900"],
}


@pytest.mark.integration  # runs another project's runner (arazzo-runner) beside the command line
def test_several_ways_with_criteria_import_run_and_run_as_arazzo_runner_runs_them(
    tmp_path: Path,
) -> None:
    ours, theirs = _Lender(), _Lender()
    try:
        env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
        package = _imported(tmp_path, LENDER_SPEC, (ours.url, theirs.url), LENDER)
        (flow,) = yaml.safe_load((package / "workflows.yaml").read_text())["workflows"]
        # the ways as `if`s, each the else of the one before; the status every success has is
        # no test; an end stops there; where none is taken goes on to the next step; a way to
        # where that goes too is left to it, when the way after it cannot hold with it
        assert flow["steps"][1:4] == [
            {
                "id": "notEligible-if",
                "if": "check_body.eligible == false",
                "then": [{"id": "notEligible", "return": {}}],
                "else": [
                    {
                        "id": "productsFound",
                        "if": {"context": "check_body", "jsonpath": "$.products[0]"},
                        "then": [],
                        "else": [
                            {
                                "id": "noProducts-if",
                                "if": "check_body.products == null",
                                "then": [{"id": "noProducts", "return": {}}],
                                "else": [],
                            }
                        ],
                    }
                ],
            },
            flow["steps"][2],
            {
                "id": "checkNotRequired",
                "if": "check_body.checkRequired == false",
                "then": [],
                "else": [
                    {
                        "id": "customer",
                        "tool": "create_customer",
                        "args": {"name": "{{name}}"},
                        "success": ["$statusCode == 200 || $statusCode == 201"],
                        "status_as": "customer_status",  # its ways test which
                    },
                    {
                        "id": "customerNotEligible-if",
                        "if": "customer_status == 200",
                        "then": [{"id": "customerNotEligible", "return": {}}],
                        "else": [],
                    },
                ],
            },
        ]
        assert flow["steps"][2]["id"] == "terms"
        assert flow["steps"][4]["headers_as"] == {"where": "Location"}
        assert flow["steps"][5]["if"] == "loan_body.redirectAuthToken == null"
        answers = []
        for amount, name in RUNS:
            line = f"/apply {json.dumps({'amount': amount, 'name': name})}"
            done = _cli("run", str(package), line, "--unsafe", "--json", env=env)
            assert done.returncode == 0, done.stderr
            answers.append(json.loads(done.stdout))
        # the Location header, saved as an output and answered
        assert answers[3] == {"status": "Finalised", "where": "/loans/L600"}
        assert [route for _, route, _, _ in ours.seen] == [r for rs in RUNS.values() for r in rs]
        # arazzo-runner reads neither $statusCode nor $response in an action's criteria (it
        # evaluates them as null there, so it takes no way of the document itself): it runs the
        # export, whose criteria name what the step saved
        exported = _exported(package, tmp_path)
        for amount, name in RUNS:
            ran = _oracle(exported, "apply", {"amount": amount, "name": name}, {})
            assert ran.error is None, ran
        assert theirs.seen == ours.seen
        _round_trip(package, exported, tmp_path, THEIRS)
    finally:
        for lender in (ours, theirs):
            lender.api.close()


def _with_ways(ways: list[dict[str, Any]], success: list[dict[str, Any]] | None = None) -> Any:
    make = copy.deepcopy(MAKE)
    make["onSuccess"] = ways
    if success is not None:
        make["successCriteria"] = success
    return _doc([make, LOOK])


def test_a_way_is_refused_naming_what_it_tests_when_no_run_can_say_it(
    shop: tuple[Skill, dict[str, bytes]],  # noqa: F811
) -> None:
    """A status compared with anything but a number, and a way that is no action Arazzo
    defines on success: each way's refusal said at once."""
    skill, files = shop
    doc = _with_ways(
        [
            _way("made", [{"condition": "$statusCode == $inputs.channel"}], "look"),
            {"name": "again", "type": "retry"},
        ],
        success=[{"condition": "$statusCode == 200 || $statusCode == 201"}],
    )
    with pytest.raises(ArazzoRefused) as refused:
        from_arazzo(doc, skill, files)
    where = "open_cart step make: onSuccess"
    assert str(refused.value).splitlines()[1:] == [
        f"  - {where} made: the condition '$statusCode == $inputs.channel' is outside the"
        " subset (a way tests the status as `$statusCode == N`, or another comparison with a"
        " number)",
        f"  - {where} again: a 'retry' action is not one the Arazzo specification defines on"
        " success (goto or end)",
    ]


def test_a_status_the_step_never_succeeds_with_is_a_way_never_taken(
    shop: tuple[Skill, dict[str, bytes]],  # noqa: F811
) -> None:
    skill, files = shop
    notes: list[str] = []
    doc = _with_ways(
        [
            _way("gone", [{"condition": "$statusCode == 404"}]),
            _way(
                "held",
                [
                    {"condition": "$statusCode == 201"},
                    {"condition": "$response.body#/held == true"},
                ],
            ),
        ]
    )
    steps = from_arazzo(doc, skill, files, notes)["workflows"][0]["steps"]
    assert [s["id"] for s in steps] == ["make", "held"]  # held: the end; else look, next
    assert (steps[1]["if"], steps[1]["then"]) == ("make_body.held", [])
    assert [s["id"] for s in steps[1]["else"]] == ["look", "outputs"]
    assert notes == [
        "open_cart step make: onSuccess gone tests a status the step never succeeds with, so it"
        " is never taken; left out"
    ]


def test_an_if_holds_each_of_its_tests_as_json_values_compare() -> None:
    """`true` is not 1; a value never saved is null to a comparison; an order of non-numbers
    never holds; `x == true` and `x == false`, `x != null` and `x == null` exclude each other."""
    (eq_one,) = if_tests("a.n == 1")
    assert (eq_one.holds(True, 1), eq_one.holds(True, True), eq_one.holds(False, None)) == (
        True,
        False,
        False,
    )
    (no_null,) = if_tests("a.t != null")
    assert (no_null.holds(False, None), no_null.holds(True, "t")) == (False, True)
    (more,) = if_tests("a.n > 2")
    assert (more.holds(True, 3), more.holds(True, "9")) == (True, False)
    assert if_tests(["a.x", {"context": "a", "jsonpath": "$.y"}]) == (
        IfTest("a.x"),
        IfTest("a", query="$.y"),
    )
    assert IfTest("a.x").excludes(IfTest("a.x", "==", False))
    assert IfTest("a.t", "!=", None).excludes(IfTest("a.t", "==", None))
    assert not IfTest("a.t", "!=", None).excludes(IfTest("a.u", "==", None))
    assert not IfTest("a.n", ">", 1).excludes(IfTest("a.n", "==", 0))
    with pytest.raises(ValueError, match="an if has 1 to 16 tests"):
        if_tests([])


def test_a_way_on_a_header_or_a_status_has_the_step_save_it(
    shop: tuple[Skill, dict[str, bytes]],  # noqa: F811
) -> None:
    """`$response.header.X-Held == 'yes'` and `$statusCode >= 201` (a comparison the one
    success status does not answer): the step saves that header and its status, and the way
    tests what it saved; the export writes them back as its outputs."""
    skill, files = shop
    doc = _with_ways(
        [
            _way(
                "held",
                [
                    {"condition": "$response.header.X-Held == 'yes'"},
                    {"condition": "$statusCode >= 201"},
                ],
            )
        ]
    )
    steps = from_arazzo(doc, skill, files)["workflows"][0]["steps"]
    assert (steps[0]["headers_as"], steps[0]["status_as"]) == (
        {"make_X_Held": "X-Held"},
        "make_status",
    )
    assert steps[1]["if"] == ["make_X_Held == 'yes'", "make_status >= 201"]
    text = yaml.safe_dump({"workflows": [from_arazzo(doc, skill, files)["workflows"][0]]})
    flows = load_workflows({**files, "workflows.yaml": text.encode()}, skill)
    out = to_arazzo(flows, skill, files=files)["workflows"][0]["steps"][0]
    assert out["outputs"] == {
        "make_body": "$response.body",
        "make_status": "$statusCode",
        "make_X_Held": "$response.header.X-Held",
    }
    assert out["onSuccess"][0]["criteria"] == [
        {"condition": "$steps.make.outputs.make_X_Held == 'yes'"},
        {"condition": "$steps.make.outputs.make_status >= 201"},
    ]


def test_either_of_two_conditions_is_a_way_for_each_taken_in_turn(
    shop: tuple[Skill, dict[str, bytes]],  # noqa: F811
) -> None:
    """`a || b && c` in a way beside another criterion: a way per alternative (`&&` binds
    first), each with the other criterion, the first that holds taken, as `||` reads; the
    export writes them as ways of their own, which import back the same."""
    skill, files = shop
    doc = _with_ways(
        [
            _way(
                "either",
                [
                    {
                        "condition": "$response.body#/a == 1 || $response.body#/b == 2 && $response.body#/c != 3"
                    },
                    {"condition": "$response.body#/d == true"},
                ],
            )
        ]
    )
    steps = from_arazzo(doc, skill, files)["workflows"][0]["steps"]
    assert steps[1]["id"] == "either" and steps[1]["if"] == ["make_body.a == 1", "make_body.d"]
    (second,) = steps[1]["else"]
    assert (second["id"], second["if"], second["then"]) == (
        "either-or2",
        ["make_body.b == 2", "make_body.c != 3", "make_body.d"],
        [],
    )
    text = yaml.safe_dump({"workflows": from_arazzo(doc, skill, files)["workflows"]})
    flows = load_workflows({**files, "workflows.yaml": text.encode()}, skill)
    again = from_arazzo(to_arazzo(flows, skill, files=files), skill, files)
    assert again["workflows"][0]["steps"] == steps


def test_a_retry_with_criteria_on_the_status_is_a_retry_for_those_statuses(
    shop: tuple[Skill, dict[str, bytes]],  # noqa: F811
) -> None:
    """An onFailure retry whose criteria test the status (`$statusCode == 503`) retries only
    then, and is written back with them; a retry on anything else is refused, naming it."""
    skill, files = shop
    look = copy.deepcopy(LOOK)  # a read: safe to try again
    look["onFailure"] = [
        {
            "name": "busy",
            "type": "retry",
            "retryAfter": 2,
            "retryLimit": 3,
            "criteria": [{"condition": "$statusCode == 503"}],
        }
    ]
    doc = _doc([MAKE, look])
    steps = from_arazzo(doc, skill, files)["workflows"][0]["steps"]
    assert steps[1]["retry"] == {"limit": 3, "after": 2, "when": ["$statusCode == 503"]}
    text = yaml.safe_dump({"workflows": from_arazzo(doc, skill, files)["workflows"]})
    flows = load_workflows({**files, "workflows.yaml": text.encode()}, skill)
    out = to_arazzo(flows, skill, files=files)["workflows"][0]["steps"][1]
    assert out["onFailure"] == [
        {
            "name": "retry",
            "type": "retry",
            "retryAfter": 2.0,
            "retryLimit": 3,
            "criteria": [{"condition": "$statusCode == 503"}],
        }
    ]
    look["onFailure"][0]["criteria"] = [{"condition": "$response.body#/busy == true"}]
    with pytest.raises(ArazzoRefused, match=r"a retry's criterion '\$response.body#/busy"):
        from_arazzo(_doc([MAKE, look]), skill, files)


def test_a_form_payload_written_as_its_text_is_its_fields() -> None:
    """`payload: "grant_type=authorization_code&code={$inputs.code}"` for a form body, as
    documents write one: the fields it spells, each templated as any value is (#56.3)."""
    spec = _spec(
        "Tokens",
        {
            "/token": {
                "post": _body_op(
                    "getToken",
                    {"grant_type": "string", "code": "string"},
                    ["grant_type", "code"],
                    media="application/x-www-form-urlencoded",
                )
            }
        },
    )
    files = dict(derive_package(json.dumps(spec).encode(), DeriveOptions(slug="tokens")).files)
    skill = load_skill(files)
    doc = {
        "arazzo": "1.0.1",
        "info": {"title": "t", "version": "1"},
        "sourceDescriptions": [{"name": "tokens", "url": "./t.json", "type": "openapi"}],
        "workflows": [
            {
                "workflowId": "token",
                "inputs": {
                    "type": "object",
                    "properties": {"code": {"type": "string"}},
                    "required": ["code"],
                },
                "steps": [
                    {
                        "stepId": "get",
                        "operationId": "getToken",
                        "requestBody": {
                            "contentType": "application/x-www-form-urlencoded",
                            "payload": "grant_type=authorization_code&code={$inputs.code}",
                        },
                    }
                ],
            }
        ],
    }
    (step,) = from_arazzo(doc, skill, files)["workflows"][0]["steps"]
    assert step["args"] == {"grant_type": "authorization_code", "code": "{{code}}"}
