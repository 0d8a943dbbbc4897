"""Where the CLI finds the pipeline: a configured NATS, a running `skillpress up`, or one it starts.

With `SKILLPRESS_NATS_URL` set, workers run elsewhere (`skillpress worker NAME`). Without it,
a `skillpress up` in another terminal is found through `<home>/up.json`; failing that, the
command starts the embedded nats-server and runs every worker in-process for its duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from services.platform.localstack import LocalServerError, NatsServer
from services.platform.settings import Settings
from services.workers.app import WORKERS, make_context, serve_workers
from services.workers.delivery import WorkerContext

__all__ = ["Pipeline", "StackError", "running_up", "write_up_marker", "with_pipeline"]

T = TypeVar("T")


class StackError(Exception):
    """No NATS to talk to; the message says how to get one."""


@dataclass
class Pipeline:
    ctx: WorkerContext
    nats_url: str
    mode: str  # configured | up | embedded


def _marker(settings: Settings) -> Path:
    return settings.home / "up.json"


def write_up_marker(settings: Settings, nats_url: str) -> Path:
    path = _marker(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"nats_url": nats_url, "pid": os.getpid()}))
    return path


def running_up(settings: Settings) -> str | None:
    """The NATS URL of a live `skillpress up` on this home, if one is running."""
    path = _marker(settings)
    try:
        info = json.loads(path.read_text())
        os.kill(int(info["pid"]), 0)
        return str(info["nats_url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.asynccontextmanager
async def _in_process_workers(ctx: WorkerContext, url: str) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve_workers(ctx, url, list(WORKERS), stop, ready))
    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        task.result()  # raises what stopped the workers
    try:
        yield
    finally:
        stop.set()
        await task


def with_pipeline(settings: Settings, work: Callable[[Pipeline], Awaitable[T]]) -> T:
    """Run `work` against the pipeline, starting an embedded one when none is configured or up."""
    ctx = make_context(settings)
    try:
        if settings.nats_url:
            return asyncio.run(work(Pipeline(ctx, settings.nats_url, "configured")))
        url = running_up(settings)
        if url:
            return asyncio.run(work(Pipeline(ctx, url, "up")))
        try:
            server = NatsServer(settings.nats_dir).start()
        except LocalServerError as exc:
            raise StackError(str(exc)) from None
        try:

            async def embedded() -> T:
                async with _in_process_workers(ctx, server.url):
                    return await work(Pipeline(ctx, server.url, "embedded"))

            return asyncio.run(embedded())
        finally:
            server.stop()
    finally:
        ctx.records.close()
