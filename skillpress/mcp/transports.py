"""How an MCP server of skills is reached: over stdio, or streamable HTTP answering only the
requests that bear its token (a server that spends a skill's credential answers nobody else on
the machine)."""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import NotificationOptions, Server

__all__ = ["BearerOnly", "serve_http", "serve_stdio"]


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(
            read,
            write,
            server.create_initialization_options(NotificationOptions(tools_changed=True)),
        )


class BearerOnly:
    """An ASGI wrapper that lets through only requests bearing `token` (compared in constant
    time): a server that spends a skill's credential answers nobody else on the machine."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import hmac

        if scope.get("type") == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = (
                    b'{"error": "unauthorized", "detail": "send Authorization: Bearer TOKEN,'
                    b' the token this MCP server was started with"}'
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="skillpress-mcp"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(server: Server[Any], host: str, port: int, token: str) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp, answering only requests that bear `token`."""
    import uvicorn

    if not token:
        raise ValueError("an MCP server over HTTP needs a bearer token")
    app = BearerOnly(server.streamable_http_app(host=host), token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
