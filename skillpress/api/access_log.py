"""The access log: one structured event per request (`http.request`) with its method, path,
status, bytes and duration, never its query (a sign-in URL carries a token there) nor any
header; and the same request counted for the scrape by its route's template (`/v1/skills/{slug}`,
never the slug). Pure ASGI, so a streamed answer (the submission events) is logged when it ends."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillpress.platform.logging import get_logger
from skillpress.platform.metrics import observe_http

__all__ = ["AccessLog"]


class AccessLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.log = get_logger("http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        seen = {"status": 500, "bytes": 0}

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = int(message["status"])
            elif message["type"] == "http.response.body":
                seen["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, counted)
        finally:
            client = scope.get("client")
            route = scope.get("route")
            observe_http(
                getattr(route, "path", None) or "unmatched",
                str(scope.get("method")),
                seen["status"],
                time.perf_counter() - started,
            )
            self.log.info(
                "http.request",
                method=scope.get("method"),
                path=scope.get("path"),
                status=seen["status"],
                bytes=seen["bytes"],
                ms=round((time.perf_counter() - started) * 1000, 1),
                client=client[0] if client else None,
            )
