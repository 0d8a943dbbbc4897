"""The pipeline against real servers: a fresh nats-server per test (it is killed and restarted by
some), a fresh PostgreSQL database and S3 bucket per test on the session's servers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from skillpress.app.base.context import AppContext, open_app
from skillpress.platform.broker import connect, ensure_stream
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.records import RecordStore
from skillpress.platform.settings import Settings
from skillpress.schemas.subjects import STREAM
from skillpress.workers.app import WORKERS, serve_workers

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
S3_ACCESS_ENV = "SKILLPRESS_TEST_S3_ACCESS"
S3_SECRET_ENV = "SKILLPRESS_TEST_S3_SECRET"


def new_database(postgres_url: str) -> str:
    """A new, empty database on the test PostgreSQL: its URL."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"


def migrated(url: str) -> str:
    """`url`'s database migrated, as an operator's `skillpress migrate` leaves it before the
    processes start (they never migrate PostgreSQL on their own)."""
    store = RecordStore(url)
    try:
        store.migrate()
    finally:
        store.close()
    return url


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return migrated(new_database(postgres_url))


@pytest.fixture
def stores(
    tmp_path: Path,
    database_url: str,
    s3_server: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., Settings]:
    """Settings on this test's PostgreSQL database and S3 bucket, for a NATS URL (and `extra`
    settings over the defaults of these tests)."""
    endpoint, access, secret = s3_server
    monkeypatch.setenv(S3_ACCESS_ENV, access)
    monkeypatch.setenv(S3_SECRET_ENV, secret)

    def on(nats_url: str, **extra: Any) -> Settings:
        chosen: dict[str, Any] = {
            "database_url": database_url,
            "s3_endpoint": endpoint,
            "ack_wait": 3.0,
            "max_deliver": 3,
            "retry_delays": (0.2, 0.4),
            "fetch_allow_private": True,
            "refresh_interval": 0,
        } | extra
        return Settings(
            home=tmp_path / "home",
            nats_url=nats_url,
            s3_bucket=f"p-{uuid.uuid4().hex[:16]}",
            s3_access_key_env=S3_ACCESS_ENV,
            s3_secret_key_env=S3_SECRET_ENV,
            **chosen,
        )

    return on


@pytest.fixture
def settings(nats_server: NatsServer, stores: Callable[..., Settings]) -> Settings:
    return stores(nats_server.url)


def settings_env(settings: Settings) -> dict[str, str]:
    """The same settings for a worker process, as SKILLPRESS_* variables (credentials by name)."""
    env = {**os.environ}
    for key in (
        "home",
        "nats_url",
        "database_url",
        "s3_endpoint",
        "s3_bucket",
        "s3_access_key_env",
        "s3_secret_key_env",
        "ack_wait",
        "max_deliver",
        "fetch_allow_private",
        "refresh_interval",
    ):
        env[f"SKILLPRESS_{key.upper()}"] = str(getattr(settings, key))
    env["SKILLPRESS_RETRY_DELAYS"] = json.dumps(list(settings.retry_delays))
    env["SKILLPRESS_OUTAGE_DELAYS"] = json.dumps(list(settings.outage_delays))
    env["SKILLPRESS_OUTAGE_LIMIT"] = str(settings.outage_limit)
    env["SKILLPRESS_LOG_FORMAT"] = "json"
    return env


@pytest.fixture
def ctx(settings: Settings) -> Iterator[AppContext]:
    context = open_app(settings)
    yield context
    context.records.close()


@contextlib.asynccontextmanager
async def workers(ctx: AppContext, url: str, names: list[str] | None = None) -> AsyncIterator[None]:
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve_workers(ctx, url, names or list(WORKERS), stop, ready))
    await asyncio.wait_for(ready.wait(), 20)
    try:
        yield
    finally:
        stop.set()
        await task


@dataclass
class Watcher:
    """Every event on `skillpress.>` (a plain core-NATS subscription), for waiting on outcomes."""

    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_message(self, msg: Any) -> None:
        self.seen.append((msg.subject, json.loads(msg.data)))
        self.changed.set()

    async def wait_for(self, subject: str, timeout: float = 30.0, **match: Any) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for subj, body in self.seen:
                if subj == subject and all(body.get(k) == v for k, v in match.items()):
                    return body
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(
                    f"no {subject} {match} within {timeout} s; saw {[s for s, _ in self.seen]}"
                )
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)

    def count(self, subject: str, **match: Any) -> int:
        return sum(
            1 for s, b in self.seen if s == subject and all(b.get(k) == v for k, v in match.items())
        )


@contextlib.asynccontextmanager
async def watching(url: str) -> AsyncIterator[tuple[Watcher, Any]]:
    nc = await connect(url)
    await ensure_stream(nc)
    watcher = Watcher()
    await nc.subscribe("skillpress.>", cb=watcher.on_message)
    await nc.flush()
    try:
        yield watcher, nc
    finally:
        await nc.close()


async def submit(nc: Any, event: Any, msg_id: str | None = None) -> Any:
    from skillpress.schemas.subjects import COMMANDS, EVENTS

    subject = (
        EVENTS.spec_submitted
        if type(event).__name__ == "SpecSubmitted"
        else COMMANDS.publish_version
    )
    headers = {"Nats-Msg-Id": msg_id} if msg_id else None
    return await nc.jetstream().publish(
        subject, event.model_dump_json().encode(), headers=headers, stream=STREAM
    )
