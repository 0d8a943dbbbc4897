"""Chaos: a dozen real specs through two replicas of every worker (separate processes) while
workers are SIGKILLed at random moments and the nats-server is SIGKILLed and started again once.
Every submission reaches exactly one end state (a version, or a recorded refusal), none twice,
nothing is lost silently (an exhausted message is a dead letter, and replaying it finishes the
job), and nothing is left running."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import col, func, select

from skillpress.app.base.bus import send
from skillpress.app.base.context import open_app
from skillpress.app.operator.dispatch import replay_dead_letters
from skillpress.app.operator.submissions import stored_outcome
from skillpress.platform.broker import connect, ensure_stream
from skillpress.platform.embedded_nats import NatsServer, free_port
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import DeadLetter, SourceRevision, Version
from skillpress.schemas.subjects import EVENTS, STREAM
from skillpress.workers.app import WORKERS
from tests.workers.conftest import SPECS, settings_env

pytestmark = pytest.mark.integration  # starts real servers

DOZEN = sorted(
    (p for p in SPECS.iterdir() if p.suffix in (".json", ".yaml")), key=lambda p: p.stat().st_size
)[:12]


def _worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "skillpress.cli.main", "worker", *WORKERS],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
            start_new_session=True,
        )


def _ours(home: Path) -> list[int]:
    """Processes still running that belong to this test (its workers, its nats-server)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                cmd = (d / "cmdline").read_bytes().decode(errors="replace")
                env = (d / "environ").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(home) in cmd or f"SKILLPRESS_HOME={home}" in env:
                found.append(int(d.name))
    return found


def test_random_sigkills_and_a_nats_restart_lose_nothing_and_double_nothing(
    tmp_path: Path, stores: Callable[..., Settings]
) -> None:
    port = free_port()
    nats = NatsServer(tmp_path / "nats").start(port=port)
    settings = stores(
        nats.url,
        ack_wait=4.0,
        max_deliver=4,
        retry_delays=(0.3, 0.6, 1.2),
        fetch_allow_private=False,
    )
    env = settings_env(settings)
    ctx = open_app(settings)
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    procs = [_worker(env, log) for log in logs]
    chance = random.Random(20261201)
    submissions: dict[str, str] = {}  # submission → skill
    try:

        async def submit(specs: list[tuple[int, Path]]) -> None:
            nc = await connect(nats.url, attempts=20)
            await ensure_stream(nc)
            if not submissions:  # the workers are up: every durable consumer exists
                js = nc.jetstream()
                wanted = {step.consumer for steps in WORKERS.values() for step in steps}
                for _ in range(120):
                    if wanted <= {c.name for c in await js.consumers_info(STREAM)}:
                        break
                    await asyncio.sleep(0.5)
            for n, spec in specs:
                event = SpecSubmitted(
                    submission=uuid.uuid4().hex,
                    skill=f"x{n:02d}",
                    blob=await asyncio.to_thread(ctx.blobs.put, spec.read_bytes()),
                    created_by="chaos",
                )
                await send(nc, EVENTS.spec_submitted, event, f"submitted:{event.submission}")
                submissions[event.submission] = event.skill
            await nc.close()

        def ended() -> set[str]:
            return {s for s, skill in submissions.items() if stored_outcome(ctx, skill, s)}

        def kill_a_worker() -> None:
            victim = chance.randrange(len(procs))
            os.killpg(procs[victim].pid, signal.SIGKILL)
            procs[victim].wait(10)
            procs[victim] = _worker(env, logs[victim])

        half = len(DOZEN) // 2
        asyncio.run(submit(list(enumerate(DOZEN))[:half]))
        time.sleep(chance.uniform(0.3, 1.0))
        kill_a_worker()
        nats.kill()  # mid-work: the nats-server dies and comes back on its port and store
        time.sleep(1.0)
        nats.start(port=port)
        asyncio.run(submit(list(enumerate(DOZEN))[half:]))
        kills = 1
        started = time.monotonic()
        while time.monotonic() - started < 30 and (kills < 4 or len(ended()) < len(submissions)):
            time.sleep(chance.uniform(0.5, 2.0))
            kill_a_worker()
            kills += 1
        assert kills >= 4

        # calm: the work finishes; what ran out of deliveries is a dead letter, replayed once
        deadline = time.monotonic() + 150
        replayed = False
        while time.monotonic() < deadline and len(ended()) < len(submissions):
            time.sleep(1.0)
            if not replayed and time.monotonic() > deadline - 100:
                with ctx.records.session() as s:
                    letters = s.exec(select(func.count()).select_from(DeadLetter)).one()
                if letters:
                    replay_dead_letters(ctx, None)
                replayed = True
        missing = set(submissions) - ended()
        tails = "\n".join(log.read_text()[-2000:] for log in logs)
        assert not missing, f"{len(missing)} submissions never ended:\n{tails}"

        with ctx.records.session() as s:
            revisions = dict(
                s.exec(
                    select(SourceRevision.submission, func.count())
                    .where(col(SourceRevision.submission).in_(list(submissions)))
                    .group_by(SourceRevision.submission)
                ).all()
            )
            versions = s.exec(
                select(Version.skill_id, func.count()).group_by(Version.skill_id)
            ).all()
        assert revisions == dict.fromkeys(submissions, 1), "exactly one revision per submission"
        assert all(count == 1 for _, count in versions), f"a version made twice: {versions}"
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        nats.stop()
        ctx.close()
    assert _ours(tmp_path) == [], "a worker or nats-server outlived the test"
