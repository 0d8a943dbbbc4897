"""The JetStream streams skillpress keeps: how many copies each has, and the operator's change.

Every client makes the streams it needs when they are missing, but only `set_stream_replicas`
changes an existing stream's replica count: a client started without SKILLPRESS_STREAM_REPLICAS
must never bring a cluster's R3 streams down to one copy.
"""

from __future__ import annotations

import asyncio

from skillpress.app.base.bus import running_up
from skillpress.app.base.context import AppContext
from skillpress.errors import Refused
from skillpress.platform.broker import StreamState

__all__ = ["StreamState", "stream_replicas"]


def _nats_url(ctx: AppContext) -> str:
    url = ctx.settings.nats_url or running_up(ctx.settings)
    if not url:
        raise Refused(
            "no NATS to ask: set SKILLPRESS_NATS_URL (or start `skillpress up`); the embedded"
            " server keeps one copy of each stream"
        )
    return url


def stream_replicas(ctx: AppContext, replicas: int | None = None) -> list[StreamState]:
    """Each stream's replica count and the nodes holding it; with `replicas`, every stream and
    the live bucket are changed to that many copies first (StreamReplicasRefused when the
    cluster cannot hold them)."""
    from skillpress.platform.broker import (
        connect,
        nats_options,
        set_replicas,
        stream_states,
    )

    if replicas is not None and not 1 <= replicas <= 5:
        raise Refused(f"--replicas {replicas}: JetStream keeps 1 to 5 copies of a stream")
    url = _nats_url(ctx)

    async def run() -> list[StreamState]:
        nc = await connect(
            url,
            name="skillpress-streams",
            attempts=3,
            options=nats_options(ctx.settings, url),
        )
        try:
            if replicas is not None:
                return await set_replicas(nc, replicas)
            return await stream_states(nc)
        finally:
            await nc.close()

    return asyncio.run(run())
