"""A small real HTTP server for the Hollowbrook guesthouse, run in a thread by the tests.

It speaks HTTP over a loopback socket, keeps its bookings in memory, records every request it
saw, and holds callers to what the real API would: its key header, JSON with its Content-Type,
every required field, and no booking twice for the same Idempotency-Key.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

KEY = "test-key-not-a-secret"
ROOMS = {
    "oak": {"id": "oak", "name": "Oak room", "price_pence": 9500},
    "ash": {"id": "ash", "name": "Ash room", "price_pence": 7000},
}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class Guesthouse:
    bookings: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    house: Guesthouse
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _reply(self, status: int, value: Any = None, headers: dict[str, str] | None = None) -> None:
        body = b"" if value is None else json.dumps(value).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if value is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        segments = [unquote(s) for s in parts.path.split("/") if s]
        with self.house.lock:
            self.house.seen.append(
                Seen(
                    self.command, parts.path, parse_qs(parts.query), dict(self.headers.items()), raw
                )
            )
        if segments[:1] == ["slow"]:
            time.sleep(float(segments[1]) if len(segments) > 1 else 5)
            return self._reply(200, {"slow": True})
        if segments[:1] == ["big"]:
            blob = b"x" * int(segments[1])
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)
            return None
        if segments[:1] == ["moved"]:
            return self._reply(302, None, {"Location": "http://169.254.169.254/latest/meta-data/"})
        if self.headers.get("X-Hollowbrook-Key") != KEY:
            return self._reply(401, {"error": "missing or wrong X-Hollowbrook-Key"})
        if self.command == "GET" and segments == ["rooms"]:
            return self._reply(200, list(ROOMS.values()))
        if (
            self.command == "GET"
            and len(segments) == 3
            and segments[0] == "rooms"
            and segments[2] == "availability"
        ):
            room = ROOMS.get(segments[1])
            if room is None:
                return self._reply(404, {"error": "no such room"})
            q = parse_qs(parts.query)
            try:
                arrival, departure = (
                    date.fromisoformat(q["arrival"][0]),
                    date.fromisoformat(q["departure"][0]),
                )
            except (KeyError, ValueError):
                return self._reply(422, {"error": "arrival and departure are dates"})
            taken = any(
                b["room_id"] == room["id"]
                and not (
                    departure <= date.fromisoformat(b["arrival"])
                    or arrival >= date.fromisoformat(b["departure"])
                )
                for b in self.house.bookings.values()
            )
            nights = (departure - arrival).days
            return self._reply(
                200,
                {
                    "room_id": room["id"],
                    "available": not taken,
                    "total_pence": nights * room["price_pence"],
                },
            )
        if self.command == "POST" and segments == ["bookings"]:
            if self.headers.get("Content-Type") != "application/json":
                return self._reply(415, {"error": "send application/json"})
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                return self._reply(400, {"error": "not JSON"})
            missing = [
                f for f in ("room_id", "guest_name", "arrival", "departure") if f not in body
            ]
            if missing:
                return self._reply(422, {"error": f"missing {missing}"})
            if body["room_id"] not in ROOMS:
                return self._reply(404, {"error": "no such room"})
            key = self.headers.get("Idempotency-Key")
            with self.house.lock:
                if key and key in self.house.by_key:
                    return self._reply(200, self.house.bookings[self.house.by_key[key]])
                booking_id = f"bk-{len(self.house.bookings) + 1}"
                nights = (
                    date.fromisoformat(body["departure"]) - date.fromisoformat(body["arrival"])
                ).days
                booking = {
                    **body,
                    "id": booking_id,
                    "total_pence": nights * ROOMS[body["room_id"]]["price_pence"],
                }
                self.house.bookings[booking_id] = booking
                if key:
                    self.house.by_key[key] = booking_id
            return self._reply(201, booking)
        if len(segments) == 2 and segments[0] == "bookings":
            booking = self.house.bookings.get(segments[1])
            if booking is None:
                return self._reply(404, {"error": "no such booking"})
            if self.command == "GET":
                return self._reply(200, booking)
            if self.command == "DELETE":
                del self.house.bookings[segments[1]]
                return self._reply(204)
        return self._reply(404, {"error": f"no route {self.command} {parts.path}"})

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle


class GuesthouseServer:
    """`with GuesthouseServer() as server:` → server.url, server.house."""

    def __init__(self) -> None:
        self.house = Guesthouse()
        handler = type("Handler", (_Handler,), {"house": self.house})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> GuesthouseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


EXAMPLE = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook-skill"
DECLARED = "http://hollowbrook.localhost:8084"


def example_skill(tmp_path: Path, server: GuesthouseServer) -> Path:
    """The example skill as written, pointed at the test's server instead of its real host."""
    out = tmp_path / "hollowbrook"
    out.mkdir()
    for path in EXAMPLE.iterdir():
        (out / path.name).write_text(path.read_text().replace(DECLARED, server.url))
    return out
