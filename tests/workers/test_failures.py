"""Failure drills on real servers: a worker killed mid-message, nats-server killed, a flaky source,
and a scheduled refresh that proposes but never publishes."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from skillpress.app.base.context import AppContext
from skillpress.platform.broker import connect
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings
from skillpress.schemas.events import PublishVersion, RefreshSources, SpecSubmitted
from skillpress.schemas.records import ActionItem, DeadLetter, Skill, SourceRevision, Version
from skillpress.schemas.subjects import COMMANDS, EVENTS, STREAM
from tests.fake_api import FakeApi, Reply
from tests.workers.conftest import SPECS, settings_env, submit, watching, workers

pytestmark = pytest.mark.integration  # starts real servers


def _worker_process(
    settings: Settings, name: str, **extra: str
) -> tuple[subprocess.Popen[str], list[dict[str, Any]]]:
    """`skillpress worker NAME` as its own process; returns it and its parsed log lines (filled live)."""
    env = {**settings_env(settings), **extra}
    slow = "SLOW_WORKER_DELAY" in extra  # the test-only wrapper whose handlers sleep first
    module = "tests.workers.slow_worker" if slow else "skillpress.cli.main"
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *([] if slow else ["worker"]), name],
        env=env,
        cwd=Path(__file__).parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[dict[str, Any]] = []
    started = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            lines.append(event)
            if event.get("event") == "workers.started":
                started.set()

    threading.Thread(target=read, daemon=True).start()
    if not started.wait(30):
        proc.kill()
        raise AssertionError(f"worker {name} did not start: {lines[-5:]}")
    return proc, lines


async def _held(url: str, durable: str) -> tuple[int, int]:
    """(messages delivered to `durable` and not acknowledged, deliveries made so far)."""
    nc = await connect(url)
    try:
        info = await nc.jetstream().consumer_info(STREAM, durable)
        made = info.delivered.consumer_seq if info.delivered is not None else 0
        return int(info.num_ack_pending or 0), int(made or 0)
    finally:
        await nc.close()


async def _until_held(url: str, durable: str, deliveries: int = 1) -> None:
    """Wait until one message is delivered to `durable` and not acknowledged (a worker holds
    it), in the `deliveries`-th delivery: a delivery whose worker died still counts as pending
    until the message is handed out again, so the count alone could be the last one's."""
    for _ in range(100):
        pending, made = await _held(url, durable)
        if pending == 1 and made >= deliveries:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no message reached the slow {durable} worker (delivery {deliveries})")


async def test_a_worker_killed_mid_message_is_redelivered_to_another_replica(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    url = settings.nats_url
    blob = ctx.blobs.put((SPECS / "oai-petstore-expanded.yaml").read_bytes())
    slow, _ = _worker_process(settings, "render", SLOW_WORKER_DELAY="30")
    replica: subprocess.Popen[str] | None = None
    try:
        async with (
            watching(url) as (watcher, nc),
            workers(ctx, url, ["fetch", "parse", "categorize", "guess-approvals"]),
        ):
            await submit(
                nc,
                SpecSubmitted(submission="k", skill="petstore", blob=blob, created_by="test"),
                "submitted:k",
            )
            await watcher.wait_for(EVENTS.revision_categorized, submission="k")
            await _until_held(url, "render")  # the slow replica holds the message, unacked
            slow.send_signal(signal.SIGKILL)
            slow.wait(10)
            replica, lines = _worker_process(settings, "render")
            proposed = await watcher.wait_for(EVENTS.version_proposed, timeout=30, submission="k")
        for _ in range(100):  # its log line follows the event it published
            done = [ln for ln in lines if ln.get("event") == "render.done"]
            if done:
                break
            await asyncio.sleep(0.05)
        assert [d["delivered"] for d in done] == [2], (
            "the other replica handled the redelivered message"
        )
        # #44.6: which message a worker took and when, and how long it held it
        [began] = [ln for ln in lines if ln.get("event") == "render.started"]
        assert (began["submission"], began["skill"], began["delivered"]) == ("k", "petstore", 2)
        assert began["bytes"] > 0
        assert isinstance(done[0]["ms"], int) and done[0]["ms"] >= 0
        assert done[0]["started_at"] <= datetime.now(UTC).timestamp()
        with ctx.records.session() as s:
            versions = s.exec(select(Version)).all()
        assert [v.id for v in versions] == [proposed["version_id"]]
    finally:
        for proc in (slow, replica):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)


async def test_nats_killed_and_restarted_loses_no_submitted_spec(
    ctx: AppContext, settings: Settings, nats_server: NatsServer
) -> None:
    names = [
        "oai-petstore-expanded.yaml",
        "twilio-insights-v2.json",
        "jupyter-server.swagger2.yaml",
    ]
    async with watching(nats_server.url) as (_, nc):
        for i, name in enumerate(names):
            blob = ctx.blobs.put((SPECS / name).read_bytes())
            ack = await submit(
                nc,
                SpecSubmitted(submission=f"n{i}", skill=f"skill-{i}", blob=blob, created_by="test"),
                f"submitted:n{i}",
            )
            assert ack.seq == i + 1
    nats_server.kill()  # SIGKILL: no clean shutdown, no flush
    nats_server.start()  # same store directory, new ports
    url = nats_server.url
    async with watching(url) as (watcher, _), workers(ctx, url):
        for i in range(len(names)):
            await watcher.wait_for(EVENTS.version_proposed, timeout=30, submission=f"n{i}")
    with ctx.records.session() as s:
        assert sorted(sk.slug for sk in s.exec(select(Skill)).all()) == [
            "skill-0",
            "skill-1",
            "skill-2",
        ]
        assert len(s.exec(select(Version)).all()) == 3


class _SpecServer:
    """A real HTTP server for a spec whose bytes (or failure) the test changes."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.status = 200
        self.api = FakeApi(
            lambda r: Reply(self.status, self.body, {"Content-Type": "application/yaml"})
        )
        self.url = f"{self.api.url}/openapi.yaml"

    @property
    def requests(self) -> int:
        return len(self.api.seen)

    def close(self) -> None:
        self.api.close()


@pytest.fixture
def spec_server() -> Iterator[_SpecServer]:
    server = _SpecServer((SPECS / "oai-petstore-expanded.yaml").read_bytes())
    yield server
    server.close()


async def test_a_refresh_proposes_a_changed_spec_and_raises_an_action_item_but_never_publishes(
    ctx: AppContext, settings: Settings, spec_server: _SpecServer
) -> None:
    assert settings.nats_url
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await submit(
            nc,
            SpecSubmitted(submission="u1", skill="pets", url=spec_server.url, created_by="test"),
            "submitted:u1",
        )
        first = await watcher.wait_for(EVENTS.version_proposed, submission="u1")
        await submit(
            nc, PublishVersion(skill="pets", version_id=first["version_id"], requested_by="test")
        )
        await watcher.wait_for(EVENTS.version_published)
        # Same bytes on the schedule: stops at fetch.
        await nc.jetstream().publish(
            COMMANDS.refresh_sources, RefreshSources(skill="pets").model_dump_json().encode()
        )
        await watcher.wait_for(EVENTS.revision_unchanged)
        # The spec changes: a new operation.
        spec_server.body = spec_server.body.replace(
            b"  /pets/{id}:",
            b"  /pets/{id}/toys:\n    get:\n      operationId: listToys\n"
            b"      parameters:\n        - {name: id, in: path, required: true, schema: {type: string}}\n"
            b"      responses:\n        '200': {description: toys}\n  /pets/{id}:",
        )
        await nc.jetstream().publish(
            COMMANDS.refresh_sources, RefreshSources(skill="pets").model_dump_json().encode()
        )
        second = await watcher.wait_for(
            EVENTS.version_proposed,
            created=True,
            summary={"added": 1, "removed": 0, "changed": 0, "files_changed": 4},
        )
    with ctx.records.session() as s:
        skill = s.exec(select(Skill).where(Skill.slug == "pets")).one()
        assert skill.live_version_id == first["version_id"], (
            "a refresh proposes; it never publishes"
        )
        items = s.exec(select(ActionItem)).all()
        revisions = s.exec(select(SourceRevision)).all()
    assert [(a.kind, a.version_id) for a in items] == [("refresh_proposal", second["version_id"])]
    assert f"skillpress publish pets {second['version_id'][:12]}" in items[0].message
    assert sorted(r.created_by for r in revisions) == ["schedule", "test"]
    assert spec_server.requests == 3


async def test_a_flaky_source_is_retried_spaced_then_dead_lettered(
    ctx: AppContext, settings: Settings, spec_server: _SpecServer
) -> None:
    assert settings.nats_url
    spec_server.status = 503
    async with watching(settings.nats_url) as (_, nc), workers(ctx, settings.nats_url):
        await submit(
            nc,
            SpecSubmitted(submission="f", skill="flaky", url=spec_server.url, created_by="test"),
            "submitted:f",
        )
        for _ in range(100):
            with ctx.records.session() as s:
                letters = s.exec(select(DeadLetter)).all()
            if letters:
                break
            await asyncio.sleep(0.1)
    assert len(letters) == 1
    assert letters[0].worker == "fetch" and letters[0].msg_id == "submitted:f"
    assert (
        letters[0].error
        == f"skillpress.platform.fetcher.FetchFailed: {spec_server.url} answered 503 (after 3 deliveries)"
    )
    assert spec_server.requests == settings.max_deliver == 3


async def test_a_handler_slower_than_ack_wait_is_not_handed_out_again(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.workers import delivery
    from tests.workers.slow_worker import slowed

    monkeypatch.setattr(delivery, "_through_outages", slowed(4.0))
    slow = settings.model_copy(update={"ack_wait": 1.5})
    ctx = open_app(slow)
    blob = ctx.blobs.put((SPECS / "twilio-insights-v2.json").read_bytes())
    event = SpecSubmitted(submission="slow", skill="insights", blob=blob, created_by="test")
    assert slow.nats_url
    async with (
        watching(slow.nats_url) as (watcher, nc),
        workers(ctx, slow.nats_url, ["fetch"]),
        workers(ctx, slow.nats_url, ["fetch"]),  # a replica, pulling while the first works
    ):
        await submit(nc, event, "submitted:slow")
        await watcher.wait_for(EVENTS.revision_stored, submission="slow")
        await asyncio.sleep(2)  # a redelivery, were there one, would be under way by now
        info = await nc.jetstream().consumer_info(STREAM, "fetch")
    ctx.records.close()
    assert info.delivered.consumer_seq == 1, "the handler said it was in progress: delivered once"
    stored = [b for s, b in watcher.seen if s == EVENTS.revision_stored]
    assert len(stored) == 1


async def test_a_message_whose_last_delivery_dies_with_its_worker_is_a_dead_letter(
    settings: Settings,
) -> None:
    from skillpress.app.base.context import open_app

    tight = settings.model_copy(update={"max_deliver": 2, "ack_wait": 2.0})
    assert tight.nats_url
    url = tight.nats_url
    ctx = open_app(tight)
    blob = ctx.blobs.put((SPECS / "oai-petstore-expanded.yaml").read_bytes())
    doomed = SpecSubmitted(submission="doomed", skill="petstore", blob=blob, created_by="test")
    try:
        async with watching(url) as (watcher, nc):
            await submit(nc, doomed, "submitted:doomed")
            for n in range(2):  # each delivery dies with the worker holding it
                slow, _ = _worker_process(tight, "fetch", SLOW_WORKER_DELAY="30")
                await _until_held(url, "fetch", deliveries=n + 1)
                slow.send_signal(signal.SIGKILL)
                slow.wait(10)
                await asyncio.sleep(tight.ack_wait + 0.5)
            letters: list[DeadLetter] = []
            async with workers(ctx, url, ["fetch"]):  # its next pull finds the deliveries spent
                for _ in range(200):
                    with ctx.records.session() as s:
                        letters = list(s.exec(select(DeadLetter)).all())
                    if letters:
                        break
                    await asyncio.sleep(0.1)
        assert [(d.subject, d.worker, d.msg_id) for d in letters] == [
            (EVENTS.spec_submitted, "fetch", "submitted:doomed")
        ]
        assert letters[0].error.startswith("exhausted: 2 deliveries, none acknowledged")
        assert json.loads(letters[0].payload)["submission"] == "doomed"
        assert EVENTS.revision_stored not in [s for s, _ in watcher.seen]
    finally:
        ctx.records.close()


async def test_messages_fetched_beyond_the_free_handlers_are_never_handed_out_twice(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#44.4: with SKILLPRESS_WORKER_CONCURRENCY above 1, a worker fetched more messages than it
    had free handlers and held them with no in-progress signal: past ack_wait JetStream handed
    them to a replica while the first still meant to run them (GitHub parsed twice at once).
    Every message a worker holds is one it is handling, and says so."""
    from skillpress.app.base.context import open_app
    from skillpress.workers import delivery
    from tests.workers.slow_worker import slowed

    slow = slowed(3.0)
    now, most = [0], [0]

    async def counted(*args: Any) -> Any:
        now[0] += 1
        most[0] = max(most[0], now[0])
        try:
            return await slow(*args)
        finally:
            now[0] -= 1

    monkeypatch.setattr(delivery, "_through_outages", counted)
    busy = settings.model_copy(update={"ack_wait": 1.5, "worker_concurrency": 2})
    ctx = open_app(busy)
    blob = ctx.blobs.put((SPECS / "twilio-insights-v2.json").read_bytes())
    assert busy.nats_url
    async with (
        watching(busy.nats_url) as (watcher, nc),
        workers(ctx, busy.nats_url, ["fetch"]),
        workers(ctx, busy.nats_url, ["fetch"]),  # a replica, pulling while the first works
    ):
        for i in range(6):
            event = SpecSubmitted(submission=f"c{i}", skill=f"s{i}", blob=blob, created_by="t")
            await submit(nc, event, f"submitted:c{i}")
        for i in range(6):
            await watcher.wait_for(EVENTS.revision_stored, timeout=60, submission=f"c{i}")
        await asyncio.sleep(2)  # a redelivery, were there one, would be under way by now
        info = await nc.jetstream().consumer_info(STREAM, "fetch")
    ctx.records.close()
    stored = sorted(b["submission"] for s, b in watcher.seen if s == EVENTS.revision_stored)
    assert stored == [f"c{i}" for i in range(6)], "each handled once"
    assert (info.delivered.consumer_seq, info.num_redelivered) == (6, 0)
    assert most[0] == 4, "two replicas, two messages each at once"


async def test_a_bug_in_a_stage_that_derives_is_a_dead_letter_at_once_and_ends_its_story(
    ctx: AppContext, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error a deriving stage did not foresee (Graph's TypeError) is a bug every try would
    meet: a dead letter at once, naming where it broke, never five spaced retries; and the
    submission's event stream ends there, saying what a person does next."""
    from skillpress.app.operator.submissions import Stopped, submission_events
    from skillpress.workers import parse as parse_worker

    def broken(ctx: AppContext, revision_id: str) -> Any:
        raise TypeError("unhashable type: 'list'")

    monkeypatch.setattr(parse_worker, "parse_revision", broken)
    assert settings.nats_url
    blob = ctx.blobs.put((SPECS / "twilio-insights-v2.json").read_bytes())
    event = SpecSubmitted(submission="bug", skill="insights", blob=blob, created_by="test")
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await submit(nc, event, "submitted:bug")
        for _ in range(200):
            with ctx.records.session() as s:
                letters = s.exec(select(DeadLetter)).all()
            if letters:
                break
            await asyncio.sleep(0.05)
        ended = []
        async for item in submission_events(nc, ctx, "insights", "bug", 1, heartbeat=0.3):
            ended.append(item)
        info = await nc.jetstream().consumer_info(STREAM, "parse")
    assert len(letters) == 1 and letters[0].worker == "parse"
    assert letters[0].error.startswith("a bug in parse: TypeError: unhashable type: 'list' (")
    assert "tests/workers/test_failures.py" not in letters[0].error  # skillpress's own frame
    assert info.delivered.consumer_seq == 1, "delivered once: no retries"
    last = ended[-1]
    assert isinstance(last, Stopped) and last.dead_letter == letters[0].id
    assert f"skillpress dead-letters --replay {letters[0].id}" in last.text
