"""Prism (`@stoplight/prism-cli` from npm), installed by the test session and run as a mock server.

Prism is the independent judge of "does the request we built conform to the spec": in
`--errors` mode it answers a request that breaks the spec with 422 (or 415/404/405/401) and
lists what is wrong in an `sl-violations` header. Installing it is part of test setup: the
first session on a machine runs `npm install` into a cache directory (~20 s; tests/npm_tools.py),
later ones reuse it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from skillpress.platform.local_processes import free_port
from tests.npm_tools import NpmToolUnavailable, npm_binary

PRISM_PACKAGE = "@stoplight/prism-cli"
PRISM_VERSION = "5.14.2"


class PrismUnavailable(RuntimeError):
    """Prism could not be installed or started; the message says what to install."""


def prism_binary() -> Path:
    """The prism executable, installed from npm into the cache on first use."""
    try:
        return npm_binary(PRISM_PACKAGE, PRISM_VERSION, "prism")
    except NpmToolUnavailable as exc:
        raise PrismUnavailable(f"the Prism conformance test: {exc}") from exc


class PrismMock:
    """`with PrismMock(spec) as prism:` → a mock server for `spec` at `prism.url`."""

    def __init__(self, spec: Path, log_dir: Path) -> None:
        self.spec = spec
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_dir / f"prism-{spec.stem}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrismMock:
        binary = prism_binary()
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(
                [
                    str(binary),
                    "mock",
                    "--errors",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    str(self.spec),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise PrismUnavailable(
                    f"prism exited with {self._proc.returncode}: {self.log.read_text()[-2000:]}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        self.__exit__(None, None, None)
        raise PrismUnavailable(f"prism did not listen within 60 s: {self.log.read_text()[-2000:]}")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, 15)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, 9)
                self._proc.wait()


def request_violations(status: int, headers: dict[str, str], body: bytes) -> list[dict[str, Any]]:
    """The violations Prism found in the request (not in its own mocked response)."""
    found: list[dict[str, Any]] = []
    raw = headers.get("sl-violations")
    if raw:
        found = [v for v in json.loads(raw) if isinstance(v, dict)]
    elif 400 <= status < 500 and "problem+json" in headers.get("content-type", ""):
        problem = json.loads(body)
        # a 422's validation locates each finding in the request without saying "request"
        found = [
            {**v, "location": ["request", *v.get("location", [])]}
            for v in problem.get("validation", [])
            if isinstance(v, dict)
        ]
        if not found:
            found = [
                {
                    "location": ["request"],
                    "message": f"{problem.get('status')} {problem.get('title')}",
                }
            ]
    elif 400 <= status < 500:  # Prism's own refusal of what it could not even read (bad JSON)
        found = [{"location": ["request"], "message": f"{status} {body[:200]!r}"}]
    return [v for v in found if (v.get("location") or [""])[0] == "request"]
