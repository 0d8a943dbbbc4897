"""The publish check: whatever publish accepts, agents can call. A version is loaded as the
runtime will load it (every tool built, every schema checked, its workflows against the live
skills they use), and the live version's gates it would drop are named for a person to confirm."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from sqlmodel import Session

from skillpress.app.base.context import AppContext
from skillpress.app.records.versions import (
    PublishRefused,
    find_skill,
    find_version,
    live_skill_finder,
    version_files,
)
from skillpress.derive.diff import gates
from skillpress.format.gc_pause import gc_paused
from skillpress.format.manifest import Manifest
from skillpress.platform.blobs import BlobStore
from skillpress.schemas.records import Skill, Version

if TYPE_CHECKING:
    from skillpress.runtime.package.model import Skill as RuntimeSkill

__all__ = ["check_publish", "check_publish_request", "gates_dropped"]


# the last version the check loaded, by id (its content's hash: the same id, the same files);
# the request's check and the publish worker's then load a large API once when one process runs both
_LOADED: dict[str, RuntimeSkill] = {}
_LOADED_LOCK = threading.Lock()


def _loads(
    version: Version,
    files: dict[str, bytes],
    others: Callable[[str], RuntimeSkill | None] | None = None,
) -> None:
    """The publish check: the runtime loads the files and their workflows."""
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.package.skill import load_skill
    from skillpress.runtime.workflows.load import load_workflows

    try:
        with _LOADED_LOCK:
            loaded = _LOADED.get(version.id)
        if loaded is None:
            loaded = load_skill(files)
            with _LOADED_LOCK:  # the request's check and the publish worker's, in one process
                _LOADED.clear()
                _LOADED[version.id] = loaded
        load_workflows(files, loaded, others)
    except PackageError as exc:
        raise PublishRefused(
            f"version {version.id[:12]} cannot be published: the runtime would not load it ({exc})"
        ) from None


def _dropped(
    s: Session, blobs: BlobStore, skill: Skill, version: Version, files: Mapping[str, bytes]
) -> list[str]:
    """The live version's gates that `version` (its `files`) does not keep."""
    if not skill.live_version_id or skill.live_version_id == version.id:
        return []
    live = s.get(Version, skill.live_version_id)
    if live is None:
        return []
    return sorted(set(gates(version_files(blobs, live))) - set(gates(files)))


def check_publish(
    s: Session, blobs: BlobStore, skill: Skill, version: Version, remove_gates: bool
) -> dict[str, bytes]:
    """`version`'s files, once publishing it is allowed: a version the runtime would not load is
    refused first (whatever publish accepts, agents can call), then one that would drop a live
    gate unless `remove_gates`. The names and texts it reads are cached as a derivation's are,
    and emptied after it (publishing 10,000 skills left them full: 85 MB of strings in `up`)."""
    files = version_files(blobs, version)
    with gc_paused():
        _loads(version, files, live_skill_finder(s, blobs))
        dropped = _dropped(s, blobs, skill, version, files)
    if dropped and not remove_gates:
        raise PublishRefused(
            f"publishing {version.id[:12]} would drop the live version's gate{'s' if len(dropped) > 1 else ''}"
            f" {', '.join(dropped)}; publish with --remove-gates if that is meant"
        )
    return files


def check_publish_request(ctx: AppContext, slug: str, ref: str, remove_gates: bool) -> str:
    """The id of the version `ref` names, once publishing it is allowed (PublishRefused if not)."""
    skill = find_skill(ctx, slug)
    with ctx.records.session() as s:
        version = find_version(s, skill, ref)
        check_publish(s, ctx.blobs, skill, version, remove_gates)
        return version.id


def gates_dropped(ctx: AppContext, slug: str, ref: str) -> tuple[str, list[tuple[str, bool]]]:
    """(the id of the version `ref` names, the live gates publishing it would drop, each with
    whether its operation is gone from that version): what a person confirms before a gate stops
    applying. Read from the two versions' declarations alone, so a page can show it at once on a
    large API; publishing makes the load check too."""
    skill = find_skill(ctx, slug)
    with ctx.records.session() as s:
        version = find_version(s, skill, ref)
        files = version_files(ctx.blobs, version)
        dropped = _dropped(s, ctx.blobs, skill, version, files)
    calls: set[str] = set()
    if dropped and "skill.json" in files:
        calls = {
            f"{o.method.upper()} {o.path}"
            for o in Manifest.from_json(files["skill.json"]).operations
        }
    return version.id, [(match, match not in calls) for match in dropped]
