"""Request bodies are capped before anything parses them (a declared length over the cap is
refused at once; an undeclared one is counted as it arrives)."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillpress.api.pages import error_page, is_console

__all__ = ["BodyCap"]


class _TooLarge(Exception):
    pass


class BodyCap:
    def __init__(self, app: ASGIApp, max_bytes: int, spec_bytes: int | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        # the limit a person is told: the spec's, as the console's form says it (the cap
        # itself leaves room for the form around the spec)
        self.spec_bytes = spec_bytes if spec_bytes is not None else max_bytes

    async def _refuse(self, scope: Scope, send: Send) -> None:
        detail = (
            f"the request is over the {self.spec_bytes:,}-byte limit a spec may have"
            " (SKILLPRESS_MAX_SPEC_BYTES sets it)"
        )
        if is_console(scope):  # a console form: a page with the way back to it
            page = error_page(scope, 413, detail)
            body, kind = page.body, b"text/html; charset=utf-8"
        else:
            problem = {
                "type": "urn:skillpress:problem:too-large",
                "title": "Too large",
                "status": 413,
                "detail": detail,
            }
            body, kind = json.dumps(problem).encode(), b"application/problem+json"
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", kind),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, send)
            return
        seen = 0
        over = False
        refused = False

        async def counted() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    raise _TooLarge
            return message

        async def tracked(message: Message) -> None:
            # whatever the app answers once the cap is passed (its parser may turn the error
            # into a 400), the client is told 413
            nonlocal refused
            if over:
                if not refused:
                    refused = True
                    await self._refuse(scope, send)
                return
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except _TooLarge:
            if not refused:
                refused = True
                await self._refuse(scope, send)
