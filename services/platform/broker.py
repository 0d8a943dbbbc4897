"""NATS JetStream: connect, and make sure the SKILLPRESS stream exists over the subject catalogue."""

from __future__ import annotations

import nats
from nats.aio.client import Client
from nats.js.api import StreamConfig
from nats.js.errors import NotFoundError

from schemas.subjects import STREAM, STREAM_SUBJECTS
from services.errors import Retryable

__all__ = ["connect", "ensure_stream", "BrokerUnavailable"]


class BrokerUnavailable(Retryable):
    """NATS cannot be reached."""


async def connect(url: str, name: str = "skillpress") -> Client:
    try:
        return await nats.connect(
            url, name=name, connect_timeout=3, max_reconnect_attempts=3, allow_reconnect=True
        )
    except Exception as exc:  # nats-py raises several unrelated types for a refused connection
        raise BrokerUnavailable(
            f"cannot reach NATS at {url}: {type(exc).__name__}: {exc}"
        ) from None


async def ensure_stream(nc: Client) -> StreamConfig:
    """Create the stream, or bring its subjects up to date; returns its configuration."""
    js = nc.jetstream()
    config = StreamConfig(name=STREAM, subjects=list(STREAM_SUBJECTS), duplicate_window=120.0)
    try:
        info = await js.stream_info(STREAM)
        if sorted(info.config.subjects or []) != sorted(STREAM_SUBJECTS):
            info = await js.update_stream(config)
        return info.config
    except NotFoundError:
        info = await js.add_stream(config)
        return info.config
