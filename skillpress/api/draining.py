"""A stopping server's manners (#44.5): once told to stop, it takes no new work (each request
answered 503 problem+json with `Retry-After`, readiness 503 so a balancer stops sending any),
lets the requests it holds finish within a bound, then cancels those still running and answers
each a 503 problem+json (never a plain-text 500, never a reset with nothing said). Pure ASGI,
so an upload still arriving is cancelled as cleanly as a request that waits for the pipeline."""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillpress.api.problems import RETRY_AFTER
from skillpress.platform.logging import get_logger
from skillpress.platform.native_heap import trim

__all__ = ["Draining"]

PROBLEM = "application/problem+json"
_PROBES = frozenset({"/healthz", "/readyz"})


def _stopping_body(detail: str) -> bytes:
    return json.dumps(
        {
            "type": "urn:skillpress:problem:stopping",
            "title": "Service Unavailable",
            "status": 503,
            "detail": detail,
        }
    ).encode()


async def _answer_503(send: Send, detail: str) -> None:
    body = _stopping_body(detail)
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", PROBLEM.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", RETRY_AFTER.encode()),
                (b"connection", b"close"),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Draining:
    """Counts the requests in flight; after `stop()`, refuses new ones and, past `grace`
    seconds, cancels the ones still held (`drain()` returns once none is)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.stopping = False
        self.stopped = asyncio.Event()  # set with `stopping`, for what waits on it
        self.held: set[asyncio.Task[None]] = set()
        self.idle = asyncio.Event()
        self.idle.set()
        self.log = get_logger("http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.stopping:
            if scope.get("path") == "/healthz":
                await self.app(scope, receive, send)
            else:
                await _answer_503(
                    send, "this server is stopping: send the request again (to another instance)"
                )
            return
        started = {"sent": False}
        scope["skillpress.stopping"] = self.stopped  # what a look held open ends on

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                started["sent"] = True
            await send(message)

        task: asyncio.Task[None] = asyncio.ensure_future(self.app(scope, receive, watched))
        self.held.add(task)
        self.idle.clear()
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled() and not task.done():
                task.cancel()  # the server itself cancelled this request: so is its work
                raise
            if not started["sent"] and scope.get("path") not in _PROBES:
                await _answer_503(
                    send,
                    "this server stopped before the request finished: nothing it began was"
                    " kept half-done; send it again",
                )
        finally:
            self.held.discard(task)
            if not self.held:
                self.idle.set()
            trim()  # what an answer's making and sending freed goes back (at most once a second)

    async def drain(self, grace: float) -> int:
        """Refuse new requests, wait up to `grace` seconds for the held ones, then cancel the
        rest; returns how many were cancelled."""
        self.stopping = True
        self.stopped.set()
        try:
            await asyncio.wait_for(self.idle.wait(), grace)
            return 0
        except TimeoutError:
            pass
        left = [t for t in self.held if not t.done()]
        for task in left:
            task.cancel()
        if left:
            self.log.warning("http.cancelled_at_stop", requests=len(left), grace_s=grace)
            await asyncio.wait(left, timeout=5)
        return len(left)
