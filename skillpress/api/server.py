"""Serving the API and console: on a configured NATS, beside a running `skillpress up`, or on the
embedded stack (nats-server from its wheel and every worker in this process)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillpress.api.auth import Operators, is_loopback, load_operators
from skillpress.api.draining import Draining
from skillpress.app.base.context import AppContext

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["DEFAULT_PORT", "Listening", "console_url", "serve_http", "server_operators"]

DEFAULT_PORT = 8787


@dataclass(frozen=True)
class Listening:
    host: str
    port: int

    @property
    def base(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    @property
    def loopback(self) -> str:
        """Where a process on this machine reaches it (a wildcard address is reached on loopback)."""
        if self.host in ("0.0.0.0", ""):
            return f"http://127.0.0.1:{self.port}"
        if self.host == "::":
            return f"http://[::1]:{self.port}"
        return self.base


def server_operators(ctx: AppContext, host: str) -> Operators:
    """The operators for a server on `host` (TokenRefused: a non-loopback address with no token)."""
    return load_operators(ctx.settings.home, ctx.settings.operator_tokens_file, host)


def console_url(where: Listening, operators: Operators) -> str:
    """Where an operator signs in: on the start that made the home's first operator, with its
    token in the URL on loopback (as notebook servers print it; the only time it is shown);
    else the plain sign-in page, where an operator signs in with their own token (only its
    digest is kept, so no later start can print it, and none mints one for whoever starts it)."""
    token = operators.generated
    if token and is_loopback(where.host):
        return f"{where.base}/sign-in?token={token}"
    return f"{where.base}/sign-in (with your operator token)"


class _Server:
    """uvicorn's server without its own signal handling: the caller's stop event ends it."""

    def __init__(self, app: FastAPI, where: Listening, grace: float) -> None:
        self.where = where
        self.grace = grace
        self.draining = Draining(app)
        import uvicorn

        class Quiet(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        # Ctrl-C stops it within seconds even mid-request: new requests are refused at once, and
        # one still running past the grace is cancelled and answered 503 (a use-case writes
        # nothing half: its effects are single transactions)
        config = uvicorn.Config(
            self.draining,
            host=where.host,
            port=where.port,
            log_level="warning",
            log_config=None,  # its records go through skillpress's logging: JSON when asked
            access_log=False,
            timeout_graceful_shutdown=3,
        )
        self.server: Any = Quiet(config)

    def bound(self) -> Listening:
        """Where it listens (the port the system chose when asked for port 0)."""
        for server in getattr(self.server, "servers", []):
            for sock in server.sockets:
                return Listening(self.where.host, int(sock.getsockname()[1]))
        return self.where

    async def run(self, stop: asyncio.Event, ready: Callable[[Listening], None] | None) -> None:
        _can_bind(self.where)  # a port in use is one line, before anything is started for it
        task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            if task.done():
                try:
                    task.result()  # raises what stopped it (the port was taken meanwhile, …)
                except SystemExit:  # uvicorn's way of saying it could not start
                    pass
                raise OSError(f"the HTTP server could not listen on {self.where.base}")
            await asyncio.sleep(0.02)
        if ready is not None:
            ready(self.bound())
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await self.draining.drain(self.grace)
        self.server.should_exit = True
        waiter.cancel()
        await task


def _can_bind(where: Listening) -> None:
    """OSError, in words, when nothing can listen at `where` (taken, or not this machine's)."""
    import errno
    import socket

    if where.port == 0:
        return
    family = socket.AF_INET6 if ":" in where.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((where.host, where.port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise OSError(
                    f"port {where.port} on {where.host} is in use by another program:"
                    " pick another with --port (0: any free one)"
                ) from None
            raise OSError(f"{exc.strerror or exc}") from None


async def serve_http(
    ctx: AppContext,
    operators: Operators,
    nats_url: str | None,
    where: Listening,
    stop: asyncio.Event,
    ready: Callable[[Listening], None] | None = None,
) -> None:
    """Serve the API and console on `where` until `stop` is set (then: new requests refused,
    held ones given SKILLPRESS_STOP_GRACE seconds); `ready` is told where it listens once it
    does."""
    from skillpress.api.app import create_app

    app = create_app(ctx, operators, nats_url)
    await _Server(app, where, ctx.settings.stop_grace).run(stop, ready)
