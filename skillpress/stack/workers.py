"""The workers as the stack runs them: by name, against a NATS URL, until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from skillpress.app.base.context import AppContext

__all__ = ["embedded_pipeline", "run_workers", "worker_names"]


def worker_names() -> tuple[str, ...]:
    from skillpress.workers.app import WORKERS

    return tuple(WORKERS)


async def run_workers(
    ctx: AppContext,
    nats_url: str | Callable[[str], str],
    names: list[str],
    stop: asyncio.Event,
    ready: asyncio.Event | None = None,
    schedule: bool = False,
    wait_for_nats: bool = False,
) -> None:
    """Run the named workers until `stop` is set (the workers' composition root): against one
    NATS URL, or each role's (`nats_url(role)`: the embedded server's users, `nats_roles`)."""
    from skillpress.workers.app import serve_roles

    url_for = nats_url if callable(nats_url) else (lambda role: nats_url)
    await serve_roles(
        ctx, url_for, names, stop, ready, schedule=schedule, wait_for_nats=wait_for_nats
    )


@contextlib.asynccontextmanager
async def embedded_pipeline(ctx: AppContext) -> AsyncIterator[str]:
    """An embedded nats-server and every worker in this process for the duration: the pipeline a
    command line uses when none is configured or up (yields its NATS URL)."""
    from skillpress.app.base.bus import StackError
    from skillpress.platform.embedded_nats import NatsServer
    from skillpress.platform.local_processes import LocalServerError

    try:
        # started from this (the event loop's) thread: the server dies with the thread that
        # started it, and a pool thread may go before the pipeline does
        server = NatsServer(ctx.settings.nats_dir).start()
    except LocalServerError as exc:
        raise StackError(str(exc)) from None
    try:
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(
            run_workers(ctx, server.url_for, list(worker_names()), stop, ready)
        )
        waiter = asyncio.create_task(ready.wait())
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            waiter.cancel()
            task.result()  # raises what stopped the workers
        try:
            yield server.url
        finally:
            stop.set()
            await task
    finally:
        server.stop()
