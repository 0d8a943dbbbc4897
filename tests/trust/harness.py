"""What the attacker-side tests of the trust boundary share: callers started at the same moment,
the record stores both ways (SQLite, and PostgreSQL on the session's server), a real guesthouse
API that counts what reaches it, the API served on a loopback port with each role's real token,
and a skill published with the gate a test needs."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.context import AppContext, open_app
from skillpress.platform.settings import Settings
from tests.runtime.guesthouse import GuesthouseServer, example_skill

N = 8  # identical calls waiting at once, on every face (the acceptance)

CANCEL_STAY = """
  - name: cancel_stay
    description: Cancel a booking, as a workflow step.
    execution: hardened
    parameters:
      type: object
      properties:
        booking_id: {type: string, description: the booking}
      required: [booking_id]
    steps:
      - id: cancel
        tool: cancel_booking
        args: {booking_id: "{{booking_id}}"}
"""


def race(n: int, call: Callable[[int], Any], timeout: float = 180.0) -> list[Any]:
    """`call(i)` for i < n, each in its own thread, all let go at one moment; each outcome (what
    it returned, or the exception it raised) in order. A thread still running after `timeout`
    fails the test (a hang guard, not a timing)."""
    start = threading.Barrier(n)
    outcomes: list[Any] = [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = call(i)
        except BaseException as exc:  # noqa: BLE001 (the outcome a test asserts on)
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a racing caller never came back"
    return outcomes


STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]


def settings_for(request: pytest.FixtureRequest, home: Path) -> Settings:
    """A home whose records are SQLite, or a fresh database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return Settings(home=home, refresh_interval=0)
    from tests.workers.conftest import migrated, new_database

    url = migrated(new_database(request.getfixturevalue("postgres_url")))
    return Settings(home=home, database_url=url, refresh_interval=0)


@dataclass
class Guest:
    """The guesthouse API and the Hollowbrook package pointed at it (with `cancel_stay`, a
    workflow whose one step is the gated `cancel_booking`)."""

    server: GuesthouseServer
    package: Path

    def deletes(self) -> list[str]:
        """Every DELETE that reached the API, by path."""
        with self.server.house.lock:
            return [s.path for s in self.server.house.seen if s.method == "DELETE"]

    def environ(self) -> dict[str, str]:
        from tests.runtime.guesthouse import KEY

        return {"HOLLOWBROOK_API_KEY": KEY}


@contextlib.contextmanager
def guesthouse(tmp_path: Path) -> Iterator[Guest]:
    with GuesthouseServer() as server:
        package = example_skill(tmp_path, server)
        flows = package / "workflows.yaml"
        flows.write_text(flows.read_text() + CANCEL_STAY)
        yield Guest(server, package)


@dataclass
class Served:
    """The HTTP API on a loopback port over a home's records, with each role's token."""

    url: str
    operator: str
    ctx: AppContext

    def runtime_token(self, name: str) -> str:
        from skillpress.app.base.roles import RUNTIME, mint_token

        return mint_token(self.ctx.settings, name, RUNTIME)


@contextlib.contextmanager
def served_api(settings: Settings) -> Iterator[Served]:
    """`create_app` under uvicorn in a thread (no pipeline: the approvals and reads need none)."""
    import uvicorn

    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators
    from skillpress.platform.local_processes import free_port

    ctx = open_app(settings)
    operators = load_operators(settings.home, None, "127.0.0.1")
    assert operators.generated is not None
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(ctx, operators, None), "127.0.0.1", port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the API did not start"
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{port}", operators.generated, ctx)
    finally:
        server.should_exit = True
        thread.join(10)
        ctx.close()


PAY_GATE = {
    "matches": "POST /payments",
    "risk": "high",
    "amount": "amount.value",
    "currency": "amount.currency",
    "auto_below": 50,
    "auto_currency": "EUR",
}


def publish_gated(ctx: AppContext, spec: dict[str, Any], slug: str, op: str, gate: Any) -> None:
    """`spec` submitted as `slug`, an approval rule `gate` on `op` added by a person, and the
    version it proposes published: the live gate a server evaluates."""
    from skillpress.app.operator.annotations import record_annotation
    from skillpress.app.records import publish_check
    from skillpress.schemas.events import AnnotationChanged, PublishVersion, SpecSubmitted
    from skillpress.schemas.subjects import COMMANDS, EVENTS
    from tests.app import bus

    blob = ctx.blobs.put(json.dumps(spec).encode())
    submitted = SpecSubmitted(submission="s", skill=slug, blob=blob, created_by="t")
    bus.run(ctx, EVENTS.spec_submitted, submitted)
    stored = record_annotation(ctx, slug, "approval", f"operation:{op}", gate, "ops")
    changed = AnnotationChanged(
        skill=slug,
        annotation_ids=list(stored.ids),
        change="added",
        as_of=stored.at.isoformat(),
        submission="a",
    )
    proposed = [b for s, b in bus.run(ctx, EVENTS.annotation_changed, changed)][-1]
    version = publish_check.check_publish_request(ctx, slug, proposed["version_id"], False)
    command = PublishVersion(skill=slug, version_id=version, requested_by="ops")
    bus.run(ctx, COMMANDS.publish_version, command)
