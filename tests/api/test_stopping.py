"""`serve` stopped mid-upload (#44.5): the upload it holds is answered a 503 problem+json within
SKILLPRESS_STOP_GRACE (never a plain-text 500), a request arriving while it stops is refused with
a 503 problem+json at once, the process exits promptly, and every line of its log is JSON."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.api.conftest import start_served

pytestmark = pytest.mark.integration  # starts real servers


def _slow_upload(base: str, token: str) -> socket.socket:
    """A multipart upload whose body has only begun to arrive: the server holds it, reading."""
    parts = urlsplit(base)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    head = (
        "POST /v1/skills HTTP/1.1\r\n"
        f"Host: {parts.netloc}\r\n"
        f"Authorization: Bearer {token}\r\n"
        "Content-Type: multipart/form-data; boundary=xyz\r\n"
        "Content-Length: 1000000\r\n\r\n"
        '--xyz\r\nContent-Disposition: form-data; name="slug"\r\n\r\npets\r\n'
    )
    sock.sendall(head.encode())
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def test_a_stopping_server_answers_what_it_holds_refuses_new_work_and_logs_json(
    tmp_path: Path,
) -> None:
    served = start_served(tmp_path / "home", stop_grace="2")
    try:
        with served.client() as c:
            assert c.get("/readyz").status_code == 200
        upload = _slow_upload(served.base, served.token)
        time.sleep(0.5)  # the server has it, reading a body that has barely begun
        served.proc.send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        time.sleep(0.3)
        with served.client() as c:  # arriving while it stops: refused at once, in words
            late = c.get("/v1/skills")
            ready = c.get("/readyz")
            alive = c.get("/healthz")
        assert (late.status_code, late.headers["content-type"]) == (
            503,
            "application/problem+json",
        )
        assert late.headers["retry-after"] == "5"
        assert late.json()["type"] == "urn:skillpress:problem:stopping"
        assert (ready.status_code, alive.status_code) == (503, 200)
        status, headers, body = _answer(upload)
        upload.close()
        assert (status, headers["content-type"]) == (503, "application/problem+json"), body
        assert json.loads(body)["detail"].startswith("this server stopped before the request")
        assert served.proc.wait(30) == 0
        took = time.monotonic() - stopped_at
        assert took < 25, f"a hang guard: it took {took:.1f} s to stop"
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait(10)
    time.sleep(0.2)  # the reader thread takes the last lines
    logged = [line for line in served.log if line.strip().startswith("{")]
    assert any(json.loads(line)["event"] == "http.cancelled_at_stop" for line in logged)
    after_banner = served.log[
        served.log.index(next(x for x in served.log if "sign in:" in x)) + 1 :
    ]
    for line in after_banner:
        if line.strip() not in ("", "Ctrl-C stops it.", "skillpress stopped."):  # the banner
            assert line.lstrip().startswith("{"), after_banner  # a traceback would fail here
            json.loads(line)
