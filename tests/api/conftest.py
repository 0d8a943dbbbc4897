"""`skillpress serve` on the embedded stack (nats-server from its wheel, SQLite, a local blob
folder, every worker in the server's process), started as an operator would and stopped after."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.cli.test_up import home_env

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
PETSTORE = SPECS / "oai-petstore-expanded.yaml"
MAX_SPEC_BYTES = 400_000


@dataclass
class Served:
    proc: subprocess.Popen[str]
    base: str
    token: str
    home: Path
    sign_in: str
    log: list[str]

    def drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line)
            del self.log[:-200]

    def client(self, token: str | None = "") -> httpx.Client:
        """A client on the server; with the operator's token unless `token` says otherwise
        (None: no Authorization header)."""
        given = self.token if token == "" else token
        headers = {"Authorization": f"Bearer {given}"} if given is not None else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=120)


def start_served(home: Path, **settings: str) -> Served:
    env = home_env(home, api_port="0", log_format="json", **settings)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillpress.cli.main", "serve"],
        env=env,
        stdout=subprocess.PIPE,  # the banner (with the sign-in URL), then
        stderr=subprocess.STDOUT,  # the JSON log, access log included
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"sign in: (http://[^/\s]+)/sign-in\?token=(\S+)", line)
        if found:
            base, token = found.groups()
            served = Served(proc, base, token, home, f"{base}/sign-in?token={token}", seen)
            # keep reading the server's log so it never blocks on a full pipe
            threading.Thread(target=served.drain, daemon=True).start()
            return served
    proc.kill()
    raise AssertionError("skillpress serve never printed its sign-in URL:\n" + "".join(seen))


def stop_served(served: Served) -> None:
    served.proc.send_signal(signal.SIGINT)
    try:
        assert served.proc.wait(30) == 0
    finally:
        if served.proc.poll() is None:
            served.proc.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("served") / "home"
    running = start_served(home, max_spec_bytes=str(MAX_SPEC_BYTES))
    yield running
    stop_served(running)


def chromium_path() -> str:
    """Debian's Chromium, installed from the system's packages when it is missing (nothing can
    download a browser build here)."""
    for name in ("chromium", "chromium-browser"):
        for folder in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]:
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True)
        done = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], capture_output=True, text=True
        )
        if done.returncode == 0 and Path("/usr/bin/chromium").exists():
            return "/usr/bin/chromium"
        pytest.fail(f"could not install Debian's chromium: {done.stderr[-500:]}")
    pytest.fail(
        "Chromium is missing: install Debian's `chromium` package (apt-get install chromium)"
    )
