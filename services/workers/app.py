"""The composition root: which workers exist, and running any of them against one NATS."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from faststream.nats import NatsBroker

from schemas.events import RefreshSources
from schemas.subjects import COMMANDS
from services.app.context import AppContext
from services.platform.broker import connect, ensure_stream
from services.platform.logging import get_logger
from services.workers import categorize, fetch, guess_approvals, parse, publish, refresh, render
from services.workers.delivery import Outgoing, Step, publish_all, subscribe

__all__ = ["WORKERS", "serve_workers"]

WORKERS: dict[str, tuple[Step, ...]] = {
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
            [Outgoing(COMMANDS["refresh_sources"], RefreshSources(), f"refresh-slot:{slot}")],
        )
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except TimeoutError:
            pass


async def serve_workers(
    ctx: AppContext,
    nats_url: str,
    names: Iterable[str],
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
    schedule: bool = False,
) -> None:
    """Run the named workers until `stop` is set; each is a durable consumer shared with replicas."""
    names = list(names)
    unknown = [n for n in names if n not in WORKERS]
    if unknown:
        raise ValueError(f"unknown worker {unknown[0]!r}: choose from {', '.join(WORKERS)}")
    nc = await connect(nats_url)
    try:
        await ensure_stream(nc)
    finally:
        await nc.close()
    broker = NatsBroker(nats_url, logger=None, connect_timeout=5)
    for name in names:
        for step in WORKERS[name]:
            subscribe(broker, ctx, step)
    log = get_logger("workers", workers=names, nats=nats_url)
    await broker.start()
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
        await broker.stop()
        log.info("workers.stopped")
