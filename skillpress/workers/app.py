"""The composition root: which workers exist, and running any of them against one NATS."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from faststream.nats import NatsBroker
from nats.aio.client import Client

from skillpress.app.base.context import AppContext
from skillpress.platform.broker import (
    BrokerUnavailable,
    broker_options,
    connect,
    ensure_stream,
    nats_options,
    patiently,
    server_list,
    shown_url,
    stop_broker,
)
from skillpress.platform.logging import get_logger
from skillpress.platform.native_heap import bound_arenas
from skillpress.platform.nats_roles import role_of_worker
from skillpress.platform.tracing import start_tracing, stop_tracing, tracing_started
from skillpress.schemas.events import RefreshSources
from skillpress.schemas.subjects import COMMANDS, STREAM
from skillpress.workers import (
    categorize,
    fetch,
    guess_approvals,
    parse,
    publish,
    refresh,
    render,
)
from skillpress.workers.delivery import (
    Outgoing,
    Step,
    publish_all,
    subscribe,
    subscribe_exhausted,
)
from skillpress.workers.probes import Watched, listen_probes, serve_probes

__all__ = ["WORKERS", "serve_roles", "serve_workers"]

JETSTREAM_PATIENCE = 60.0  # s a worker waits, starting, for JetStream to answer for its consumers

WORKERS: dict[str, tuple[Step[Any], ...]] = {
    "fetch": (fetch.STEP,),
    "parse": (parse.STEP,),
    "categorize": (categorize.STEP,),
    "guess-approvals": (guess_approvals.STEP,),
    "render": (render.STEP, render.STEP_ANNOTATIONS),
    "publish": (publish.STEP,),
    "refresh": (refresh.STEP,),
}


async def _schedule_refresh(broker: NatsBroker, interval: float, stop: asyncio.Event) -> None:
    """Ask for a refresh every `interval` seconds; the id names the slot, so several schedulers
    (one per `up`) ask once per slot."""
    while not stop.is_set():
        slot = int(time.time() // interval)
        await publish_all(
            broker,
            [Outgoing(COMMANDS.refresh_sources, RefreshSources(), f"refresh-slot:{slot}")],
        )
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except TimeoutError:
            pass


async def serve_roles(
    ctx: AppContext,
    url_for: Callable[[str], str],
    names: Iterable[str],
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
    schedule: bool = False,
    wait_for_nats: bool = False,
) -> None:
    """Run the named workers until `stop` is set, each role's on a connection of that role's
    NATS user (`url_for(role)`: `nats_roles`, the publish stage's apart from the others'); the
    refresh schedule runs beside the first group. One group that stops with an error stops the
    rest (`stop` is set) and its error is raised."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(role_of_worker(name), []).append(name)
    if not groups:
        raise ValueError("no worker named")
    bound_arenas()  # before the steps' threads: a long-lived process stays level (native_heap)
    readies = {role: asyncio.Event() for role in groups}
    # one probe server for the process, over every role's connection
    watched = Watched(expected=len(groups))
    # listening before any worker starts: a taken port refuses the process, never runs it blind
    listening = await listen_probes(ctx, watched) if ctx.settings.probe_port is not None else None
    # one trace resource for the process, naming every stage it runs whichever role starts first,
    # stopped once every role's last spans are in
    start_tracing("worker", tuple(name for group in groups.values() for name in group))
    tasks = [
        asyncio.create_task(
            serve_workers(
                ctx,
                url_for(role),
                group,
                stop,
                readies[role],
                schedule=schedule and n == 0,
                wait_for_nats=wait_for_nats,
                role=role,
                watched=watched,
            )
        )
        for n, (role, group) in enumerate(groups.items())
    ]
    probes_end = asyncio.Event()
    if listening is not None:
        tasks.append(asyncio.create_task(serve_probes(listening, probes_end)))

    async def all_ready() -> None:
        for event in readies.values():
            await event.wait()
        if ready is not None:
            ready.set()

    announcing = asyncio.create_task(all_ready())
    try:
        workers = tasks[: len(groups)]
        done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        failed = [t for t in done if t.exception() is not None]
        if failed:
            stop.set()
            await asyncio.gather(*workers, return_exceptions=True)
            raise failed[0].exception()  # type: ignore[misc]
        await asyncio.gather(*workers)
    finally:
        announcing.cancel()
        stop_tracing()
        probes_end.set()  # the probes answer as long as the workers run
        await asyncio.gather(*tasks[len(groups) :], return_exceptions=True)


async def serve_workers(
    ctx: AppContext,
    nats_url: str,
    names: Iterable[str],
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
    schedule: bool = False,
    wait_for_nats: bool = False,
    role: str | None = None,
    watched: Watched | None = None,
) -> None:
    """Run the named workers until `stop` is set; each is a durable consumer shared with replicas.
    `wait_for_nats`: a NATS that cannot be reached yet is waited for (with backoff, a log line
    each try) rather than fatal, and a stop while waiting ends cleanly. `role`: the NATS user's
    (`nats_roles`); a stage's leaves the live bucket alone. `watched`: the process's probes,
    told this connection and its consumers (None: these workers answer probes of their own,
    when SKILLPRESS_PROBE_PORT is set)."""
    names = list(names)
    unknown = [n for n in names if n not in WORKERS]
    if unknown:
        raise ValueError(f"unknown worker {unknown[0]!r}: choose from {', '.join(WORKERS)}")
    log = get_logger("workers", workers=names, nats=shown_url(nats_url))
    delay = 0.5
    while True:
        try:
            nc = await connect(nats_url, options=nats_options(ctx.settings, nats_url))
            break
        except BrokerUnavailable as exc:
            if not wait_for_nats:
                raise
            log.warning("workers.waiting_for_nats", error=str(exc), retry_in=delay)
            try:
                await asyncio.wait_for(stop.wait(), timeout=delay)
                log.info("workers.stopped")
                return
            except TimeoutError:
                delay = min(delay * 2, 10.0)
    consumers = [step.consumer for name in names for step in WORKERS[name]]
    probes, probes_end = None, asyncio.Event()  # the probes answer as long as the workers run
    if watched is not None:
        watched.add(role or "workers", lambda: nc, consumers)
    elif ctx.settings.probe_port is not None:
        own = Watched()
        own.add(role or "workers", lambda: nc, consumers)
        try:
            listening = await listen_probes(ctx, own)
        except BaseException:
            await nc.close()
            raise
        probes = asyncio.create_task(serve_probes(listening, probes_end))
    try:
        await _serve(ctx, nc, nats_url, names, stop, ready, schedule, role != "stage")
    finally:
        if probes is not None:
            probes_end.set()
            await asyncio.gather(probes, return_exceptions=True)
        await nc.close()


async def _serve(
    ctx: AppContext,
    nc: Client,
    nats_url: str,
    names: list[str],
    stop: asyncio.Event,
    ready: asyncio.Event | None,
    schedule: bool,
    bucket: bool,
) -> None:
    log = get_logger("workers", workers=names, nats=shown_url(nats_url))

    def waiting(error: str) -> None:
        log.warning("workers.waiting_for_jetstream", error=error, retry_in=0.5)

    # a cluster without a quorum does not answer for its streams; one just formed answers for
    # them before their consumers' groups have leaders: either is waited for, a line each try
    await ensure_stream(nc, ctx.settings.stream_replicas, JETSTREAM_PATIENCE, waiting, bucket)
    js = nc.jetstream()

    async def original(seq: int) -> tuple[str, bytes, dict[str, str]]:
        raw = await js.get_msg(STREAM, seq)
        return raw.subject or "", raw.data or b"", dict(raw.headers or {})

    # a process of several roles started it for all of them (serve_roles): it stops it too
    owned = not tracing_started()
    tracer_provider = start_tracing("worker", tuple(names))  # None: no OTLP endpoint
    middlewares: list[Any] = []
    if tracer_provider is not None:
        from faststream.nats.opentelemetry import NatsTelemetryMiddleware

        middlewares.append(NatsTelemetryMiddleware(tracer_provider=tracer_provider))

    async def started() -> NatsBroker:
        broker = NatsBroker(
            server_list(nats_url),
            logger=None,
            connect_timeout=5,
            middlewares=middlewares,
            **broker_options(ctx.settings, nats_url),
        )
        for name in names:
            for step in WORKERS[name]:
                subscribe(broker, ctx, step)
        subscribe_exhausted(broker, ctx, original)
        try:
            await broker.start()
        except BaseException:
            with contextlib.suppress(Exception):  # its consumers half made: none of it is kept
                await broker.stop()
            raise
        return broker

    broker = await patiently(started, JETSTREAM_PATIENCE, waiting)
    scheduler = None
    if schedule and ctx.settings.refresh_interval > 0:
        scheduler = asyncio.create_task(
            _schedule_refresh(broker, ctx.settings.refresh_interval, stop)
        )
    log.info("workers.started")
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        if scheduler is not None:
            scheduler.cancel()
        await stop_broker(broker, "workers")
        if owned:
            stop_tracing()
        log.info("workers.stopped")
