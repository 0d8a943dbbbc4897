"""Security headers on every answer: a Content Security Policy that runs only the console's own
scripts (and an inline one only with this response's nonce), no framing, no sniffing, no
referrer (a sign-in URL carries a token), and nothing a signed-in page shows kept in a cache."""

from __future__ import annotations

import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SecurityHeaders", "csp_nonce"]


def csp_nonce(scope: Scope) -> str:
    """This response's script nonce (made once per request)."""
    state = scope.setdefault("state", {})
    nonce = state.get("csp_nonce")
    if not isinstance(nonce, str):
        nonce = state["csp_nonce"] = secrets.token_urlsafe(16)
    return nonce


class SecurityHeaders:
    """Pure ASGI middleware (it never buffers a body: the submission stream flows through)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        nonce = csp_nonce(scope)
        static = str(scope.get("path", "")).startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                policy = (
                    "default-src 'self'; "
                    f"script-src 'self' 'nonce-{nonce}'; "
                    "style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                    "object-src 'none'; base-uri 'none'; form-action 'self'; "
                    "frame-ancestors 'none'"
                )
                headers += [
                    (b"content-security-policy", policy.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"no-referrer"),
                ]
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)
