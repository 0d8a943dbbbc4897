"""NATS JetStream: connect, and make sure the SKILLPRESS stream exists over the subject catalogue."""

from __future__ import annotations

import nats
from nats.aio.client import Client
from nats.js.api import KeyValueConfig, StreamConfig
from nats.js.errors import BucketNotFoundError, NotFoundError

from schemas.subjects import STREAM, STREAM_SUBJECTS
from services.errors import Retryable

__all__ = [
    "connect",
    "ensure_stream",
    "BrokerUnavailable",
    "EXHAUSTED_STREAM",
    "EXHAUSTED_SUBJECTS",
    "LIVE_BUCKET",
    "live_subject",
]

# the live version of each skill, a key-value bucket: one watch gives a runtime the current state
# and every change, with catch-up for free (a KV put is a publish to `$KV.<bucket>.<key>`)
LIVE_BUCKET = "SKILLPRESS_LIVE"


def live_subject(slug: str) -> str:
    return f"$KV.{LIVE_BUCKET}.{slug}"


# JetStream's advisory for a message whose deliveries ran out unacknowledged (its last holder died
# or ran past ack_wait), kept in a stream of its own so no advisory is missed while no worker runs
EXHAUSTED_STREAM = f"{STREAM}_EXHAUSTED"
EXHAUSTED_SUBJECTS = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{STREAM}.*"


class BrokerUnavailable(Retryable):
    """NATS cannot be reached."""


async def connect(url: str, name: str = "skillpress", *, attempts: int = 3) -> Client:
    """A connection to NATS, its troubles logged as one structured event each (never the
    library's tracebacks); BrokerUnavailable when it cannot be reached after `attempts` tries
    half a second apart (a command line gives up in a few seconds)."""
    from services.platform.logging import get_logger

    log = get_logger("broker").bind(nats=url, client=name)
    last: list[str] = []

    async def on_error(exc: Exception) -> None:
        last[:] = [f"{type(exc).__name__}: {exc}"]
        log.info("nats.error", error=last[0])

    async def on_disconnected() -> None:
        log.info("nats.disconnected")

    async def on_reconnected() -> None:
        log.info("nats.reconnected")

    try:
        return await nats.connect(
            url,
            name=name,
            connect_timeout=2,
            reconnect_time_wait=0.5,
            max_reconnect_attempts=attempts,
            allow_reconnect=True,
            error_cb=on_error,
            disconnected_cb=on_disconnected,
            reconnected_cb=on_reconnected,
        )
    except Exception as exc:  # nats-py raises several unrelated types for a refused connection
        why = last[0] if last else f"{type(exc).__name__}: {exc}"
        raise BrokerUnavailable(f"cannot reach NATS at {url} ({why})") from None


async def ensure_stream(nc: Client) -> StreamConfig:
    """Create the stream, or bring its subjects up to date; returns its configuration."""
    js = nc.jetstream()
    try:
        await js.stream_info(EXHAUSTED_STREAM)
    except NotFoundError:
        await js.add_stream(
            StreamConfig(
                name=EXHAUSTED_STREAM, subjects=[EXHAUSTED_SUBJECTS], max_age=30 * 24 * 3600.0
            )
        )
    try:
        await js.key_value(LIVE_BUCKET)
    except (NotFoundError, BucketNotFoundError):
        await js.create_key_value(KeyValueConfig(bucket=LIVE_BUCKET, history=5))
    config = StreamConfig(name=STREAM, subjects=list(STREAM_SUBJECTS), duplicate_window=120.0)
    try:
        info = await js.stream_info(STREAM)
        if sorted(info.config.subjects or []) != sorted(STREAM_SUBJECTS):
            info = await js.update_stream(config)
        return info.config
    except NotFoundError:
        info = await js.add_stream(config)
        return info.config
