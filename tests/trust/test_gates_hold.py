"""Invariants of a gate itself:

- an amount is approved by its gate only in the currency its threshold is in: a call that
  leaves the currency out waits for a person (`runtime/gates.py`, `check_gate`);
- an operation has one gate: a second is refused where it is added, and two already in force
  keep the stricter, said (`derive/annotations.py`, `_one_gate`);
- a gate is never a failure: a workflow's `on_failure` never goes on past a step held at its
  gate, whoever decides it (`runtime/workflows.py`, `StepFailed.gated`).

Each attacked on the faces that reach it. (An earlier release approved `{"amount": 9}` against
`auto_below: 10, auto_currency: EUR`; kept whichever of two gates sorted last; and ran a
workflow's `on_failure` step past a gated one in SkillHost without a gatekeeper.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from skillpress.app.base.context import AppContext, open_app
from skillpress.platform.settings import Settings
from tests.fake_api import FakeApi, fake_api
from tests.trust.harness import Guest, guesthouse


def _pay(root: Path, url: str) -> Path:
    folder = root / "pay"
    folder.mkdir(parents=True)
    (folder / "body.md").write_text("---\nname: pay\n---\n\n# Pay\n\nPayments.\n")
    (folder / "send.md").write_text(
        "---\noperation:\n  method: POST\n  url: " + url + "/payments\n"
        "  body: [to, amount, currency]\n  optional: [currency]\n  number: [amount]\n"
        "approval:\n  matches: POST /payments\n  risk: high\n  amount: amount\n"
        "  currency: currency\n  auto_below: 10\n  auto_currency: EUR\n---\n\n# send\n\nPay.\n"
    )
    return folder


HELD = [{"to": "B", "amount": 9}, {"to": "B", "amount": 9, "currency": "usd"}]
SENT = {"to": "B", "amount": 9, "currency": "eur"}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with fake_api() as made:
        yield made


def test_no_currency_is_no_automatic_approval_skillhost(api: FakeApi, tmp_path: Path) -> None:
    from skillpress.host import GateClosed, SkillHost

    _pay(tmp_path / "skills", api.url)
    host = SkillHost(tmp_path / "skills")
    for args in HELD:
        with pytest.raises(GateClosed):
            host.call("pay_send", args)
    assert host.call("pay_send", SENT).status == 201
    assert [json.loads(body) for _, _, _, body in api.seen] == [SENT]


def test_no_currency_is_no_automatic_approval_command_line(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.cli.main import app

    monkeypatch.setenv("SKILLPRESS_HOME", str(tmp_path / "home"))
    folder = _pay(tmp_path / "skills", api.url)
    for args in HELD:
        said = CliRunner().invoke(
            app,
            ["call", str(folder), "send", "--args", json.dumps(args), "--approval-timeout", "0"],
        )
        assert said.exit_code == 1 and "waiting for approval" in said.output, said.output
    went = CliRunner().invoke(app, ["call", str(folder), "send", "--args", json.dumps(SENT)])
    assert went.exit_code == 0 and "approved by its gate (auto_below)" in went.output
    assert [json.loads(body) for _, _, _, body in api.seen] == [SENT]


async def test_no_currency_is_no_automatic_approval_mcp(api: FakeApi, tmp_path: Path) -> None:
    from mcp import Client

    from skillpress.app.serving.calling import open_package
    from skillpress.mcp.server import build_mcp_server

    skill, files = open_package(_pay(tmp_path / "skills", api.url))
    async with Client(build_mcp_server(skill, files)) as client:
        for args in HELD:
            held = await client.call_tool("call_operation", {"name": "send", "arguments": args})
            assert held.is_error and "gated" in held.content[0].text
        sent = await client.call_tool("call_operation", {"name": "send", "arguments": SENT})
        assert not sent.is_error
    assert [json.loads(body) for _, _, _, body in api.seen] == [SENT]


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[AppContext]:
    from tests.app.test_use_cases import HOLLOWBROOK, submit

    context = open_app(Settings(home=tmp_path / "home", refresh_interval=0))
    submit(context, HOLLOWBROOK.read_bytes(), "one")
    yield context
    context.close()


HB_LAX = {"matches": "POST /bookings", "risk": "low"}
HB_STRICT = {"matches": "POST /bookings", "risk": "high"}


def test_a_second_gate_on_an_operation_is_refused_where_it_is_added(ctx: AppContext) -> None:
    from skillpress.app.operator.annotations import record_annotation
    from skillpress.derive.annotations import AnnotationRefused

    target = "operation:create_booking"
    first = record_annotation(ctx, "hollowbrook", "approval", target, HB_LAX, "ops")
    with pytest.raises(AnnotationRefused, match="create_booking is gated already"):
        record_annotation(ctx, "hollowbrook", "approval", target, HB_STRICT, "ops")
    assert first.ids


def test_a_second_gate_is_refused_by_the_api(ctx: AppContext) -> None:
    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators

    operators = load_operators(ctx.settings.home, None, "127.0.0.1")
    token = {"Authorization": f"Bearer {operators.generated}"}
    with TestClient(create_app(ctx, operators, None)) as client:
        from skillpress.app.operator.annotations import record_annotation

        record_annotation(ctx, "hollowbrook", "approval", "operation:create_booking", HB_LAX, "o")
        body = {"kind": "approval", "operation": "create_booking", "value": "POST /bookings"}
        refused = client.post("/v1/skills/hollowbrook/annotations", headers=token, json=body)
    assert refused.status_code == 422 and "gated already" in refused.json()["detail"]


@given(st.lists(st.text("0123456789abcdef", min_size=8, max_size=8), min_size=2, max_size=2))
def test_two_gates_in_force_keep_the_stricter_whatever_their_ids(ids: list[str]) -> None:
    """Gates an earlier release let in side by side: the stricter holds, said, never the one
    that happens to sort last."""
    from skillpress.derive import DeriveOptions, derive_package
    from skillpress.derive.annotations import Annotation

    if ids[0] == ids[1]:
        return
    from tests.app.test_use_cases import HOLLOWBROOK

    gates = [
        Annotation(ids[0], "approval", "operation:create_booking", HB_LAX),
        Annotation(ids[1], "approval", "operation:create_booking", HB_STRICT),
    ]
    package = derive_package(HOLLOWBROOK.read_bytes(), DeriveOptions(annotations=tuple(gates)))
    declared = package.files["create_booking.md"].decode()
    assert '"risk": "high"' in declared and '"risk": "low"' not in declared
    assert any(f"{ids[0]} is superseded" in w for w in package.warnings)


GATED_THEN = """
  - name: cancel_or_list
    execution: hardened
    parameters:
      type: object
      properties: {booking_id: {type: string}}
      required: [booking_id]
    steps:
      - id: cancel
        tool: cancel_booking
        args: {booking_id: "{{booking_id}}"}
        on_failure: rooms
      - id: rooms
        tool: list_rooms
        args: {}
"""


@pytest.fixture
def guest(tmp_path: Path) -> Iterator[Guest]:
    with guesthouse(tmp_path) as made:
        flows = made.package / "workflows.yaml"
        flows.write_text(flows.read_text() + GATED_THEN)
        yield made


def _reached(guest: Guest) -> list[tuple[str, str]]:
    with guest.server.house.lock:
        return [(s.method, s.path) for s in guest.server.house.seen]


def test_a_gate_is_never_a_failure_in_skillhost(guest: Guest) -> None:
    from skillpress.host import SkillHost
    from skillpress.runtime.workflows.run import StepFailed

    host = SkillHost(guest.package.parent, skills=("hollowbrook",))  # nobody here approves
    with pytest.raises(StepFailed, match="step cancel"):
        host.call("hollowbrook_cancel_or_list", {"booking_id": "bk-1"}, environ=guest.environ())
    assert _reached(guest) == []


def test_a_gate_is_never_a_failure_on_the_command_line(
    guest: Guest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.cli.main import app

    monkeypatch.setenv("SKILLPRESS_HOME", str(tmp_path / "home"))
    for key, value in guest.environ().items():
        monkeypatch.setenv(key, value)
    said = CliRunner().invoke(
        app,
        [
            "run",
            str(guest.package),
            '/cancel_or_list {"booking_id": "bk-1"}',
            "--unsafe",
            "--approval-timeout",
            "0",
        ],
    )
    assert said.exit_code != 0 and "waits" in said.output, said.output
    assert _reached(guest) == []


async def test_a_gate_is_never_a_failure_over_mcp(guest: Guest) -> None:
    from mcp import Client

    from skillpress.app.serving.calling import open_package
    from skillpress.mcp.server import build_mcp_server

    skill, files = open_package(guest.package)
    server = build_mcp_server(skill, files)
    async with Client(server) as client:
        args: dict[str, Any] = {"workflow": "cancel_or_list", "arguments": {"booking_id": "bk-1"}}
        ran = await client.call_tool("skill_run", args)
        assert ran.is_error and "cancel" in ran.content[0].text
    assert _reached(guest) == []


def test_an_adyen_payment_gated_as_guessed_waits_for_a_person(api: FakeApi, tmp_path: Path) -> None:
    """#55.1, as the issue saw it: Adyen's post_payments gated as the review guesses it,
    confirmed with `auto_below: 50` EUR. A payment of 100,000,000 EUR with an additional amount
    of 10 EUR waits for a person (the gate reads the payment's own amount); one of 10 EUR goes
    by itself."""
    from skillpress.app.base.package_dir import write_package_dir
    from skillpress.derive import DeriveOptions, derive_package
    from skillpress.derive.annotations import Annotation
    from skillpress.derive.approvals import guess_suggestions
    from skillpress.host import GateClosed, SkillHost

    spec = (
        Path(__file__).parents[1] / "fixtures" / "specs" / "adyen-checkout-v70.json"
    ).read_bytes()
    guess = next(
        s
        for s in guess_suggestions(derive_package(spec).files)
        if s.operation == "post_payments" and s.kind == "approval"
    )
    rule = {k: guess.body[k] for k in ("matches", "risk", "binds", "amount", "currency")}
    confirmed = Annotation(
        "a1",
        "approval",
        "operation:post_payments",
        rule | {"auto_below": 50, "auto_currency": "EUR"},
    )
    package = derive_package(spec, DeriveOptions(base_url=api.url, annotations=(confirmed,)))
    write_package_dir(package.files, tmp_path / "skills" / "adyen")
    host = SkillHost(tmp_path / "skills")
    order = {
        "merchantAccount": "shop",
        "paymentMethod": {"type": "scheme"},
        "reference": "r-1",
        "returnUrl": "https://shop.test/back",
    }
    huge = order | {
        "amount": {"currency": "EUR", "value": 100_000_000},
        "additionalAmount": {"currency": "EUR", "value": 10},
    }
    with pytest.raises(GateClosed, match="post_payments is gated"):
        host.call("adyen_post_payments", huge)
    assert api.seen == []
    small = order | {"amount": {"currency": "EUR", "value": 10}}
    assert host.call("adyen_post_payments", small).status == 201
    assert [json.loads(body)["amount"] for _, _, _, body in api.seen] == [small["amount"]]
