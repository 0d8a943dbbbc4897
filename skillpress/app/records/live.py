"""What is live, as the records say: each skill's live version as a pointer (what the live bucket
holds and followers keep), and a tag of the live set that changes exactly when a follower's look
would find something new."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import col, select

from skillpress.app.base.context import AppContext
from skillpress.app.records.versions import pointer_of
from skillpress.schemas.events import LiveVersion
from skillpress.schemas.records import Skill, Version

__all__ = ["live_set_tag", "live_version_of", "live_versions"]


def live_set_tag(ctx: AppContext, slugs: Sequence[str] | None = None) -> str:
    """A tag of the live set (each skill's slug and live version, of `slugs` only when named):
    it changes exactly when a follower's look would find something new. One query of two
    columns: what an idle follower's look costs, whatever the size of the registry."""
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


def live_version_of(ctx: AppContext, slug: str) -> LiveVersion | None:
    """The skill's live version as the records say (None: the skill is not live, or unknown)."""
    with ctx.records.session() as s:
        skill = s.exec(select(Skill).where(Skill.slug == slug)).first()
        if skill is None or skill.live_version_id is None:
            return None
        version = s.get(Version, skill.live_version_id)
        return None if version is None else pointer_of(skill, version)
