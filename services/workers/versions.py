"""Reading versions back from records and blobs: their files, the live one, the publish check."""

from __future__ import annotations

import json

from sqlmodel import Session, col, select

from schemas.records import Skill, Version
from services.derive.diff import gates
from services.platform.blobs import BlobStore

__all__ = ["PublishRefused", "check_publish", "find_version", "newest_version", "version_files"]


class PublishRefused(Exception):
    """The version cannot be published as asked; the message says what to do instead."""


def version_files(blobs: BlobStore, version: Version) -> dict[str, bytes]:
    keys: dict[str, str] = json.loads(version.files_json)
    return {path: blobs.get(key) for path, key in keys.items()}


def newest_version(s: Session, skill_id: str) -> Version | None:
    """The skill's most recently made version, live or not."""
    return s.exec(
        select(Version).where(Version.skill_id == skill_id).order_by(col(Version.created_at).desc())
    ).first()


def find_version(s: Session, skill: Skill, ref: str) -> Version:
    """A version of `skill` by id or unique id prefix (at least 6 characters)."""
    exact = s.get(Version, ref)
    if exact is not None and exact.skill_id == skill.id:
        return exact
    if len(ref) < 6:
        raise PublishRefused(
            f"{ref!r}: give at least 6 characters of a version id (skillpress versions {skill.slug})"
        )
    found = s.exec(
        select(Version).where(Version.skill_id == skill.id, col(Version.id).startswith(ref))
    ).all()
    if not found:
        raise PublishRefused(
            f"{skill.slug} has no version {ref!r} (skillpress versions {skill.slug})"
        )
    if len(found) > 1:
        raise PublishRefused(
            f"{ref!r} matches {len(found)} versions of {skill.slug}; give more of the id"
        )
    return found[0]


def check_publish(
    s: Session, blobs: BlobStore, skill: Skill, version: Version, remove_gates: bool
) -> list[str]:
    """The gates publishing `version` would drop (refused unless `remove_gates`)."""
    if not skill.live_version_id or skill.live_version_id == version.id:
        return []
    live = s.get(Version, skill.live_version_id)
    if live is None:
        return []
    dropped = sorted(
        set(gates(version_files(blobs, live))) - set(gates(version_files(blobs, version)))
    )
    if dropped and not remove_gates:
        raise PublishRefused(
            f"publishing {version.id[:12]} would drop the live version's gate{'s' if len(dropped) > 1 else ''}"
            f" {', '.join(dropped)}; publish with --remove-gates if that is meant"
        )
    return dropped
