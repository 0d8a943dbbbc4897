"""The embedded queue: nats-server from its wheel, the SKILLPRESS stream, dedup, a kept store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillpress.platform.broker import BrokerUnavailable, connect, ensure_stream
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.local_processes import free_port, reap_stale
from skillpress.schemas.subjects import EVENTS, STREAM

pytestmark = pytest.mark.integration  # starts real servers


async def test_stream_exists_and_dedups_by_msg_id(nats_url: str) -> None:
    nc = await connect(nats_url)
    try:
        cfg = await ensure_stream(nc)
        assert cfg.name == STREAM and cfg.subjects == ["skillpress.>"]
        again = await ensure_stream(nc)
        assert again.name == STREAM
        js = nc.jetstream()
        msg_id = {"Nats-Msg-Id": f"test-{os.getpid()}-dedup"}
        first = await js.publish(EVENTS.version_proposed, b"{}", stream=STREAM, headers=msg_id)
        second = await js.publish(EVENTS.version_proposed, b"{}", stream=STREAM, headers=msg_id)
        assert not first.duplicate and second.duplicate and second.seq == first.seq
    finally:
        await nc.close()


async def test_restart_on_the_same_store_keeps_messages(tmp_path: Path) -> None:
    home = Path("/tmp") / f"skillpress-nats-{tmp_path.name}"
    server = NatsServer(home).start()
    try:
        nc = await connect(server.url)
        await ensure_stream(nc)
        ack = await nc.jetstream().publish(EVENTS.spec_submitted, b'{"n": 1}', stream=STREAM)
        await nc.close()
        server.kill()  # SIGKILL: no clean shutdown
        assert not server.proc.running()  # type: ignore[union-attr]
        server = NatsServer(home).start()
        nc = await connect(server.url)
        info = await nc.jetstream().stream_info(STREAM)
        assert info.state.last_seq == ack.seq and info.state.messages >= 1
        await nc.close()
    finally:
        server.stop()
        pid = server.proc.pid  # type: ignore[union-attr]
        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]
        )
        import shutil

        shutil.rmtree(home, ignore_errors=True)


async def test_unreachable_nats_is_a_specific_error() -> None:
    with pytest.raises(BrokerUnavailable, match="cannot reach NATS"):
        await connect(f"nats://127.0.0.1:{free_port()}")


def test_reap_stale_kills_a_leftover_server(tmp_path: Path) -> None:
    home = Path("/tmp") / f"skillpress-reap-{tmp_path.name}"
    server = NatsServer(home).start()
    pid = server.proc.pid  # type: ignore[union-attr]
    killed = reap_stale(home)  # as the next session would, after a crash
    server.proc.proc.wait(5)  # type: ignore[union-attr]
    assert killed == [pid]
    assert not (home / "nats-server.pid").exists()
    import shutil

    shutil.rmtree(home, ignore_errors=True)


async def test_the_loss_of_a_server_and_its_return_are_logged_naming_it(tmp_path: Path) -> None:
    import asyncio
    import shutil

    import structlog

    home = Path("/tmp") / f"skillpress-nats-{tmp_path.name}"
    port = free_port()
    server = NatsServer(home).start(port=port)
    try:
        with structlog.testing.capture_logs() as logs:
            nc = await connect(server.url, name="watcher", attempts=20)
            server.kill()
            for _ in range(50):
                if any(e["event"] == "nats.disconnected" for e in logs):
                    break
                await asyncio.sleep(0.1)
            server = NatsServer(home).start(port=port)
            for _ in range(100):
                if nc.is_connected and any(e["event"] == "nats.reconnected" for e in logs):
                    break
                await asyncio.sleep(0.1)
            await nc.close()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
    said = [(e["event"], e.get("server")) for e in logs if e["event"].startswith("nats.")]
    where = f"127.0.0.1:{port}"
    assert ("nats.connected", where) in said and ("nats.disconnected", where) in said
    assert ("nats.reconnected", where) in said
    assert said.index(("nats.disconnected", where)) < said.index(("nats.reconnected", where))
    assert said[-1] == ("nats.reconnected", where), said  # closing said nothing more


async def test_the_embedded_nats_takes_no_client_without_the_homes_credentials(
    tmp_path: Path,
) -> None:
    """Another local process (another OS user, or a process not given the home) connecting with
    no credentials cannot publish a command, nor read a spec or an approval off the stream."""
    import stat
    from urllib.parse import urlsplit

    import nats

    from skillpress.platform.broker import shown_url
    from skillpress.schemas.subjects import COMMANDS

    home = Path("/tmp") / f"skillpress-auth-{tmp_path.name}"
    server = NatsServer(home).start()
    try:
        for private in ("credentials.json", "nats.conf"):
            assert stat.S_IMODE((home / private).stat().st_mode) == 0o600
        bare = f"nats://{urlsplit(server.url).netloc.rpartition('@')[2]}"
        assert shown_url(server.url) == bare
        # refused: the server says why, or (a loaded machine) closes the connection first
        with pytest.raises(BrokerUnavailable, match="(?i)authorization violation|reset"):
            await connect(bare, attempts=1)
        errors: list[Exception] = []

        async def said(exc: Exception) -> None:
            errors.append(exc)

        with pytest.raises(Exception):  # noqa: B017 (nats-py's own type for a refused connection)
            await nats.connect(bare, allow_reconnect=False, error_cb=said, connect_timeout=2)
        assert any("authorization" in str(e).lower() for e in errors)
        mallory = f"nats://mallory:guess@{urlsplit(bare).netloc}"
        with pytest.raises(BrokerUnavailable):
            await connect(mallory, attempts=1)
        nc = await connect(server.url)  # this home's own processes, through the URL up records
        try:
            await ensure_stream(nc)
            ack = await nc.jetstream().publish(COMMANDS.publish_version, b"{}", stream=STREAM)
            assert ack.seq >= 1
        finally:
            await nc.close()
        # the same credentials after a restart: a worker beside `up` keeps its URL
        first = server.url
        server.stop()
        server = NatsServer(home).start()
        assert first.split("@")[0] == server.url.split("@")[0]
    finally:
        server.stop()
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 it signed (openssl, as an operator would)."""
    import subprocess

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=skillpress test CA",
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    )
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    )
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


async def test_a_configured_nats_is_reached_with_tls_and_the_settings_credentials(
    tmp_path: Path,
) -> None:
    """Production: a `tls://` URL checked against SKILLPRESS_NATS_CA, a user whose password is
    read from the variable SKILLPRESS_NATS_PASSWORD_ENV names; without them, no connection."""
    import json as jsonlib

    from skillpress.platform.broker import nats_options
    from skillpress.platform.local_processes import ManagedProcess, find_binary
    from skillpress.platform.settings import Settings

    ca, cert, key = _certificates(tmp_path)
    port = free_port()
    config = tmp_path / "nats.conf"
    config.write_text(
        f"listen: 127.0.0.1:{port}\n"
        f"tls {{\n  cert_file: {jsonlib.dumps(str(cert))}\n  key_file: {jsonlib.dumps(str(key))}\n}}\n"
        'authorization {\n  user: "ops-nats"\n  password: "correct horse"\n}\n'
    )
    proc = ManagedProcess(
        "nats-tls", [str(find_binary("nats-server")), "-c", str(config)], tmp_path
    )
    proc.start()
    try:
        url = f"tls://127.0.0.1:{port}"
        settings = Settings(home=tmp_path / "home", nats_url=url, nats_ca=ca, nats_user="ops-nats")
        options = nats_options(settings, url, {"SKILLPRESS_NATS_PASSWORD": "correct horse"})
        nc = None
        for _ in range(50):  # until it listens
            try:
                nc = await connect(url, attempts=1, options=options)
                break
            except BrokerUnavailable:
                import asyncio

                await asyncio.sleep(0.1)
        assert nc is not None and nc.is_connected
        await nc.close()
        with pytest.raises(BrokerUnavailable):  # the right CA, no password
            await connect(url, attempts=1, options={"tls": options["tls"]})
        with pytest.raises(
            BrokerUnavailable
        ):  # the password, no CA: the certificate is not trusted
            await connect(
                url, attempts=1, options={"user": "ops-nats", "password": "correct horse"}
            )
    finally:
        proc.stop()


def test_a_ports_file_is_read_only_once_written_whole(tmp_path: Path) -> None:
    """nats-server creates its ports file before it writes it: a start that read it in between
    failed on an empty file under load (a flaky outage test in CI). Empty, half-written or
    without the client address, it is not yet read; written whole, it is."""
    from skillpress.platform.embedded_nats import _ports_of

    path = tmp_path / "nats-server_1.ports"
    assert _ports_of(path) is None
    path.write_text("")
    assert _ports_of(path) is None
    path.write_text('{"nats": ["nats://127.0.0.1:4222"], "monitoring"')
    assert _ports_of(path) is None
    path.write_text('{"monitoring": ["http://127.0.0.1:8222"]}')
    assert _ports_of(path) is None
    whole = {"nats": ["nats://127.0.0.1:4222"], "monitoring": ["http://127.0.0.1:8222"]}
    path.write_text(json.dumps(whole))
    assert _ports_of(path) == whole


async def test_the_stream_keeps_thirty_days_and_an_older_release_forever_stream_is_brought_to_it(
    tmp_path: Path,
) -> None:
    """#57.7: the SKILLPRESS stream kept every message forever (4,836 after an afternoon). It
    keeps 30 days (a story is followed and replayed within minutes, a dead letter keeps its own
    copy, outcomes are in the records), and a stream an older release made with no limit is
    given it on the next start, its messages and subjects as they were."""
    from nats.js.api import StreamConfig

    from skillpress.platform.broker import STREAM_MAX_AGE

    server = NatsServer(tmp_path / "nats").start()
    try:
        nc = await connect(server.url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name=STREAM, subjects=["skillpress.>"]))  # forever
        await js.publish(EVENTS.spec_submitted, b"{}", stream=STREAM)
        assert not (await js.stream_info(STREAM)).config.max_age
        kept = await ensure_stream(nc)
        assert kept.max_age == STREAM_MAX_AGE == 30 * 24 * 3600
        info = await js.stream_info(STREAM)
        assert info.config.max_age == STREAM_MAX_AGE and info.state.messages == 1
        assert (await ensure_stream(nc)).max_age == STREAM_MAX_AGE  # and left so after
        await nc.close()
    finally:
        server.kill()
