"""Invariant: a gated call is decided under the skill whose operation it is — never under the
skill of a workflow whose step calls it, nor under another skill a host binds. Its one home:
every face asks a gatekeeper through `runtime/calling/calls.ask_gatekeeper` (the call's own
slug on its `GateCheck`), the runner picks the gatekeeper of the skill a step calls
(`StepPlace.gate_for(owner)`), and the gatekeepers decide under that slug and refuse one they were
not made for (`app/serving/calling.decided_under`).

Two skills are live on a served API: `pay` (a payment goes by itself under 50 EUR) and `payfx`
(under 1,000,000 EUR). Attacked with N calls at once on SQLite and PostgreSQL:

- through `SkillHost` with a runtime's token and a gatekeeper made for `payfx`, N payments of
  900 EUR through `pay` are refused, none sent and none recorded (an earlier release asked the
  server under `payfx`, whose live gate let them all through);
- through `SkillHost` with one gatekeeper for both, each call waits on a request of its own skill,
  one grant sends one payment, and `payfx`'s own gate still lets its own through;
- over MCP serving both (`mcp --all`), N identical calls wait on one request of `pay`, one grant
  sends one, and `payfx`'s go by its own gate;
- from the command line, N runs of a workflow of `trips` whose step pays through `pay` wait on one
  request named `pay`, and one grant sends one payment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.app.records import approval_requests as approvals
from skillpress.app.serving.calling import skill_files
from skillpress.platform.settings import Settings
from tests.app.specs import money_spec
from tests.fake_api import FakeApi
from tests.trust.harness import PAY_GATE, N, Served, publish_gated, race, served_api

ROOT = Path(__file__).parents[2]
LAX_GATE = {**PAY_GATE, "auto_below": 1_000_000}
PAYMENT = {"amount": {"value": 900, "currency": "EUR"}}

TRIPS_FLOWS = """
workflows:
  - name: pay_it
    description: Pay for a trip through pay.
    execution: hardened
    uses: [pay]
    parameters:
      type: object
      properties:
        amount: {type: integer, description: in euros}
      required: [amount]
    steps:
      - id: pay
        tool: pay.create_payment
        args: {amount: {value: "{{amount}}", currency: EUR}}
"""


@pytest.fixture
def api(settings: Settings, pay_api: FakeApi) -> Iterator[Served]:
    with served_api(settings) as served:
        spec = money_spec(pay_api.url)
        publish_gated(served.ctx, spec, "pay", "create_payment", PAY_GATE)
        publish_gated(served.ctx, spec, "payfx", "create_payment", LAX_GATE)
        yield served


@pytest.fixture
def skills(api: Served, tmp_path: Path) -> Path:
    """A host's folder: `pay` and `payfx` as published, and `trips`, whose workflow pays
    through `pay`."""
    folder = tmp_path / "skills"
    for slug in ("pay", "payfx"):
        files, _ = skill_files(slug, lambda: api.ctx)
        write_package_dir(files, folder / slug)
    trips = folder / "trips"
    trips.mkdir()
    (trips / "body.md").write_text("---\nname: trips\n---\n\n# Trips\n\nPays for trips.\n")
    (trips / "ping.md").write_text(
        "---\noperation:\n  method: GET\n  url: http://127.0.0.1:9/ping\n---\n\n# ping\n\nPing.\n"
    )
    (trips / "workflows.yaml").write_text(TRIPS_FLOWS)
    return folder


def _posts(pay_api: FakeApi) -> list[str]:
    return [p for m, p, _, _ in pay_api.seen if m == "POST"]


def _requests(api: Served) -> list[tuple[str, str, str]]:
    rows = approvals.list_requests(api.ctx, everything=True)
    return [(str(r["skill"]), str(r["operation"]), str(r["status"])) for r in rows]


def test_a_gatekeeper_made_for_another_skill_decides_nothing(
    api: Served, pay_api: FakeApi, skills: Path
) -> None:
    from skillpress.app.serving.gatekeepers import api_gatekeeper
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.calls import GateClosed

    gate = api_gatekeeper(api.url, api.runtime_token("host"), "payfx")
    host = SkillHost(skills, skills=("pay", "payfx"), gatekeeper=gate)

    outcomes = race(N, lambda i: host.call("pay_create_payment", PAYMENT))
    assert all(isinstance(o, GateClosed) for o in outcomes), outcomes
    assert all("decides payfx's calls only" in str(o) for o in outcomes), outcomes
    assert _posts(pay_api) == [] and _requests(api) == []
    # payfx's own call is decided under payfx's own live gate
    host.call("payfx_create_payment", PAYMENT)
    assert _posts(pay_api) == ["/payments"]
    assert _requests(api) == [("payfx", "create_payment", "auto")]


def test_one_gatekeeper_for_a_host_of_several_skills_decides_each_under_its_own(
    api: Served, pay_api: FakeApi, skills: Path
) -> None:
    from skillpress.app.serving.gatekeepers import api_gatekeeper
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.calls import GateClosed

    gate = api_gatekeeper(api.url, api.runtime_token("host"))
    host = SkillHost(skills, skills=("pay", "payfx"), gatekeeper=gate)

    def pay(i: int) -> Any:
        return host.call("pay_create_payment", PAYMENT)

    first = race(N, pay)
    assert all(isinstance(o, GateClosed) and o.request is not None for o in first), first
    asked = {o.request for o in first}
    assert len(asked) == 1 and _posts(pay_api) == [], first
    assert _requests(api) == [("pay", "create_payment", "pending")]
    approvals.decide(api.ctx, int(next(iter(asked)) or 0), True, "ops")
    second = race(N, pay)
    went = [o for o in second if getattr(o, "status", 0) == 201]
    assert len(went) == 1 and _posts(pay_api) == ["/payments"], second
    host.call("payfx_create_payment", PAYMENT)  # under payfx's own threshold: by itself
    assert _posts(pay_api) == ["/payments"] * 2
    assert sorted(_requests(api)) == [
        ("pay", "create_payment", "pending"),  # the callers the grant did not let through
        ("pay", "create_payment", "used"),
        ("payfx", "create_payment", "auto"),
    ]


async def test_an_mcp_server_of_several_skills_decides_each_under_its_own(
    api: Served, pay_api: FakeApi, skills: Path
) -> None:
    """`mcp --all DIR` as `mcp/serving.catalog_server` builds it, approvals asked through the API
    with a runtime's token: N identical calls at once."""
    import asyncio

    from mcp import Client

    from skillpress.app.serving.catalog import folder_catalog
    from skillpress.app.serving.gatekeepers import ApiDesk, agent_gatekeeper
    from skillpress.mcp.server import build_catalog_server

    token = api.runtime_token("mcp")
    server = build_catalog_server(
        folder_catalog(skills).current(),
        gatekeepers=lambda slug: agent_gatekeeper(lambda: ApiDesk(api.url, token), slug),
    )

    async def calls(client: Any, slug: str) -> list[Any]:
        one = {"skill": slug, "name": "create_payment", "arguments": PAYMENT}
        done = await asyncio.gather(*(client.call_tool("call_operation", one) for _ in range(N)))
        return [(r.is_error, r.content[0].text) for r in done]

    async with Client(server) as client:
        first = await calls(client, "pay")
        assert all(error and "request #" in text for error, text in first), first
        assert _requests(api) == [("pay", "create_payment", "pending")]
        (row,) = approvals.list_requests(api.ctx, everything=True)
        approvals.decide(api.ctx, int(row["id"] or 0), True, "ops")
        second = await calls(client, "pay")
        assert sum(1 for error, _ in second if not error) == 1, second
        assert _posts(pay_api) == ["/payments"]
        fx = await calls(client, "payfx")  # under payfx's own threshold: each goes by itself
        assert all(not error for error, _ in fx), fx
    assert _posts(pay_api) == ["/payments"] * (1 + N)
    assert sorted(set(_requests(api))) == [
        ("pay", "create_payment", "pending"),
        ("pay", "create_payment", "used"),
        ("payfx", "create_payment", "auto"),
    ]


@pytest.mark.integration  # the command line as N processes
def test_a_workflow_step_is_decided_under_the_skill_it_calls(
    api: Served, pay_api: FakeApi, skills: Path, settings: Settings
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SKILLPRESS_") or k == "SKILLPRESS_TEST_SERVERS"
    }
    env |= {
        "SKILLPRESS_HOME": str(settings.home),
        "SKILLPRESS_APPROVALS_URL": api.url,
        "SKILLPRESS_RUNTIME_TOKEN": api.runtime_token("trips-runner"),
    }
    argv = [
        sys.executable,
        "-m",
        "skillpress.cli.main",
        "run",
        str(skills / "trips"),
        f"/pay_it {json.dumps({'amount': 900})}",
        "--unsafe",
        "--approval-timeout",
        "0",
        "--json",
    ]

    def run(i: int) -> tuple[int, str]:
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stdout + done.stderr

    first = race(N, run)
    assert all(code != 0 and "approval #" in said for code, said in first), first
    assert _requests(api) == [("pay", "create_payment", "pending")], first
    assert _posts(pay_api) == []
    (row,) = approvals.list_requests(api.ctx, everything=True)
    approvals.decide(api.ctx, int(row["id"] or 0), True, "ops")
    second = race(N, run)
    assert sum(1 for code, _ in second if code == 0) == 1, second
    assert _posts(pay_api) == ["/payments"]
    assert sorted(_requests(api)) == [
        ("pay", "create_payment", "pending"),
        ("pay", "create_payment", "used"),
    ]
