"""Following publications: a folder kept equal to each skill's live version.

The live version of every skill is a value in the `SKILLPRESS_LIVE` key-value bucket (written by
the publish worker). A follower reads every key on start (catch-up after downtime) and then
watches for changes. Each version's files are fetched from the blob store (every blob is checked
against its sha256 as it is read), written whole into a folder of their own beside the old one,
and `DIR/<slug>` is then swapped to it in one atomic rename of a symbolic link: a reader, or a
SIGKILL, sees the old version or the new, never a mix. The old folder goes after the swap.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from schemas.events import LiveVersion
from services.app.context import AppContext
from services.app.package_dir import write_package_dir
from services.app.versions import find_skill, find_version
from services.errors import Refused

__all__ = [
    "FORMATS",
    "FollowRefused",
    "folder_stamp",
    "follow_live",
    "followed_version",
    "materialize",
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


def _files(ctx: AppContext, live: LiveVersion, fmt: str) -> dict[str, bytes]:
    files = {path: ctx.blobs.get(key) for path, key in sorted(live.files.items())}
    if fmt == "agent-skills":
        from services.runtime.contracts import agent_skills_folder
        from services.runtime.skill import load_skill

        files = agent_skills_folder(load_skill(files), files)
    return files


def materialize(ctx: AppContext, out: Path, live: LiveVersion, fmt: str) -> bool:
    """Make `out/<slug>` the live version (False when it is already)."""
    if fmt not in FORMATS:
        raise FollowRefused(f"--format {fmt!r}: choose {' or '.join(FORMATS)}")
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
        write_package_dir(_files(ctx, live, fmt), target, marker=marker)
    swap = out / f".{live.skill}.swap-{os.getpid()}"
    swap.unlink(missing_ok=True)
    os.symlink(f".versions/{name}", swap)
    os.replace(swap, link)  # the one atomic step: old or new, never a mix
    for old in store.glob(f"{live.skill}@*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return True


def _pinned(ctx: AppContext, slug: str, version_ref: str) -> LiveVersion:
    skill = find_skill(ctx, slug)
    with ctx.records.session() as s:
        version = find_version(s, skill, version_ref)
        return LiveVersion(
            skill=slug,
            version_id=version.id,
            files=json.loads(version.files_json),
            hosts=json.loads(version.hosts_json),
        )


async def follow_live(
    ctx: AppContext,
    nats_url: str,
    out: Path,
    skills: set[str] | None,
    fmt: str,
    pins: dict[str, str],
    stop: asyncio.Event | None,
    on_swap: Callable[[LiveVersion], None],
) -> None:
    """Keep `out` equal to the live versions (of `skills`, or all), pinned ones held where they
    are pinned; catch up first, then follow until `stop` (None: catch up and return)."""
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import NoKeysError

    from services.platform.broker import LIVE_BUCKET, connect, ensure_stream

    out.mkdir(parents=True, exist_ok=True)
    for slug, ref in sorted(pins.items()):
        live = await asyncio.to_thread(_pinned, ctx, slug, ref)
        if await asyncio.to_thread(materialize, ctx, out, live, fmt):
            on_swap(live)

    def wanted(slug: str) -> bool:
        return slug not in pins and (skills is None or slug in skills)

    async def apply(raw: bytes | None) -> None:
        if not raw:
            return
        live = LiveVersion.model_validate_json(raw)
        if wanted(live.skill) and await asyncio.to_thread(materialize, ctx, out, live, fmt):
            on_swap(live)

    nc = await connect(nats_url, name="skillpress-follow")
    try:
        await ensure_stream(nc)
        kv = await nc.jetstream().key_value(LIVE_BUCKET)
        try:
            keys = await kv.keys()
        except NoKeysError:
            keys = []
        for key in sorted(keys):
            if wanted(key):
                await apply((await kv.get(key)).value)
        if stop is None:
            return
        watcher = await kv.watchall(include_history=False)
        while not stop.is_set():
            try:
                entry = await watcher.updates(timeout=1.0)
            except (TimeoutError, NatsTimeout):
                continue
            if entry is not None and entry.operation is None:
                await apply(entry.value)
        await watcher.stop()
    finally:
        await nc.close()
