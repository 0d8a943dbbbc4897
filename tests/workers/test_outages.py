"""Outages that heal: the network to PostgreSQL or to S3 cut under running workers and mended.
A message waits for its dependency in place (its deliveries unspent) and goes through when it
is back; one whose dependency stays away past the outage limit is a dead letter saying so."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sqlmodel import select

from skillpress.app.base.context import AppContext, blob_store, open_app
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import DeadLetter, Version
from skillpress.schemas.subjects import EVENTS, STREAM
from tests.local_servers import Cable, PostgresServer
from tests.servers import ServerPool
from tests.workers.conftest import SPECS, migrated, submit, watching, workers

pytestmark = pytest.mark.integration  # starts real servers

SPEC = "oai-petstore-expanded.yaml"
# two messages at once per worker, as compose and the manifests run them (#44.4)
OUTAGE = {"outage_delays": (0.5, 1.0), "outage_limit": 60.0, "worker_concurrency": 2}


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.rsplit("@", 1)[-1].lstrip("/"), int(port.split("/", 1)[0])


@pytest.fixture
def cables() -> Iterator[list[Cable]]:
    made: list[Cable] = []
    yield made
    for cable in made:
        cable.cut()


def _cable(cables: list[Cable], address: str) -> Cable:
    cable = Cable(*_host_port(address)).mend()
    cables.append(cable)
    return cable


def _outage_waits() -> float:
    """How many times, so far, a stage of this process waited for a dependency (the workers'
    own count of it, `skillpress_outage_waits_total`, every stage)."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "skillpress_outage_waits"
        for sample in metric.samples
        if sample.name == "skillpress_outage_waits_total"
    )


async def _waited(waits: float) -> None:
    """Until the workers' count of waits for a dependency reaches `waits` (a hang guard of 60 s:
    the outage schedule here is 0.5 s, then 1 s)."""
    async with asyncio.timeout(60):
        while _outage_waits() < waits:
            await asyncio.sleep(0.05)


async def _outage(
    ctx: AppContext, url: str, cable: Cable, waits: int, submission: str
) -> tuple[list[DeadLetter], int, list[str]]:
    """Submit with `cable` cut, mend it once the workers have waited for it `waits` times (each
    wait a try that met the outage: the message is held through them), wait for the proposal;
    the dead letters, the deliveries the fetch consumer made and the events seen."""
    blob = ctx.blobs.put((SPECS / SPEC).read_bytes())
    event = SpecSubmitted(submission=submission, skill="petstore", blob=blob, created_by="test")
    async with watching(url) as (watcher, nc), workers(ctx, url):
        before = _outage_waits()
        cable.cut()
        await submit(nc, event, f"submitted:{submission}")
        await _waited(before + waits)
        assert EVENTS.version_proposed not in [s for s, _ in watcher.seen]
        cable.mend()
        await watcher.wait_for(EVENTS.version_proposed, timeout=30, submission=submission)
        delivered = (await nc.jetstream().consumer_info(STREAM, "fetch")).delivered.consumer_seq
        seen = [s for s, _ in watcher.seen]
    with ctx.records.session() as s:
        letters = list(s.exec(select(DeadLetter)).all())
    return letters, delivered, seen


async def test_the_records_cut_and_mended_lose_no_submission(
    nats_server: NatsServer,
    database_url: str,
    stores: Callable[..., Settings],
    cables: list[Cable],
) -> None:
    cable = _cable(cables, database_url)
    host, port = _host_port(database_url)
    via = database_url.replace(f"{host}:{port}", f"127.0.0.1:{cable.port}", 1)
    settings = stores(nats_server.url, database_url=via, **OUTAGE)
    ctx = open_app(settings)
    try:
        letters, delivered, _ = await _outage(ctx, nats_server.url, cable, 3, "pg")
        with ctx.records.session() as s:
            assert len(s.exec(select(Version)).all()) == 1
    finally:
        ctx.records.close()
    assert letters == []
    assert delivered == 1, "the fetch worker held its message through the outage"


async def test_the_blob_store_cut_and_mended_loses_no_submission(
    nats_server: NatsServer,
    s3_server: tuple[str, str, str],
    stores: Callable[..., Settings],
    cables: list[Cable],
) -> None:
    cable = _cable(cables, s3_server[0])
    settings = stores(nats_server.url, s3_endpoint=f"127.0.0.1:{cable.port}", **OUTAGE)
    ctx = open_app(settings)
    try:
        letters, delivered, _ = await _outage(ctx, nats_server.url, cable, 3, "s3")
    finally:
        ctx.records.close()
    assert letters == []
    assert delivered == 1


async def test_a_dependency_gone_past_the_outage_limit_is_a_dead_letter_saying_so(
    nats_server: NatsServer,
    s3_server: tuple[str, str, str],
    stores: Callable[..., Settings],
    cables: list[Cable],
) -> None:
    cable = _cable(cables, s3_server[0])
    settings = stores(
        nats_server.url,
        s3_endpoint=f"127.0.0.1:{cable.port}",
        outage_delays=(0.5,),
        outage_limit=2.0,
    )
    ctx = open_app(settings)
    url = nats_server.url
    try:
        # put by another process (the CLI's), so the workers' own cache does not hold it
        blob = blob_store(settings.model_copy(update={"blob_cache_mb": 0})).put(
            (SPECS / SPEC).read_bytes()
        )
        event = SpecSubmitted(submission="gone", skill="petstore", blob=blob, created_by="test")
        letters: list[DeadLetter] = []
        async with watching(url) as (_, nc), workers(ctx, url):
            cable.cut()
            await submit(nc, event, "submitted:gone")
            for _ in range(200):
                with ctx.records.session() as s:
                    letters = list(s.exec(select(DeadLetter)).all())
                if letters:
                    break
                await asyncio.sleep(0.1)
            delivered = (await nc.jetstream().consumer_info(STREAM, "fetch")).delivered
    finally:
        ctx.records.close()
    assert [(d.worker, d.msg_id) for d in letters] == [("fetch", "submitted:gone")]
    assert letters[0].error.startswith(  # the workers' first word with S3: is the bucket there
        f"BlobStoreUnavailable: S3 at 127.0.0.1:{cable.port} is unreachable during bucket check:"
    ), letters[0].error
    assert letters[0].error.endswith(
        "(waited 2 s for it; the limit is SKILLPRESS_OUTAGE_LIMIT=2 s)"
    ), letters[0].error
    assert delivered.consumer_seq == 1


def _own_postgres(pool: ServerPool) -> PostgresServer:
    """A PostgreSQL of this test's own, to stop and start (in the pool's folder, which the
    server's unprivileged user can reach)."""
    server = PostgresServer(Path(tempfile.mkdtemp(prefix="pg-", dir=pool.base))).start()
    migrated(server.url)
    return server


async def _import_process(settings: Settings, *args: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "SKILLPRESS_HOME": str(settings.home),
        "SKILLPRESS_NATS_URL": settings.nats_url or "",
        "SKILLPRESS_DATABASE_URL": settings.database_url or "",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "skillpress.cli.main",
        "import",
        str(SPECS / SPEC),
        "--skill",
        "petstore",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_postgresql_restarted_under_a_waiting_import_is_waited_through(
    nats_server: NatsServer, tmp_path: Path, server_pool: ServerPool
) -> None:
    """The drill an operator runs: PostgreSQL restarted while `skillpress import` waits for its
    story, with the workers meeting it down. The import waits it out and ends as it would have,
    its first line the submission id, no traceback; the workers hold the message meanwhile."""
    pg = _own_postgres(server_pool)
    settings = Settings(
        home=tmp_path / "home", nats_url=nats_server.url, database_url=pg.url, **OUTAGE
    )
    ctx = open_app(settings)
    try:
        async with watching(nats_server.url) as (watcher, nc):
            proc = await _import_process(settings)
            submitted = await watcher.wait_for(EVENTS.spec_submitted, timeout=60)
            pg.stop()  # the import now waits with its records gone, and no worker has run yet
            before = _outage_waits()
            async with workers(ctx, nats_server.url):
                await _waited(before + 3)  # the workers meet PostgreSQL down, the import polls it
                assert EVENTS.revision_stored not in [s for s, _ in watcher.seen]
                pg.start()
                out, err = await asyncio.wait_for(proc.communicate(), 90)
            delivered = (await nc.jetstream().consumer_info(STREAM, "fetch")).delivered
        with ctx.records.session() as s:
            versions = s.exec(select(Version)).all()
            letters = s.exec(select(DeadLetter)).all()
    finally:
        ctx.records.close()
        pg.stop()
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 0, err.decode()
    assert lines[0] == f"submission {submitted['submission']} (petstore)"
    assert "Traceback" not in err.decode(), err.decode()
    assert out.decode().startswith(f"proposed petstore version {versions[0].id[:12]};")
    assert (len(versions), letters, delivered.consumer_seq) == (1, [], 1)


async def test_postgresql_gone_under_a_waiting_import_ends_it_in_one_line_with_its_id(
    nats_server: NatsServer, tmp_path: Path, server_pool: ServerPool
) -> None:
    """PostgreSQL stopped under a waiting import and not back before its --timeout: one line
    naming the submission to look for, never a SQLAlchemy traceback."""
    pg = _own_postgres(server_pool)
    settings = Settings(home=tmp_path / "home", nats_url=nats_server.url, database_url=pg.url)
    open_app(settings).records.close()  # the schema, as an operator's stack has it
    try:
        async with watching(nats_server.url) as (watcher, _):
            proc = await _import_process(settings, "--timeout", "6")
            submitted = await watcher.wait_for(EVENTS.spec_submitted, timeout=60)
            pg.stop()
            out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        pg.stop()
    submission = submitted["submission"]
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1, err.decode()
    assert lines[0] == f"submission {submission} (petstore)"
    assert lines[-1].startswith("error: "), lines
    assert lines[-1].endswith(f"(submission {submission}: skillpress status {submission})")
    assert len(lines) <= 3 and "Traceback" not in err.decode(), err.decode()
    assert out == b""
