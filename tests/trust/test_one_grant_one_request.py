"""Invariant: a grant is consumed by exactly one request (`app/records/approval_requests.consume`,
a conditional update only one caller can win; the gatekeepers in `app/serving/calling.py` send
on `GO` and nothing else).

Attacked on every face with N identical calls at once, on SQLite and PostgreSQL: all N wait on
one request; a person grants it; N identical calls again let exactly one DELETE reach the API,
and every other caller is told the grant was spent and waits on a request of its own. (An
earlier release let 4 of 4 through from the command line, 3 of 3 through the approvals API, 3 of
5 over MCP and 4 of 6 through SkillHost.)"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.records import approval_requests as approvals
from skillpress.platform.settings import Settings
from tests.trust.harness import (
    Guest,
    N,
    guesthouse,
    race,
    served_api,
)


@pytest.fixture
def guest(tmp_path: Path) -> Iterator[Guest]:
    with guesthouse(tmp_path) as made:
        yield made


def _booking(guest: Guest) -> str:
    """A booking made on the API (its id): what the gated DELETE cancels."""
    body = {"room_id": "oak", "guest_name": "A", "arrival": "2027-01-02", "departure": "2027-01-04"}
    req = urllib.request.Request(
        f"{guest.server.url}/bookings",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **_key(guest)},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as answer:  # noqa: S310 (the test's server)
        return str(json.loads(answer.read())["id"])


def _key(guest: Guest) -> dict[str, str]:
    return {"X-Hollowbrook-Key": guest.environ()["HOLLOWBROOK_API_KEY"]}


def _request_of(outcome: Any) -> int | None:
    """The approval request a held call names (a GateClosed, a waiting step, MCP's text)."""
    for attr in ("request", "waiting"):
        found = getattr(outcome, attr, None)
        if isinstance(found, int):
            return found
    said = re.search(r"request #(\d+)", str(outcome))
    return int(said.group(1)) if said else None


def one_grant_one_request(
    settings: Settings, guest: Guest, call: Callable[[int], Any], sent: Callable[[Any], bool]
) -> None:
    """The attack: N identical calls wait on one request; it is granted; N identical calls again
    send exactly one DELETE, and the rest are held on one new request."""
    first = race(N, call)
    assert not any(sent(o) for o in first), first
    asked = {_request_of(o) for o in first}
    assert len(asked) == 1 and None not in asked, f"N identical calls, one request: {first}"
    (request,) = asked
    assert request is not None
    ctx = open_app(settings)
    try:
        approvals.decide(ctx, request, True, "ops")
        second = race(N, call)
        went = [o for o in second if sent(o)]
        held = {_request_of(o) for o in second if not sent(o)}
        assert len(went) == 1, f"one grant, one request: {second}"
        assert len(held) == 1 and request not in held and None not in held, second
        rows = approvals.list_requests(ctx, everything=True)
        assert [r["status"] for r in rows] == ["used", "pending"]
    finally:
        ctx.close()
    assert len(guest.deletes()) == 1, guest.deletes()


def test_n_consumers_of_one_grant_one_wins(settings: Settings) -> None:
    ctx = open_app(settings)
    try:
        asked = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", {"b": "1"}, "agent")
        assert asked.id is not None
        approvals.decide(ctx, asked.id, True, "ops")

        def consume(i: int) -> str:
            return approvals.consume(ctx, int(asked.id or 0)).status

        outcomes = race(N, consume)
    finally:
        ctx.close()
    assert outcomes.count("used") == 1, outcomes
    spent = [o for o in outcomes if isinstance(o, approvals.GrantSpent)]
    assert len(spent) == N - 1, outcomes


def _host(guest: Guest, gatekeeper: Any) -> Any:
    from skillpress.host import SkillHost

    return SkillHost(guest.package.parent, skills=("hollowbrook",), gatekeeper=gatekeeper)


def test_skillhost_with_the_records_here(settings: Settings, guest: Guest) -> None:
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper

    gate = agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "hollowbrook")
    host, booking = _host(guest, gate), _booking(guest)

    def call(i: int) -> Any:
        args = {"booking_id": booking}
        return host.call("hollowbrook_cancel_booking", args, environ=guest.environ())

    one_grant_one_request(settings, guest, call, lambda o: getattr(o, "status", 0) == 204)


def test_skillhost_through_the_approvals_api(settings: Settings, guest: Guest) -> None:
    from skillpress.app.serving.gatekeepers import api_gatekeeper

    with served_api(settings) as api:
        gate = api_gatekeeper(api.url, api.runtime_token("host"), "hollowbrook")
        host, booking = _host(guest, gate), _booking(guest)

        def call(i: int) -> Any:
            args = {"booking_id": booking}
            return host.call("hollowbrook_cancel_booking", args, environ=guest.environ())

        one_grant_one_request(settings, guest, call, lambda o: getattr(o, "status", 0) == 204)


def test_the_approvals_api_answers_one_consume_of_a_grant_used(settings: Settings) -> None:
    import httpx

    with served_api(settings) as api:
        token = api.runtime_token("host")
        ask = {"skill": "hollowbrook", "operation": "cancel_booking", "arguments": {"b": "1"}}
        with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {token}"}) as c:
            asked = c.post("/v1/approvals", json=ask).json()
        approvals.decide(api.ctx, asked["id"], True, "ops")

        def consume(i: int) -> tuple[int, str]:
            with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {token}"}) as c:
                answer = c.post(f"/v1/approvals/{asked['id']}/consume")
                said = answer.json()
                return answer.status_code, said["status"] if answer.is_success else said["type"]

        outcomes = race(N, consume)
    assert outcomes.count((200, "used")) == 1, outcomes
    assert outcomes.count((409, "urn:skillpress:problem:grant-spent")) == N - 1, outcomes


def test_a_workflow_step(settings: Settings, guest: Guest) -> None:
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper

    gate = agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "hollowbrook")
    host, booking = _host(guest, gate), _booking(guest)

    def run(i: int) -> Any:
        args = {"booking_id": booking}
        return host.call("hollowbrook_cancel_stay", args, environ=guest.environ())

    one_grant_one_request(settings, guest, run, lambda o: getattr(o, "status", 0) == 200)


ARAZZO = """
arazzo: 1.0.1
info: {title: Cancel a stay, version: 1.0.0}
sourceDescriptions:
  - {name: hollowbrook, url: ./hollowbrook.openapi.json, type: openapi}
workflows:
  - workflowId: cancel_imported
    inputs:
      type: object
      properties: {booking_id: {type: string}}
      required: [booking_id]
    steps:
      - stepId: cancel
        operationId: cancel_booking
        parameters:
          - {name: booking_id, in: path, value: $inputs.booking_id}
        successCriteria:
          - condition: $statusCode == 204
"""


def test_a_workflow_imported_from_arazzo(settings: Settings, guest: Guest) -> None:
    from skillpress.app.base.package_dir import read_package_dir
    from skillpress.app.operator.arazzo_io import read_arazzo, workflows_from_arazzo
    from skillpress.app.serving.calling import open_package
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper

    skill, files = open_package(guest.package)
    made = workflows_from_arazzo(read_arazzo(ARAZZO.encode()), skill, files)
    text, names = made.text, made.names
    assert names == ["cancel_imported"]
    (guest.package / "workflows.yaml").write_text(text)
    assert "workflows.yaml" in read_package_dir(guest.package, hand_written=True)
    gate = agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "hollowbrook")
    host, booking = _host(guest, gate), _booking(guest)

    def run(i: int) -> Any:
        args = {"booking_id": booking}
        return host.call("hollowbrook_cancel_imported", args, environ=guest.environ())

    one_grant_one_request(settings, guest, run, lambda o: getattr(o, "status", 0) == 200)


async def _mcp_calls(client: Any, booking: str) -> list[Any]:
    import asyncio

    async def one() -> Any:
        args = {"name": "cancel_booking", "arguments": {"booking_id": booking}}
        result = await client.call_tool("call_operation", args)
        text = result.content[0].text
        return ("sent", text) if not result.is_error else RuntimeError(text)

    return list(await asyncio.gather(*(one() for _ in range(N))))


def _mcp_sent(outcome: Any) -> bool:
    return isinstance(outcome, tuple) and json.loads(outcome[1])["status"] == 204


async def _mcp_attack(settings: Settings, guest: Guest, client: Any) -> None:
    booking = _booking(guest)
    first = await _mcp_calls(client, booking)
    asked = {_request_of(o) for o in first}
    assert not any(_mcp_sent(o) for o in first) and len(asked) == 1, first
    ctx: AppContext = open_app(settings)
    try:
        approvals.decide(ctx, int(next(iter(asked)) or 0), True, "ops")
    finally:
        ctx.close()
    second = await _mcp_calls(client, booking)
    assert sum(1 for o in second if _mcp_sent(o)) == 1, second
    held = {_request_of(o) for o in second if not _mcp_sent(o)}
    assert len(held) == 1 and not held & asked, second
    assert len(guest.deletes()) == 1, guest.deletes()


async def test_mcp_in_process(settings: Settings, guest: Guest) -> None:
    """The MCP server's own call path (each call off the event loop, all at once)."""
    from mcp import Client

    from skillpress.app.serving.calling import credential_for, open_package
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper
    from skillpress.mcp.server import build_mcp_server

    skill, files = open_package(guest.package)
    import os

    os.environ.update(guest.environ())
    server = build_mcp_server(
        skill,
        files,
        credential=credential_for(skill, None),
        gatekeeper=agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), skill.slug),
    )
    async with Client(server) as client:
        await _mcp_attack(settings, guest, client)


def test_callers_waiting_at_a_terminal(settings: Settings, guest: Guest) -> None:
    """The command line's gatekeeper: N identical calls poll one request while they wait; a
    person grants it and exactly one is sent, the others ask anew (their own request, shown)
    and stop when that one is denied. (An earlier release answered every poll after the first
    `used` again, and sent all N.)"""
    import threading
    import time

    from skillpress.app.serving.calling import call_setup, open_package
    from skillpress.app.serving.gatekeepers import LocalDesk, terminal_gatekeeper
    from skillpress.runtime.calling.calls import GateClosed, place_call
    from skillpress.runtime.calling.execute import CallLimits

    skill, _ = open_package(guest.package)
    tool = skill.tool("cancel_booking")
    setup = call_setup(skill, None, CallLimits(), None)
    setup = type(setup)(setup.credential, setup.limits, setup.files, guest.environ())
    booking, said, lock = _booking(guest), [], threading.Lock()

    def say(line: str) -> None:
        with lock:
            said.append(line)

    def call(i: int) -> Any:
        desk = lambda: LocalDesk(lambda: open_app(settings))  # noqa: E731
        gate = terminal_gatekeeper(desk, skill.slug, f"caller-{i}", lambda: None, 120, say)
        return place_call(tool, {"booking_id": booking}, skill.hosts, setup, gate, skill=skill.slug)

    def decide_when(waiting: int, status: str, grant: bool) -> None:
        deadline = time.monotonic() + 120
        ctx = open_app(settings)
        try:
            while time.monotonic() < deadline:
                rows = [r for r in approvals.list_requests(ctx) if r["status"] == status]
                with lock:
                    seen = sum(1 for line in said if line.startswith("waiting for approval #1"))
                if rows and seen >= waiting:
                    approvals.decide(ctx, int(rows[0]["id"] or 0), grant, "ops")
                    return
                time.sleep(0.05)
        finally:
            ctx.close()

    def person() -> None:
        decide_when(N, "pending", True)  # every caller waits on #1: grant it
        time.sleep(1.5)  # the callers' next polls: one takes the grant, the rest ask anew
        decide_when(0, "pending", False)  # deny what they asked anew

    deciding = threading.Thread(target=person, daemon=True)
    deciding.start()
    outcomes = race(N, call)
    deciding.join(60)
    sent = [o for o in outcomes if getattr(getattr(o, "result", None), "status", 0) == 204]
    denied = [o for o in outcomes if isinstance(o, GateClosed) and o.denied]
    assert (len(sent), len(denied)) == (1, N - 1), outcomes
    assert sum(1 for line in said if "was used by another call with the same values" in line) == (
        N - 1
    )
    assert len(guest.deletes()) == 1, guest.deletes()
