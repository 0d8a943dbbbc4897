"""An API that answers as a test tells it to (hostile headers, deep bodies, a dripping token
endpoint, an echo of what it was sent), and records every request it gets: the attacker's side
of a call, in one thread beside the test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | str | Any = b""
    drip: float = 0.0  # seconds between bytes of the body (a server that drips its answer)

    def data(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


Route = Callable[[Seen], Answer]


class HostileApi:
    """Routes by path (the first route whose key the path starts with answers); every request
    recorded in `seen`."""

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                seen = Seen(self.command, self.path, dict(self.headers.items()), body)
                outer.seen.append(seen)
                route = next(
                    (r for key, r in outer.routes.items() if self.path.startswith(key)), None
                )
                answer = route(seen) if route is not None else Answer(404, body={"error": "no"})
                data = answer.data()
                self.send_response(answer.status)
                headers = {"Content-Type": "application/json", **answer.headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    if self.command == "HEAD":
                        pass  # a HEAD answer has headers only
                    elif answer.drip:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(answer.drip)
                    else:
                        self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve
            do_TRACE = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def hostile_api(routes: dict[str, Route] | None = None) -> Iterator[HostileApi]:
    api = HostileApi(routes)
    try:
        yield api
    finally:
        api.close()


def write_package(folder: Path, name: str, body: str, operations: dict[str, str]) -> Path:
    """A hand-written package: body.md (with `name:` and any `auth:`) and one file per operation."""
    out = folder / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "body.md").write_text(body)
    for op, text in operations.items():
        (out / f"{op}.md").write_text(text)
    return out


def oauth_package(folder: Path, token_url: str, base_url: str, slug: str = "pets") -> Path:
    """A derived package whose scheme has a client-credentials flow at `token_url`: GET /pets
    (list_pets) and POST /pets (add_pet, a plain write) on `base_url`."""
    import yaml

    from skillpress.app.base.package_dir import write_package_dir
    from skillpress.derive.package import derive_package
    from skillpress.derive.package_types import DeriveOptions

    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": base_url}],
        "components": {
            "securitySchemes": {
                "oauth": {
                    "type": "oauth2",
                    "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}},
                }
            }
        },
        "security": [{"oauth": []}],
        "paths": {
            "/pets": {
                "get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}},
                "post": {
                    "operationId": "addPet",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {"name": {"type": "string"}},
                                }
                            }
                        },
                    },
                    "responses": {"201": {"description": "made"}},
                },
            }
        },
    }
    package = derive_package(yaml.safe_dump(spec).encode(), DeriveOptions(slug=slug))
    out = folder / slug
    write_package_dir(package.files, out)
    return out
