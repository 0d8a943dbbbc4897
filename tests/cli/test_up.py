"""`skillpress up` in the foreground: ready, Ctrl-C stops it cleanly, a second run reuses the store."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from skillpress.platform.broker import connect
from skillpress.schemas.subjects import EVENTS, STREAM
from tests.cli_process import skillpress

pytestmark = pytest.mark.integration  # starts real servers

SERVING: dict[int, str] = {}  # up's pid → where its API and console listen


def _start(home: Path, *args: str, api_port: str = "0") -> tuple[subprocess.Popen[str], str]:
    env = {
        **os.environ,
        "SKILLPRESS_HOME": str(home),
        "SKILLPRESS_LOG_FORMAT": "json",
        "SKILLPRESS_API_PORT": api_port,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillpress.cli.main", "up", *args],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 30
    nats = ""
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if '"event": "up.ready"' in line:
            nats = json.loads(line)["nats"]
        if '"event": "up.serving"' in line:
            SERVING[proc.pid] = json.loads(line)["url"]
            # keep reading its log (an access log line per request) so it never blocks on a pipe
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            # the log names NATS without its credentials; this home's own processes (a command
            # line, a worker beside it) find them in up.json, mode 0600
            assert nats and "@" not in nats
            marker = home / "up.json"
            assert oct(marker.stat().st_mode & 0o777) == "0o600"
            return proc, json.loads(marker.read_text())["nats_url"]
    proc.kill()
    raise AssertionError("skillpress up never became ready")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    assert proc.wait(20) == 0


def home_env(home: Path, **settings: str) -> dict[str, str]:
    """This environment without any SKILLPRESS_ setting of its own: `home`, and `settings` as
    SKILLPRESS_<NAME> variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")}
    env["SKILLPRESS_HOME"] = str(home)
    return env | {f"SKILLPRESS_{name.upper()}": value for name, value in settings.items()}


def _cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`skillpress ARGS` on `home`, its output captured."""
    return skillpress(*args, env=home_env(home), replace_env=True, timeout=timeout)


def _nats_pids(home: Path) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "nats-server" in cmd and str(home) in cmd:
                out.append(int(d.name))
    return out


async def _publish(url: str) -> int:
    nc = await connect(url)
    ack = await nc.jetstream().publish(EVENTS.spec_submitted, b"{}", stream=STREAM)
    await nc.close()
    return ack.seq


async def _last_seq(url: str) -> int:
    nc = await connect(url)
    info = await nc.jetstream().stream_info(STREAM)
    await nc.close()
    return info.state.last_seq


def test_up_stops_on_ctrl_c_and_a_second_up_reuses_the_store(tmp_path: Path) -> None:
    home = Path("/tmp") / f"skillpress-up-{tmp_path.name}"
    proc, url = _start(home)
    try:
        seq = asyncio.run(_publish(url))
        # up serves the API and console too, behind tokens: only their digests in the file, and
        # a token of this run's own for the command lines on this home (api.json, mode 0600)
        assert "sha256:" in (home / "operator-tokens").read_text()
        token = json.loads((home / "api.json").read_text())["token"]
        api = f"{SERVING[proc.pid]}/v1/skills"
        assert httpx.get(api, headers={"Authorization": f"Bearer {token}"}).json() == []
        assert httpx.get(api).status_code == 401
    finally:
        _stop(proc)
    assert _nats_pids(home) == [], "nats-server outlived skillpress up"
    proc, url = _start(home)
    try:
        assert asyncio.run(_last_seq(url)) == seq
    finally:
        _stop(proc)
    assert _nats_pids(home) == []
    import shutil

    shutil.rmtree(home, ignore_errors=True)


def test_a_worker_started_before_nats_waits_for_it_and_stops_cleanly(tmp_path: Path) -> None:
    from skillpress.platform.embedded_nats import NatsServer, credentials
    from skillpress.platform.local_processes import free_port

    port = free_port()
    # a configured NATS that asks for a user and password: the worker gives the ones its
    # settings name (the password read from SKILLPRESS_NATS_PASSWORD, never a setting)
    user, password = credentials(tmp_path / "nats")
    env = home_env(
        tmp_path / "home",
        nats_url=f"nats://127.0.0.1:{port}",
        nats_user=user,
        nats_password=password,
        log_format="json",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillpress.cli.main", "worker", "fetch"],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    seen: list[str] = []

    def until(event: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline() if proc.stderr else ""
            if not line:
                break
            seen.append(line)
            if f'"event": "{event}"' in line:
                return
        raise AssertionError(f"no {event} in {seen[-5:]}")

    server = None
    try:
        until("workers.waiting_for_nats")
        assert proc.poll() is None, "still running, waiting"
        server = NatsServer(tmp_path / "nats").start(port=port)
        until("workers.started")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
        assert not any("Traceback" in line for line in seen)
    finally:
        if proc.poll() is None:
            proc.kill()
        if server is not None:
            server.stop()


def test_a_gated_call_is_announced_to_the_running_pipeline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    skill = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook-skill"
    up, url = _start(home)
    try:
        done = _cli(
            home,
            *("call", str(skill), "cancel_booking", "--args", '{"booking_id": "bk-9"}'),
            *("--approval-timeout", "0"),
        )
        assert done.returncode == 1 and "approval #1 is still pending" in done.stderr, done.stderr

        async def last() -> dict[str, object]:
            nc = await connect(url)
            try:
                msg = await nc.jetstream().get_last_msg(STREAM, EVENTS.approval_requested)
                return dict(json.loads(msg.data or b"{}"))
            finally:
                await nc.close()

        assert asyncio.run(last()) == {
            "request_id": 1,
            "skill": "hollowbrook",
            "operation": "cancel_booking",
            "risk": "high",
            "bound": {"booking_id": "bk-9"},
            "requested_by": getpass.getuser(),
        }
    finally:
        _stop(up)


async def _live(url: str, slug: str) -> dict[str, str]:
    from skillpress.platform.broker import LIVE_BUCKET

    nc = await connect(url)
    try:
        kv = await nc.jetstream().key_value(LIVE_BUCKET)
        return dict(json.loads((await kv.get(slug)).value or b"{}")["files"])
    finally:
        await nc.close()


def _digests(folder: Path) -> dict[str, str]:
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def test_a_follower_catches_up_then_follows_each_publication_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = tmp_path / "petstore.yaml"
    text = (
        Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
    ).read_text()
    spec.write_text(text)
    up, url = _start(home)
    follower = None
    try:
        versions = []
        for variant in (text, text.replace("Returns all pets", "Lists every pet")):
            spec.write_text(variant)
            made = _cli(home, "import", str(spec), "--skill", "petstore", "--json")
            assert made.returncode == 0, made.stderr
            versions.append(json.loads(made.stdout)["events"][-1]["version_id"])
            assert _cli(home, "publish", "petstore", versions[-1]).returncode == 0
        # two publications while no follower ran: it catches up to the last
        out = tmp_path / "live"
        caught = _cli(home, "follow", str(out), "--once")
        assert caught.returncode == 0, caught.stderr
        assert os.readlink(out / "petstore") == f".versions/petstore@{versions[1][:16]}"
        assert _digests(out / "petstore") == asyncio.run(_live(url, "petstore"))
        # following: a publication swaps the folder whole
        env = home_env(home)
        follower = subprocess.Popen(
            [sys.executable, "-m", "skillpress.cli.main", "follow", str(out)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)
        assert _cli(home, "publish", "petstore", versions[0]).returncode == 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.readlink(out / "petstore") == f".versions/petstore@{versions[0][:16]}":
                break
            time.sleep(0.2)
        assert _digests(out / "petstore") == asyncio.run(_live(url, "petstore"))
        assert [p.name for p in (out / ".versions").iterdir()] == [
            f"petstore@{versions[0][:16]}"
        ], "the old version goes once the swap is done"
        follower.send_signal(signal.SIGINT)
        assert follower.wait(20) == 0
        # SIGKILLed at any moment of a swap, the folder is one version whole, never a mix
        whole = {versions[0]: _digests(out / "petstore")}
        for n, version in enumerate([versions[1], versions[0], versions[1]]):
            killed = subprocess.Popen(
                [sys.executable, "-m", "skillpress.cli.main", "follow", str(out)],
                env=env,
                stderr=subprocess.DEVNULL,
            )
            assert _cli(home, "publish", "petstore", version).returncode == 0
            time.sleep(1.0 + 0.35 * n)
            killed.send_signal(signal.SIGKILL)
            killed.wait(10)
            whole.setdefault(version, asyncio.run(_live(url, "petstore")))
            assert _digests(out / "petstore") in list(whole.values())
        # as an Agent Skills folder at a stable path, which verify accepts
        skills = tmp_path / "agent"
        assert (
            _cli(home, "follow", str(skills), "--once", "--format", "agent-skills").returncode == 0
        )
        checked = _cli(home, "verify", str(skills / "petstore"))
        assert checked.returncode == 0, checked.stdout + checked.stderr
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
        _stop(up)


def test_up_cluster_runs_three_nodes_with_every_stream_on_each(tmp_path: Path) -> None:
    home = Path("/tmp") / f"skillpress-cluster-{tmp_path.name}"
    proc, url = _start(home, "--cluster", "3")
    try:
        assert len(url.split(",")) == 3 and len(_nats_pids(home)) == 3

        async def replicas() -> tuple[int, int]:
            nc = await connect(url)
            try:
                info = await nc.jetstream().stream_info(STREAM)
                assert info.cluster is not None
                return info.config.num_replicas or 1, len(info.cluster.replicas or []) + 1
            finally:
                await nc.close()

        assert asyncio.run(replicas()) == (3, 3)
    finally:
        _stop(proc)
    assert _nats_pids(home) == [], "a cluster node outlived skillpress up"
    import shutil

    shutil.rmtree(home, ignore_errors=True)


def test_up_port_0_takes_a_free_port(tmp_path: Path) -> None:
    # the setting names a port; `--port 0` overrides it with any free one
    proc, _ = _start(tmp_path / "home", "--port", "0", api_port="8787")
    try:
        url = SERVING[proc.pid]
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":8787")
    finally:
        _stop(proc)


def test_the_embedded_servers_die_with_up_and_a_second_up_on_the_same_home_is_refused(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    proc, _ = _start(home)
    try:
        assert len(_nats_pids(home)) == 1
        second = _cli(home, "up", "--no-console", timeout=30)
        assert second.returncode == 2
        assert "skillpress up is already running on" in second.stderr
        assert len(_nats_pids(home)) == 1, "never two servers on one store"
    finally:
        proc.kill()  # SIGKILL: up has no chance to stop its nats-server itself
        proc.wait(10)
    for _ in range(50):
        if not _nats_pids(home):
            break
        time.sleep(0.1)
    assert _nats_pids(home) == [], "the kernel stopped the nats-server with its parent"
    again, _ = _start(home)  # and the next up starts cleanly on the same store
    _stop(again)


def test_the_embedded_nats_port_can_be_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """#55.8: the embedded nats-server took a port of the system's choosing, always; with
    SKILLPRESS_NATS_PORT it listens where it is told (a firewall rule, a second host's worker)."""
    from urllib.parse import urlsplit

    from skillpress.platform.local_processes import free_port

    port = free_port()
    monkeypatch.setenv("SKILLPRESS_NATS_PORT", str(port))
    proc, url = _start(tmp_path / "home")
    try:
        assert urlsplit(url).port == port, url
    finally:
        _stop(proc)
