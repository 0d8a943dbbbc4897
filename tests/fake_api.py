"""The fake API the tests stand up on loopback: one recording HTTP server, where thirteen test
files each wrote their own. Every request is kept as it arrived (`seen`: method, path with its
query, headers, body) and answered by the test's `answer` (a `Reply`), or 201 `{}`. An answer
may also hold the request (a slow API) or close the connection without a word (a dropped one).

Four servers stay their own, for what a plain API is not: `runtime/hostile_api.py` and
`test_resilience.py`'s speak the wire as no API should (headers dripped a second apart, resets
mid-request, gzip bombs); `chat_server.py` is a model's chat endpoint; `runtime/guesthouse.py` a
whole application with state, the one the workflow tests run against."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

__all__ = ["FakeApi", "Reply", "Seen", "fake_api"]


class Seen(NamedTuple):
    """One request as it reached the API."""

    method: str
    path: str  # with its query
    headers: dict[str, str]
    body: bytes

    @property
    def route(self) -> str:
        """The path without its query."""
        return urlsplit(self.path).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query, keep_blank_values=True)

    def header(self, name: str) -> str | None:
        """A header by any case (None when not sent)."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """What the API answers: a status, headers and a body (JSON for anything not bytes or
    text); `delay` seconds first (a slow API); `drop`: close the connection without answering."""

    status: int = 201
    body: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False

    def encoded(self) -> tuple[dict[str, str], bytes]:
        headers = dict(self.headers)
        if isinstance(self.body, bytes):
            data = self.body
        elif isinstance(self.body, str):
            data = self.body.encode()
        else:
            data = json.dumps(self.body).encode()
            headers.setdefault("Content-Type", "application/json")
        return headers, data


Answer = Callable[[Seen], Reply]


class FakeApi:
    """A loopback HTTP/1.1 API answering every method; `url` is its base, `seen` what reached
    it (in arrival order, safe to read while it runs), `close()` stops it."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.seen: list[Seen] = []
        seen, lock = self.seen, threading.Lock()
        reply = answer or (lambda request: Reply())

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Seen(self.command, self.path, dict(self.headers.items()), body)
                with lock:
                    seen.append(request)
                said = reply(request)
                if said.delay:
                    time.sleep(said.delay)
                if said.drop:
                    self.close_connection = True
                    return
                headers, data = said.encoded()
                self.send_response(said.status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def fake_api(answer: Answer | None = None) -> Iterator[FakeApi]:
    """A `FakeApi` for the block, stopped after it."""
    made = FakeApi(answer)
    try:
        yield made
    finally:
        made.close()
