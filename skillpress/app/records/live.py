"""What is live, as the records say: each skill's live version as a pointer (what the live bucket
holds and followers keep), and a tag of the live set that changes exactly when a follower's look
would find something new."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import select as columns_of
from sqlalchemy import update
from sqlmodel import Session, col, select

from skillpress.app.base.context import AppContext
from skillpress.app.records.versions import pointer_of
from skillpress.schemas.events import LiveVersion
from skillpress.schemas.records import LiveSet, Skill, Version

__all__ = [
    "live_moved",
    "live_pointer_dicts",
    "live_pointers",
    "live_set_tag",
    "live_version_of",
    "live_versions",
    "whole_live_set_tag",
]


def live_moved(s: Session) -> None:
    """Say, in the transaction that moves a skill's live pointer, that the live set changed:
    the one row a look reads moves with it (its write lock held only until this commits)."""
    s.connection().execute(
        update(LiveSet).where(col(LiveSet.id) == 1).values(generation=col(LiveSet.generation) + 1)
    )


def whole_live_set_tag(ctx: AppContext) -> str:
    """A tag of the whole live set that changes exactly when any skill's live pointer moved:
    one read of one row, whatever the size of the registry."""
    with ctx.records.session() as s:
        row = s.get(LiveSet, 1)
        if row is None:  # not migrated that far: the tag of every pointer, as it was made before
            return live_set_tag(ctx)
        return f"{row.epoch}.{row.generation}"


def live_set_tag(ctx: AppContext, slugs: Sequence[str] | None = None) -> str:
    """A tag of the live set (each skill's slug and live version, of `slugs` only when named):
    it changes exactly when a follower's look would find something new. One query of two
    columns (for a few named skills, what their look costs; the whole set's is
    `whole_live_set_tag`)."""
    import hashlib

    query = select(Skill.slug, Skill.live_version_id).where(col(Skill.live_version_id).is_not(None))
    if slugs is not None:
        query = query.where(col(Skill.slug).in_(list(slugs)))
    with ctx.records.session() as s:
        rows = sorted((str(slug), str(version)) for slug, version in s.exec(query).all())
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:32]


def live_versions(ctx: AppContext, slugs: Sequence[str] | None = None) -> list[LiveVersion]:
    """Every skill's live version (of `slugs` only, when named), by slug (what the
    `SKILLPRESS_LIVE` bucket holds)."""
    query = select(Skill).where(col(Skill.live_version_id).is_not(None))
    if slugs is not None:
        query = query.where(col(Skill.slug).in_(list(slugs)))
    with ctx.records.session() as s:
        skills = s.exec(query.order_by(col(Skill.slug))).all()
        out = []
        for skill in skills:
            version = s.get(Version, skill.live_version_id)
            if version is not None:
                out.append(pointer_of(skill, version))
        return out


def live_pointer_dicts(ctx: AppContext, slugs: Sequence[str] | None = None) -> list[Any]:
    """`live_versions` as the JSON values the API answers (each exactly a pointer's
    `model_dump(mode="json")`), read in one query."""
    return list(live_pointers(ctx, slugs))


def live_pointers(ctx: AppContext, slugs: Sequence[str] | None = None) -> Iterator[Any]:
    """`live_pointer_dicts` one at a time, read from the records 500 rows at a time: the whole
    set's answer is made from 10,000 skills and never holds them all as objects at once (each
    pointer was held to its form when its version was made)."""
    query = (
        columns_of(
            col(Skill.slug),
            col(Version.id),
            col(Version.files_json),
            col(Version.hosts_json),
            col(Version.derivation_blob),
        )
        .join(Version, col(Version.id) == col(Skill.live_version_id))
        .order_by(col(Skill.slug))
    )
    if slugs is not None:
        query = query.where(col(Skill.slug).in_(list(slugs)))
    with ctx.records.session() as s:
        rows = s.connection().execution_options(yield_per=500).execute(query)
        for slug, version_id, files, hosts, pack in rows:
            yield {
                "skill": slug,
                "version_id": version_id,
                "files": _decoded(files, dict),
                "hosts": [str(h) for h in _decoded(hosts, list)],
                "auth_header": None,
                "pack": pack,
            }


def _decoded(text: str, kind: type) -> Any:
    value = json.loads(text)
    return value if isinstance(value, kind) else kind()


def live_version_of(ctx: AppContext, slug: str) -> LiveVersion | None:
    """The skill's live version as the records say (None: the skill is not live, or unknown)."""
    with ctx.records.session() as s:
        skill = s.exec(select(Skill).where(Skill.slug == slug)).first()
        if skill is None or skill.live_version_id is None:
            return None
        version = s.get(Version, skill.live_version_id)
        return None if version is None else pointer_of(skill, version)
