"""The embedded queue: nats-server from its wheel, the SKILLPRESS stream, dedup, a kept store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillpress.schemas.subjects import EVENTS, STREAM
from skillpress.services.platform.broker import BrokerUnavailable, connect, ensure_stream
from skillpress.services.platform.embedded_nats import NatsServer, free_port, reap_stale

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
