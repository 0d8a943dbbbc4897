"""A worker process's probes and scrape, on SKILLPRESS_PROBE_PORT (#44.1): `/healthz` answers
from the worker's own event loop, so a loop that hangs stops answering and Kubernetes restarts
the process; `/readyz` asks the records, the blob store and JetStream (the stream, and each of
the worker's own consumers: ready only once they exist; 503 naming what does not answer); `/metrics` is the Prometheus text. A few lines of HTTP over
asyncio's own server: nothing else listens in a worker, and nothing here takes a request body."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from skillpress.app.base.bus import observe_queues, pipeline_ready
from skillpress.app.base.context import AppContext
from skillpress.app.records.health import readiness
from skillpress.errors import Permanent
from skillpress.platform.logging import get_logger
from skillpress.platform.metrics import CONTENT_TYPE, exposition

__all__ = ["ProbesCannotListen", "Watched", "listen_probes", "serve_probes"]

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


def _response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class Watched:
    """What a worker process's probes ask about: each role's connection to NATS and the
    consumers its workers take from (one probe server per process, however many roles it runs:
    `worker all` runs the publish stage's on a connection of its own)."""

    def __init__(self, expected: int = 1) -> None:
        self.roles: dict[str, tuple[Callable[[], Any], tuple[str, ...]]] = {}
        self.expected = expected  # roles the process runs: ready only once each has connected

    def add(self, role: str, connection: Callable[[], Any], consumers: Sequence[str]) -> None:
        self.roles[role] = (connection, tuple(consumers))

    async def nats(self) -> str:
        """ "ok" when every role's JetStream answers with its consumers, else the first reason."""
        if len(self.roles) < self.expected:
            return "the workers are still connecting to NATS"
        for connection, consumers in self.roles.values():
            said = await pipeline_ready(connection(), consumers)
            if said != "ok":
                return said
        return "ok"

    async def queues(self) -> None:
        for connection, consumers in self.roles.values():
            await observe_queues(connection(), consumers)


async def _answer(ctx: AppContext, watched: Watched, method: str, path: str) -> bytes:
    if method != "GET":
        return _response(405, b'{"status":"only GET"}')
    path = path.split("?", 1)[0]
    if path == "/healthz":
        return _response(200, b'{"status":"alive"}')
    if path == "/readyz":
        checks = await asyncio.to_thread(readiness, ctx)
        checks["nats"] = await watched.nats()
        ready = all(v == "ok" for v in checks.values())
        body = {"status": "ready" if ready else "not ready", "checks": checks}
        return _response(200 if ready else 503, json.dumps(body).encode())
    if path == "/metrics":
        await watched.queues()  # its own stages' queues, read now
        return _response(200, exposition(), CONTENT_TYPE)
    return _response(404, b'{"status":"no such probe: /healthz, /readyz or /metrics"}')


class ProbesCannotListen(Permanent):
    """The probe port is taken (another worker on this host?) or cannot be bound: the process
    refuses to start rather than run unwatched."""


async def listen_probes(ctx: AppContext, watched: Watched) -> asyncio.Server:
    """The probes listening on SKILLPRESS_PROBE_HOST:SKILLPRESS_PROBE_PORT (the system's port
    when it is 0), before any worker starts: ProbesCannotListen, naming the port, when they
    cannot (a process an orchestrator cannot probe would be restarted for nothing, or never)."""
    settings = ctx.settings
    assert settings.probe_port is not None

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            parts = line.decode("latin-1").split()
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass  # the headers: nothing here reads them
            if len(parts) >= 2:
                writer.write(await _answer(ctx, watched, parts[0], parts[1]))
                await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            writer.close()

    where = f"{settings.probe_host}:{settings.probe_port}"
    try:
        server = await asyncio.start_server(handle, settings.probe_host, settings.probe_port)
    except OSError as exc:
        raise ProbesCannotListen(
            f"the probes cannot listen on {where} ({exc.strerror or exc}): another worker on"
            " this host has that SKILLPRESS_PROBE_PORT? give each process its own"
        ) from None
    port = int(server.sockets[0].getsockname()[1])
    get_logger("probes").info("probes.listening", host=settings.probe_host, port=port)
    return server


async def serve_probes(server: asyncio.Server, stop: asyncio.Event) -> None:
    """Answer the probes on `server` until `stop` is set."""
    try:
        await stop.wait()
    finally:
        server.close()
        await server.wait_closed()
