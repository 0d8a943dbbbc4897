"""One bootstrap: settings → record store, blob store, clock and (when configured) a model client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillpress.platform.blobs import (
    BlobStore,
    CachedBlobs,
    LocalBlobStore,
    S3BlobStore,
)
from skillpress.platform.records import RecordStore
from skillpress.platform.settings import Settings, load_settings

if TYPE_CHECKING:
    from skillpress.platform.llm import ChatClient

__all__ = ["AppContext", "SharedBus", "blob_store", "open_app", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SharedBus:
    """A server's one NATS connection, lent to the use-cases it runs: they send and follow on it
    (on the loop it lives on) instead of opening a connection of their own per request."""

    connection: Any  # nats.aio.client.Client, connected, with the streams in place
    loop: asyncio.AbstractEventLoop
    url: str


@dataclass
class AppContext:
    """What every use-case and worker step runs against."""

    settings: Settings
    records: RecordStore
    blobs: BlobStore
    clock: Callable[[], datetime] = field(default=utc_now)
    # the pipeline to start when no NATS is configured or up (the stack's embedded one, given
    # by a command line); None: such a use-case says where to find one
    embedded: Callable[[AppContext], AbstractAsyncContextManager[str]] | None = None
    # the server's connection its use-cases send and follow on (`serve` sets it while it runs);
    # None: each use-case that sends opens its own (a command line's)
    bus: SharedBus | None = None

    def chat(self) -> ChatClient | None:
        """The configured chat-completions client, or None when no model is configured."""
        from skillpress.platform.llm import chat_client

        return chat_client(self.settings)

    def close(self) -> None:
        self.records.close()


def blob_store(settings: Settings) -> BlobStore:
    """The configured store (S3, or the local folder), with what this process wrote or read
    lately held in memory up to SKILLPRESS_BLOB_CACHE_MB (0: nothing held)."""
    store: BlobStore = (
        S3BlobStore.from_env(
            settings.s3_endpoint,
            settings.s3_access_key_env,
            settings.s3_secret_key_env,
            settings.s3_bucket,
            secure=settings.s3_secure,
        )
        if settings.s3_endpoint
        else LocalBlobStore(settings.blob_dir)
    )
    if settings.blob_cache_mb <= 0:
        return store
    return CachedBlobs(store, settings.blob_cache_mb * 1024 * 1024)


def private_home(home: Path) -> None:
    """The home made (or kept) the operator's alone: its records, tokens and session key are."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if home.stat().st_mode & 0o077:
        home.chmod(0o700)


def open_app(
    settings: Settings | None = None,
    *,
    migrate: bool = True,
    embedded: Callable[[AppContext], AbstractAsyncContextManager[str]] | None = None,
) -> AppContext:
    """The context for `settings` (default: from the environment), its schema checked (and
    brought up to date where this process migrates: `Settings.migrates_on_start`);
    `embedded` starts a pipeline where none is configured or up."""
    settings = settings or load_settings()
    private_home(settings.home)
    records = RecordStore(settings.records_url)
    if migrate:  # up to date, migrated here (SQLite), or refused in one line
        records.check(settings.migrates_on_start)
    return AppContext(
        settings=settings, records=records, blobs=blob_store(settings), embedded=embedded
    )
