"""Following publications: a folder kept equal to each skill's live version.

The live version of every skill is a value in the `SKILLPRESS_LIVE` key-value bucket (written by
the publish worker). A follower reads every key on start (catch-up after downtime) and then
watches for changes. Each version's files are fetched from the blob store (every blob is checked
against its sha256 as it is read), written whole into a folder of their own beside the old one,
and `DIR/<slug>` is then swapped to it in one atomic rename of a symbolic link: a reader, or a
SIGKILL, sees the old version or the new, never a mix. The old folder goes after the swap.

A pointer is news, never authority: one that does not read as a pointer (a slug, a version id,
paths inside a package), or that names a version the records do not say is live, is refused in
one line and the follower goes on (`vouched`); what is written is the records' own pointer, and
only ever inside DIR (`materialize`). The invariant "a follower writes only inside its folder,
and only what the records say is live" lives here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillpress.app.base.package_dir import write_package_dir
from skillpress.errors import Refused
from skillpress.schemas.events import LiveVersion

if TYPE_CHECKING:  # the records stack, only where the store is followed (a runtime never needs it)
    from skillpress.app.base.context import AppContext

__all__ = [
    "FORMATS",
    "vouched",
    "FollowRefused",
    "folder_stamp",
    "hold_pins",
    "say_refused",
    "follow_live",
    "followed_version",
    "materialize",
    "store_reader",
]

FORMATS = ("package", "agent-skills")


class FollowRefused(Refused):
    """The folder cannot be kept (a real directory where a skill's link goes, an unknown format)."""


def folder_stamp(path: Path) -> str:
    """What identifies the version a package folder holds: the link a follower swaps, or the
    folder and its skill.json's modification time (a folder rewritten in place)."""
    if path.is_symlink():
        return os.readlink(path)
    manifest = path / "skill.json"
    return f"{path.resolve()}:{manifest.stat().st_mtime_ns if manifest.exists() else 0}"


def followed_version(path: Path) -> str | None:
    """The version id prefix of a followed folder (`DIR/<slug>` → `.versions/<slug>@<id>`)."""
    if not path.is_symlink():
        return None
    target = os.readlink(path)
    return target.rsplit("@", 1)[-1] if "@" in target else None


Read = Callable[[LiveVersion, str, str], bytes]  # (version, path, sha256) → the checked bytes


def store_reader(ctx: AppContext) -> Read:
    """Files from the blob store, a version's all at once when its first is asked for (one
    read of its pack, or several requests at a time), each checked against its sha256."""
    from skillpress.app.records.versions import pointer_files

    held: dict[str, dict[str, bytes]] = {}  # one version at a time is being written

    def read(live: LiveVersion, path: str, digest: str) -> bytes:
        files = held.get(live.version_id)
        if files is None:
            held.clear()
            files = held[live.version_id] = pointer_files(ctx.blobs, live)
        if live.files.get(path) != digest or path not in files:
            raise FollowRefused(
                f"{live.skill} {live.version_id[:12]} {path}: not a file the live pointer names"
            )
        return files[path]

    return read


def _files(read: Read, live: LiveVersion, fmt: str) -> dict[str, bytes]:
    files = {path: read(live, path, digest) for path, digest in sorted(live.files.items())}
    if fmt == "agent-skills":
        from skillpress.runtime.interop.contracts import agent_skills_folder
        from skillpress.runtime.package.skill import load_skill

        files = agent_skills_folder(load_skill(files), files)
    return files


def vouched(ctx: AppContext, raw: bytes) -> LiveVersion:
    """The records' own pointer for the skill a live pointer names, when the records say the
    version it names is live; FollowRefused, in one line, for a pointer that does not read as
    one or that the records do not vouch for (a forged or a stale one)."""
    from pydantic import ValidationError

    from skillpress.app.records.live import live_version_of

    try:
        live = LiveVersion.model_validate_json(raw)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0].get("loc", ())) or "value"
        raise FollowRefused(
            f"a live pointer that is not one was refused ({where}: {exc.errors()[0]['msg']})"
        ) from None
    truth = live_version_of(ctx, live.skill)
    if truth is None or truth.version_id != live.version_id:
        said = truth.version_id[:12] if truth is not None else "nothing"
        raise FollowRefused(
            f"{live.skill}: the live pointer names {live.version_id[:12]}, but the records say"
            f" {said} is live: refused (`skillpress reconcile` rewrites the pointers from the"
            " records)"
        )
    return truth.model_copy(update={"auth_header": live.auth_header})


def _inside(out: Path, live: LiveVersion) -> None:
    """Refuse a skill whose folder, or any of whose files, would not be inside `out` (a
    pointer's fields are held to their forms where it is read; this holds the line whatever
    made the pointer)."""
    import re

    from skillpress.schemas.events import SLUG_PATTERN, package_path

    if not re.fullmatch(SLUG_PATTERN, live.skill) or not re.fullmatch(
        r"[0-9a-f]{16,64}", live.version_id
    ):
        raise FollowRefused(f"{live.skill!r} {live.version_id!r}: not a skill and version: refused")
    for path in live.files:
        try:
            package_path(path)
        except ValueError as exc:
            raise FollowRefused(f"{live.skill}: {exc}: refused") from None


def materialize(read: Read, out: Path, live: LiveVersion, fmt: str) -> bool:
    """Make `out/<slug>` the live version, its files from `read` (False when it is already)."""
    if fmt not in FORMATS:
        raise FollowRefused(f"--format {fmt!r}: choose {' or '.join(FORMATS)}")
    _inside(out, live)
    link = out / live.skill
    if link.exists() and not link.is_symlink():
        raise FollowRefused(
            f"{link} is a directory of its own, not one this follower keeps; move it or choose another DIR"
        )
    name = f"{live.skill}@{live.version_id[:16]}"
    store = out / ".versions"
    if link.is_symlink() and os.readlink(link) == f".versions/{name}":
        return False
    target = store / name
    for stale in store.glob(f".{live.skill}@*"):  # a write a SIGKILL cut short: never swapped to
        shutil.rmtree(stale, ignore_errors=True)
    if not target.exists():
        marker = "skill.json" if fmt == "package" else "SKILL.md"
        write_package_dir(_files(read, live, fmt), target, marker=marker)
    swap = out / f".{live.skill}.swap-{os.getpid()}"
    swap.unlink(missing_ok=True)
    os.symlink(f".versions/{name}", swap)
    os.replace(swap, link)  # the one atomic step: old or new, never a mix
    for old in store.glob(f"{live.skill}@*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return True


async def hold_pins(
    read: Read,
    pinned: Callable[[str, str], LiveVersion],
    out: Path,
    fmt: str,
    pins: dict[str, str],
    on_swap: Callable[[LiveVersion], None],
) -> None:
    """Make `out` exist and each pinned skill its pinned version."""
    out.mkdir(parents=True, exist_ok=True)
    for slug, ref in sorted(pins.items()):
        live = await asyncio.to_thread(pinned, slug, ref)
        if await asyncio.to_thread(materialize, read, out, live, fmt):
            on_swap(live)


async def follow_live(
    ctx: AppContext,
    nats_url: str,
    out: Path,
    skills: set[str] | None,
    fmt: str,
    pins: dict[str, str],
    stop: asyncio.Event | None,
    on_swap: Callable[[LiveVersion], None],
    on_missing: Callable[[str, str], None] | None = None,
    on_refused: Callable[[str], None] | None = None,
) -> None:
    """Keep `out` equal to the live versions (of `skills`, or all), pinned ones held where they
    are pinned; catch up first, then follow until `stop` (None: catch up and return).
    `on_missing` is told each skill the records say is live (its slug, the version) whose
    pointer NATS does not have: nothing can follow it until `skillpress reconcile`.
    `on_refused` is told each pointer refused (`vouched`), in one line; following goes on."""
    from nats.js.errors import BucketNotFoundError, NotFoundError

    from skillpress.app.base.bus import StackError
    from skillpress.platform.broker import LIVE_BUCKET, connect, live_pointers, nats_options

    read = store_reader(ctx)
    await hold_pins(read, lambda slug, ref: _pointer(ctx, slug, ref), out, fmt, pins, on_swap)

    def wanted(slug: str) -> bool:
        return slug not in pins and (skills is None or slug in skills)

    def taken(raw: bytes) -> LiveVersion | None:
        """The records' pointer to materialize, or None (a refusal said, following goes on)."""
        try:
            live = vouched(ctx, raw)
            if wanted(live.skill) and materialize(read, out, live, fmt):
                return live
        except FollowRefused as exc:
            (on_refused or say_refused)(str(exc))
        return None

    async def apply(raw: bytes | None) -> None:
        if raw:
            live = await asyncio.to_thread(taken, raw)
            if live is not None:
                on_swap(live)

    nc = await connect(
        nats_url, name="skillpress-follow", options=nats_options(ctx.settings, nats_url)
    )
    try:  # a follower's NATS user reads the live bucket and nothing else (nats_roles)
        try:
            kv = await nc.jetstream().key_value(LIVE_BUCKET)
        except (BucketNotFoundError, NotFoundError):
            raise StackError(
                f"NATS has no {LIVE_BUCKET} bucket yet: start `skillpress up` (or serve) first"
            ) from None
        pointers = await live_pointers(nc)
        for key, raw in pointers.items():
            if wanted(key):
                await apply(raw)
        if on_missing is not None:  # the records are the truth: say what NATS has lost
            from skillpress.app.records.live import live_versions

            for live in await asyncio.to_thread(live_versions, ctx):
                if wanted(live.skill) and live.skill not in pointers:
                    on_missing(live.skill, live.version_id)
        if stop is not None:
            await _watch(kv, stop, apply)
    finally:
        await nc.close()


async def _watch(kv: Any, stop: asyncio.Event, apply: Callable[[bytes | None], Any]) -> None:
    """Each change of the live bucket `kv` given to `apply` as it comes, until `stop`."""
    from nats.errors import TimeoutError as NatsTimeout

    watcher: Any = await kv.watchall(include_history=False)  # nats-py leaves it untyped
    while not stop.is_set():
        try:
            entry = await watcher.updates(timeout=1.0)
        except (TimeoutError, NatsTimeout):
            continue
        if entry is not None and entry.operation is None:
            await apply(entry.value)
    await watcher.stop()


def say_refused(line: str) -> None:
    from skillpress.platform.logging import get_logger

    get_logger("follow").warning("follow.pointer_refused", reason=line)


def _pointer(ctx: AppContext, slug: str, ref: str) -> LiveVersion:
    from skillpress.app.records.versions import version_pointer

    return version_pointer(ctx, slug, ref)
