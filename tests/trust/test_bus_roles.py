"""Invariants of the message bus (`platform/nats_roles.py`, the embedded server's configuration;
`app/serving/followers.py`, `vouched` and `materialize`):

- no role but the operator's faces can send a command that publishes (a stage's refresh
  schedule may ask for a refresh, which only proposes); none but the publish stage's and the
  operator's can write a live pointer;
- a follower writes only inside its folder, and only what the records say is live: a pointer
  that is not one, or that the records do not vouch for, is refused in one line and following
  goes on.

Attacked with each role's real credentials on a real nats-server (an earlier release gave every
worker, `serve` and follower one user: publishing `cmd.publish_version` with `remove_gates`
made a never-reviewed proposal live, and a forged pointer made `follow DIR` write outside DIR
and crash on every start)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillpress.app.base.context import AppContext, open_app
from skillpress.platform.broker import LIVE_BUCKET, ensure_stream, live_pointers
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.nats_roles import ROLES
from skillpress.platform.settings import Settings
from skillpress.schemas.events import LiveVersion
from skillpress.schemas.subjects import COMMANDS, STREAM
from tests.app.test_roles import _published_and_proposed

pytestmark = pytest.mark.integration  # a real nats-server


@pytest.fixture
def nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("bus") / "nats").start()

    async def streams() -> None:
        import nats as nats_client

        nc = await nats_client.connect(server.url_for("operator"))
        await ensure_stream(nc, 1)
        await nc.close()

    asyncio.run(streams())
    yield server
    server.kill()


async def _try(url: str, subject: str, data: bytes) -> bool:
    """Whether a publish of `data` to `subject` with `url`'s user landed in a stream (the
    server's permissions refuse it otherwise: the client is told, nothing is stored)."""
    import nats as nats_client

    refused: list[str] = []

    async def told(exc: Exception) -> None:
        refused.append(str(exc))

    nc = await nats_client.connect(url, error_cb=told)
    try:
        stream = f"KV_{LIVE_BUCKET}" if subject.startswith("$KV.") else STREAM
        await nc.jetstream(timeout=2).publish(subject, data, stream=stream)
        return True
    except Exception:  # noqa: BLE001 (a refused publish answers nothing: it times out)
        assert any("permissions violation" in r for r in refused), refused
        return False
    finally:
        await nc.close()


async def _seq(server: NatsServer, stream: str) -> int:
    import nats as nats_client

    nc = await nats_client.connect(server.url_for("operator"))
    try:
        return int((await nc.jetstream().stream_info(stream)).state.last_seq)
    finally:
        await nc.close()


PUBLISH = COMMANDS.publish_version
FORGED = json.dumps({"skill": "pets", "version_id": "0" * 32, "remove_gates": True}).encode()


def test_only_the_operator_sends_a_command_and_only_publishers_write_pointers(
    nats: NatsServer,
) -> None:
    async def attack() -> dict[str, tuple[bool, bool]]:
        out = {}
        for role in ROLES:
            before = await _seq(nats, STREAM), await _seq(nats, f"KV_{LIVE_BUCKET}")
            command = await _try(nats.url_for(role), PUBLISH, FORGED)
            pointer = await _try(nats.url_for(role), f"$KV.{LIVE_BUCKET}.pets", b'{"forged":1}')
            after = await _seq(nats, STREAM), await _seq(nats, f"KV_{LIVE_BUCKET}")
            # what the client was told is what the server stored
            assert (after[0] - before[0], after[1] - before[1]) == (int(command), int(pointer))
            out[role] = (command, pointer)
        return out

    assert asyncio.run(attack()) == {
        "operator": (True, True),  # the operator's faces: publish, and reconcile's repairs
        "stage": (False, False),
        "publisher": (False, True),  # the publish stage writes the pointer it publishes
        "follower": (False, False),
        "runtime": (False, False),
    }


def test_each_role_does_what_it_is_for(nats: NatsServer) -> None:
    """The permissions leave each role its work: a runtime announces an approval request, a
    stage's schedule asks for a refresh, a follower reads the pointers."""
    from skillpress.schemas.subjects import EVENTS

    async def work() -> tuple[bool, bool, list[str]]:
        import nats as nats_client

        announced = await _try(nats.url_for("runtime"), EVENTS.approval_requested, b"{}")
        refresh = await _try(nats.url_for("stage"), COMMANDS.refresh_sources, b"{}")
        pointer = await _try(nats.url_for("publisher"), f"$KV.{LIVE_BUCKET}.pets", b"{}")
        assert pointer
        nc = await nats_client.connect(nats.url_for("follower"))
        try:
            keys = sorted(await live_pointers(nc))
        finally:
            await nc.close()
        return announced, refresh, keys

    announced, refresh, keys = asyncio.run(work())
    assert (announced, refresh) == (True, True)
    assert keys == ["pets"]  # the publish stage's write: a follower reads it


def test_a_follower_lists_every_pointer_just_written_and_none_deleted(nats: NatsServer) -> None:
    """Each pointer the publish stage has written is listed by the very next look, as many times
    as it is tried (nats-py's `keys()` raced its own watch and answered "no keys" under load,
    which failed this suite in CI); a deleted pointer is not listed."""
    import nats as nats_client

    async def work() -> list[tuple[list[str], list[str]]]:
        writer = await nats_client.connect(nats.url_for("publisher"))
        reader = await nats_client.connect(nats.url_for("follower"))
        written: set[str] = set()
        looks = []
        try:
            kv = await writer.jetstream().key_value(LIVE_BUCKET)
            for i in range(40):
                await kv.put(f"s{i:02d}", b"{}")
                written.add(f"s{i:02d}")
                if i % 10 == 9:  # every tenth look, the one before it was unpublished
                    await kv.delete(f"s{i - 1:02d}")
                    written.discard(f"s{i - 1:02d}")
                looks.append((sorted(await live_pointers(reader)), sorted(written)))
        finally:
            await writer.close()
            await reader.close()
        return looks

    looks = asyncio.run(work())
    assert [seen for seen, _ in looks] == [expected for _, expected in looks]
    assert "s08" not in looks[-1][0] and "s39" in looks[-1][0]


@pytest.fixture
def published(tmp_path: Path) -> Iterator[tuple[AppContext, str, str]]:
    """Records with Hollowbrook live (and a newer proposal nobody published)."""
    ctx = open_app(Settings(home=tmp_path / "home", refresh_interval=0))
    live, proposed = _published_and_proposed(ctx)
    yield ctx, live, proposed
    ctx.close()


def _put(server: NatsServer, pointers: dict[str, bytes]) -> None:
    """Write `pointers` with the publish stage's own credentials (as a forger holding them,
    or the publish stage itself, would)."""
    import nats as nats_client

    async def put() -> None:
        nc = await nats_client.connect(server.url_for("publisher"))
        try:
            kv = await nc.jetstream().key_value(LIVE_BUCKET)
            for key, value in pointers.items():
                await kv.put(key, value)
        finally:
            await nc.close()

    asyncio.run(put())


def _follow_once(ctx: AppContext, server: NatsServer, out: Path) -> tuple[list[str], list[str]]:
    from skillpress.app.serving.followers import follow_live

    swapped: list[str] = []
    refused: list[str] = []
    asyncio.run(
        follow_live(
            ctx,
            server.url_for("follower"),
            out,
            None,
            "package",
            {},
            None,
            lambda live: swapped.append(f"{live.skill}@{live.version_id}"),
            None,
            refused.append,
        )
    )
    return swapped, refused


def _outside(root: Path, out: Path) -> list[str]:
    """Every path under `root` that is not under `out`."""
    return sorted(
        str(p) for p in root.rglob("*") if out not in p.parents and p != out and p.is_file()
    )


def test_a_follower_writes_only_what_the_records_say_is_live(
    nats: NatsServer, published: tuple[AppContext, str, str], tmp_path: Path
) -> None:
    ctx, live, proposed = published
    from skillpress.app.records.live import live_versions

    (truth,) = live_versions(ctx)
    forged_files = {**truth.files, "skill.json": truth.files["list_rooms.md"]}
    pointers = {
        # a skill that is a path elsewhere, a version id that climbs out, a file path that does
        "abs": _pointer(truth, skill=str(tmp_path / "elsewhere")),
        "climb": _pointer(truth, version_id="/../escaped_dir"),
        "own-versions": _pointer(truth, version_id="../.versions/hollowbrook@x"),
        "path": _pointer(truth, files={"../../outside.md": "a" * 64}),
        # a proposal no one published, and the live version with its gates' file swapped
        "unpublished": _pointer(truth, version_id=proposed),
        "hollowbrook": _pointer(truth, files=forged_files),
    }
    _put(nats, pointers)
    root = tmp_path / "root"
    out = root / "skills"
    (root / "keep").mkdir(parents=True)
    swapped, refused = _follow_once(ctx, nats, out)
    assert swapped == [f"hollowbrook@{live}"]
    assert len(refused) == 5, refused
    assert sum("records say" in r for r in refused) == 1  # the unpublished one
    assert _outside(root, out) == []
    written = (out / "hollowbrook" / "skill.json").read_bytes()
    assert written == ctx.blobs.get(truth.files["skill.json"]), (
        "the records' files, not the forger's"
    )
    # and the follower starts again as it stopped: no crash on what is still in the bucket
    assert _follow_once(ctx, nats, out)[0] == []


def _pointer(truth: LiveVersion, **changed: Any) -> bytes:
    return json.dumps(truth.model_dump(mode="json") | changed).encode()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    skill=st.one_of(st.text(max_size=40), st.sampled_from(["..", ".", "a/b", "/x", "hollowbrook"])),
    version=st.one_of(st.text(max_size=40), st.from_regex(r"[0-9a-f./]{1,40}", fullmatch=True)),
    path=st.one_of(st.text(max_size=30), st.sampled_from(["../x", "/etc/passwd", "a/../../b"])),
)
def test_no_pointer_field_reaches_outside_the_folder(
    skill: str, version: str, path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Whatever a pointer's slug, version id and file paths, `vouched` and `materialize` write
    nothing outside the folder and never raise anything but a one-line refusal."""
    from skillpress.app.serving.followers import FollowRefused, materialize, vouched

    root = tmp_path_factory.mktemp("ptr")
    ctx = open_app(Settings(home=tmp_path_factory.mktemp("home"), refresh_interval=0))
    out = root / "skills"
    out.mkdir()
    fields = {"skill": skill, "version_id": version, "files": {path: "a" * 64}, "hosts": []}
    try:
        with pytest.raises(FollowRefused) as told:  # no records vouch for anything here
            vouched(ctx, json.dumps(fields).encode())
        assert "\n" not in str(told.value)
    finally:
        ctx.close()
    # and materialize alone, given the fields unchecked, writes inside the folder or refuses
    unchecked = LiveVersion.model_construct(**fields)
    try:
        materialize(lambda *_: b"x", out, unchecked, "package")
    except FollowRefused as exc:
        assert "\n" not in str(exc)
    assert _outside(root, out) == []


def test_a_running_up_hands_each_process_its_own_role(tmp_path: Path) -> None:
    from skillpress.app.base.bus import running_up, write_up_marker
    from skillpress.platform.embedded_nats import credentials

    chosen = Settings(home=tmp_path / "home")
    url = "nats://skillpress:op@127.0.0.1:4222"
    write_up_marker(chosen, url, tmp_path / "nats")
    for role in ROLES:
        user, password = credentials(tmp_path / "nats", role) if role != "operator" else ("", "")
        found = running_up(chosen, role)
        assert found is not None
        assert found == url if role == "operator" else found.startswith(f"nats://{user}:")
        assert role == "operator" or password in found
    os.environ.pop("SKILLPRESS_NATS_URL", None)
