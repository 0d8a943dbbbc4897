"""The pipeline on a 3-node JetStream cluster with replicated streams, PostgreSQL and S3: a dozen
shared specs submitted while the stream leader's node is SIGKILLed. Every submission reaches
exactly one end state, no version is made twice, work goes on under the new leader, and the
killed node rejoins and catches up."""

from __future__ import annotations

import asyncio
import json
import os
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
from skillpress.app.operator.submissions import stored_outcome
from skillpress.platform.broker import (
    StreamReplicasRefused,
    connect,
    ensure_stream,
    set_replicas,
)
from skillpress.platform.embedded_nats import NatsCluster, NatsServer
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import SourceRevision, Version
from skillpress.schemas.subjects import EVENTS, STREAM
from skillpress.workers.app import WORKERS
from tests.cli_process import skillpress
from tests.workers.conftest import SPECS, settings_env

pytestmark = pytest.mark.integration  # starts real servers

# the twelve smallest shared specs (every worker stage, a few seconds each on two cores)
DOZEN = sorted(
    (p for p in SPECS.iterdir() if p.suffix in (".json", ".yaml")), key=lambda p: p.stat().st_size
)[:12]


async def _publish(nc: object, event: SpecSubmitted) -> int:
    """Publish, retrying (same message id: deduplicated) while a new leader is elected."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return await send(nc, EVENTS.spec_submitted, event, f"submitted:{event.submission}")  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 (no leader for a moment: try again)
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def _leader(nc: object) -> str:
    info = await nc.jetstream().stream_info(STREAM)  # type: ignore[attr-defined]
    assert info.cluster is not None and info.cluster.leader
    return str(info.cluster.leader)


def test_a_replicated_pipeline_loses_nothing_when_the_stream_leader_dies(
    tmp_path: Path, stores: Callable[..., Settings]
) -> None:
    cluster = NatsCluster(tmp_path / "cluster", 3).start()
    settings = stores(
        cluster.url,
        stream_replicas=3,
        ack_wait=10.0,
        max_deliver=5,
        retry_delays=(0.5, 1.0, 2.0),
        fetch_allow_private=False,
    )
    env = settings_env(settings) | {"SKILLPRESS_STREAM_REPLICAS": "3"}
    ctx = open_app(settings)
    replicas: list[subprocess.Popen[bytes]] = []
    try:
        # two replicas of every worker: two processes, each running all of them
        logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
        for log in logs:
            with log.open("wb") as out:
                replicas.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "skillpress.cli.main", "worker", *WORKERS],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=out,
                    )
                )

        async def run() -> tuple[list[str], str, str]:
            nc = await connect(cluster.url, attempts=10)
            config = await ensure_stream(nc, 3)
            assert config.num_replicas == 3
            # the workers are up: every durable consumer exists
            js = nc.jetstream()
            consumers = {step.consumer for steps in WORKERS.values() for step in steps}
            for _ in range(120):
                found = {c.name for c in await js.consumers_info(STREAM)}
                if consumers <= found:
                    break
                await asyncio.sleep(0.5)
            assert consumers <= found, f"workers never subscribed: {sorted(consumers - found)}"
            submissions = []
            killed = ""
            for n, spec in enumerate(DOZEN):
                event = SpecSubmitted(
                    submission=uuid.uuid4().hex,
                    skill=f"c{n:02d}",
                    blob=await asyncio.to_thread(ctx.blobs.put, spec.read_bytes()),
                    created_by="cluster-test",
                )
                await _publish(nc, event)
                submissions.append(event.submission)
                if n == 3:  # a third of the way in, the stream leader's node dies
                    killed = await _leader(nc)
                    cluster.kill(int(killed.removeprefix("n")) - 1)
            new_leader = await _leader(nc)
            await nc.close()
            return submissions, killed, new_leader

        submissions, killed, new_leader = asyncio.run(run())
        assert new_leader != killed

        deadline = time.monotonic() + 240
        pending = set(submissions)
        while pending and time.monotonic() < deadline:
            for sub in sorted(pending):
                if stored_outcome(ctx, f"c{submissions.index(sub):02d}", sub) is not None:
                    pending.discard(sub)
            time.sleep(1)
        tails = "\n".join(log.read_text()[-3000:] for log in logs)
        assert not pending, f"{len(pending)} submissions reached no end state; workers:\n{tails}"

        with ctx.records.session() as s:
            per_submission = dict(
                s.exec(
                    select(SourceRevision.submission, func.count())
                    .where(col(SourceRevision.submission).in_(submissions))
                    .group_by(SourceRevision.submission)
                ).all()
            )
            versions = s.exec(
                select(Version.skill_id, func.count()).group_by(Version.skill_id)
            ).all()
        assert per_submission == dict.fromkeys(submissions, 1), "one revision per submission"
        assert all(count == 1 for _, count in versions), f"a version made twice: {versions}"

        # the killed node comes back, rejoins and catches up with the stream
        cluster.restart(int(killed.removeprefix("n")) - 1)

        async def caught_up() -> None:
            nc = await connect(cluster.url, attempts=10)
            try:
                for _ in range(120):
                    info = await nc.jetstream().stream_info(STREAM)
                    peers = info.cluster.replicas if info.cluster else []
                    if len(peers) == 2 and all(p.current and not p.offline for p in peers):
                        return
                    await asyncio.sleep(0.5)
                raise AssertionError(f"{killed} never caught up: {info.cluster}")
            finally:
                await nc.close()

        asyncio.run(caught_up())
    finally:
        for proc in replicas:
            proc.send_signal(signal.SIGTERM)
        for proc in replicas:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        ctx.close()
        cluster.stop()


def test_a_stream_asked_for_more_replicas_than_one_server_holds_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    server = NatsServer(tmp_path / "nats").start()

    async def run() -> tuple[str, str, int]:
        nc = await connect(server.url)
        try:
            await ensure_stream(nc, 1)
            await ensure_stream(nc, 3)  # a client's setting never changes an existing stream
            kept = (await nc.jetstream().stream_info(STREAM)).config.num_replicas or 0
            with pytest.raises(StreamReplicasRefused) as changed:
                await set_replicas(nc, 3)
        finally:
            await nc.close()
        fresh = NatsServer(tmp_path / "fresh").start()
        try:
            nc = await connect(fresh.url)
            with pytest.raises(StreamReplicasRefused) as created:
                await ensure_stream(nc, 3)
            await nc.close()
        finally:
            fresh.kill()
        return str(changed.value), str(created.value), kept

    try:
        changed, created, kept = asyncio.run(run())
    finally:
        server.kill()
    assert kept == 1
    assert changed.startswith("stream SKILLPRESS_EXHAUSTED has 1 replica and 3 were asked for")
    assert changed.endswith("run a cluster of at least 3 nodes, or keep 1")
    assert created.startswith(
        "stream SKILLPRESS_EXHAUSTED does not exist yet and SKILLPRESS_STREAM_REPLICAS asks for 3"
    )
    assert created.endswith("or set SKILLPRESS_STREAM_REPLICAS=1")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return skillpress(*args, env=env, replace_env=True)


def test_a_client_without_the_replicas_setting_never_lowers_a_clusters_streams(
    tmp_path: Path,
) -> None:
    """A client started without SKILLPRESS_STREAM_REPLICAS warns, naming both counts, and
    leaves the R3 streams at R3; only the operator's `streams --replicas` changes them, both ways,
    with one line and no traceback."""
    cluster = NatsCluster(tmp_path / "cluster", 3).start()
    base = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")} | {
        "SKILLPRESS_HOME": str(tmp_path / "home"),
        "SKILLPRESS_NATS_URL": cluster.url,
    }

    def counts() -> dict[str, int]:
        shown = _cli("streams", "--json", env=base)
        assert shown.returncode == 0, shown.stderr
        return {s["name"]: s["replicas"] for s in json.loads(shown.stdout)}

    try:
        made = _cli("streams", "--replicas", "3", "--json", env=base)
        assert made.returncode == 0, made.stderr
        everything = {STREAM: 3, f"{STREAM}_EXHAUSTED": 3, "KV_SKILLPRESS_LIVE": 3}
        assert counts() == everything
        spec = SPECS / "oai-petstore.swagger2.yaml"
        # the client: an import with no replicas setting, no worker to answer it
        plain = _cli("import", str(spec), "--skill", "pets", "--timeout", "1", env=base)
        assert plain.returncode == 1, plain.stderr
        assert "broker.stream_replicas_differ" in plain.stderr
        assert (
            "stream SKILLPRESS keeps 3 replicas and this client's SKILLPRESS_STREAM_REPLICAS is 1:"
            " left at 3 (a client never changes it; `skillpress streams --replicas 1` does)"
        ) in plain.stderr
        assert "Traceback" not in plain.stderr
        assert counts() == everything
        lowered = _cli("streams", "--replicas", "1", env=base)
        assert lowered.returncode == 0, lowered.stderr
        assert counts() == dict.fromkeys(everything, 1)
        raised = _cli("streams", "--replicas", "3", env=base)
        assert raised.returncode == 0, raised.stderr
        assert "Traceback" not in raised.stderr
        assert raised.stdout.splitlines()[0].startswith(f"{STREAM}: 3 replicas on n")
        assert counts() == everything
    finally:
        cluster.stop()


def test_a_worker_started_while_the_cluster_has_no_quorum_waits_and_starts_when_it_returns(
    tmp_path: Path,
) -> None:
    """A worker that meets a JetStream that does not answer (two of three nodes down; or a
    cluster just formed, whose consumers' groups have no leader yet) waits, one line each try,
    and starts once it answers: never a traceback and an exit, as it did on a fresh cluster."""
    cluster = NatsCluster(tmp_path / "cluster", 3).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")} | {
        "SKILLPRESS_HOME": str(tmp_path / "home"),
        "SKILLPRESS_NATS_URL": cluster.url,
        "SKILLPRESS_STREAM_REPLICAS": "3",
    }
    log = tmp_path / "worker.log"
    worker: subprocess.Popen[bytes] | None = None

    def wait_for(text: str, within: float) -> str:
        until = time.monotonic() + within  # a hang guard, not a timing
        while time.monotonic() < until:
            said = log.read_text(errors="replace")
            if text in said:
                return said
            assert worker is not None and worker.poll() is None, said[-3000:]
            time.sleep(0.2)
        raise AssertionError(f"no {text!r} in {within:g} s:\n{log.read_text()[-3000:]}")

    try:
        made = _cli("streams", "--replicas", "3", env=env)
        assert made.returncode == 0, made.stderr
        cluster.kill(1)
        cluster.kill(2)
        with log.open("wb") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "skillpress.cli.main", "worker", "parse"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for("workers.waiting_for_jetstream", 60)
        assert "workers.started" not in log.read_text()
        cluster.restart(1)
        cluster.restart(2)
        said = wait_for("workers.started", 120)
        assert worker.poll() is None and "Traceback" not in said, said[-3000:]
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(20)
        cluster.stop()


def test_the_api_with_two_of_three_nodes_down_is_not_ready_and_answers_a_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#57.1 and #57.2 on a real 3-node cluster with R3 streams: with two nodes SIGKILLed the
    API's /readyz is 503 naming JetStream (the issue saw 200 "nats: ok") and a submission is a
    503 with Retry-After (the issue saw 500 NoStreamResponseError); the nodes back, it is ready
    and the same submission is taken."""
    from fastapi.testclient import TestClient

    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators
    from skillpress.app.base import bus

    monkeypatch.setattr(bus, "SEND_PATIENCE", 2.0)  # the face's wait, shortened (10 s)
    cluster = NatsCluster(tmp_path / "cluster", 3).start()
    # the API on the node that stays up: what is asked is the stream's quorum, not the
    # client's failover (a connection to a killed node reconnecting reads as down, truthfully)
    survivor = cluster.urls[0]
    settings = Settings(home=tmp_path / "home", nats_url=survivor, stream_replicas=3)
    ctx = open_app(settings)
    operators = load_operators(settings.home, None, "127.0.0.1")
    auth = {"Authorization": f"Bearer {operators.generated}"}
    spec = (SPECS / "oai-petstore-expanded.yaml").read_bytes()
    files = {"file": ("petstore.yaml", spec, "application/yaml")}

    def ready_status(client: TestClient, want: int) -> dict[str, str]:
        until = time.monotonic() + 90  # a hang guard: an election takes seconds
        while True:
            said = client.get("/readyz")
            if said.status_code == want or time.monotonic() > until:
                assert said.status_code == want, said.text
                return dict(said.json()["checks"])
            time.sleep(0.5)

    try:
        with TestClient(create_app(ctx, operators, survivor)) as client:
            assert ready_status(client, 200)["nats"] == "ok"
            cluster.kill(1)
            cluster.kill(2)
            down = ready_status(client, 503)
            assert down["nats"] in (  # asked while it elects, or once a replica answers
                "JetStream does not answer for its stream SKILLPRESS (TimeoutError): a cluster"
                " electing its leader, or without a quorum",
                "JetStream's stream SKILLPRESS has no leader: a cluster electing one, or without"
                " a quorum",
            ), down
            waited = client.post("/v1/skills", data={"slug": "pets"}, files=files, headers=auth)
            assert waited.status_code == 503, waited.text
            assert waited.headers["Retry-After"] == "5"
            assert "JetStream did not take the message" in waited.json()["detail"]
            cluster.restart(1)
            cluster.restart(2)
            assert ready_status(client, 200)["nats"] == "ok"
            until = time.monotonic() + 60  # the leader elected, the stream takes it
            while True:
                taken = client.post("/v1/skills", data={"slug": "pets"}, files=files, headers=auth)
                if taken.status_code == 202 or time.monotonic() > until:
                    break
                assert taken.status_code == 503, taken.text  # a wait, never a 500
                time.sleep(1)
            assert taken.status_code == 202, taken.text
    finally:
        ctx.close()
        cluster.stop()
