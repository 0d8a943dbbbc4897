"""The skills as a list that pages: a page of them by slug after a cursor, found by a part of
their slug or title, and the counts a person reads first (skills, proposals waiting, open action
items) over all of them. What a page costs grows with the page, not with the registry: at 663
skills the console's list was 130 KB and `GET /v1/skills` 102 KB, one row per skill."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_, true
from sqlmodel import Session, col, select

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import SkillView
from skillpress.app.records.derivations import as_utc
from skillpress.schemas.records import ActionItem, Skill, Source, SourceRevision, Version

__all__ = [
    "SKILLS_PAGE",
    "skill_views",
    "skills_count",
    "skills_page",
    "skills_totals",
    "waiting_proposals",
]

SKILLS_PAGE = 100  # skills a page lists (the API's `limit` may ask for up to 500)


def _listed() -> Any:
    """The skills that are something: a version made, or an import not refused (a skill whose
    every import was refused before a version was made is nothing yet)."""
    made = select(Version.skill_id)
    taken = select(Source.skill_id).where(
        SourceRevision.source_id == Source.id, SourceRevision.status != "refused"
    )
    return select(Skill).where(or_(col(Skill.id).in_(made), col(Skill.id).in_(taken)))


def _waits(created: Any, live_since: Any) -> bool:
    """Whether a proposal waits: made after the live version (older ones were passed over)."""
    return live_since is None or as_utc(created) > as_utc(live_since)


def _live_at(s: Session, live_ids: Any) -> dict[str, Any]:
    """When each skill's live version was made, by skill id: the versions `live_ids` names (a
    list, or a query of them). A proposal made before it was passed over (`_waits`)."""
    versions = s.exec(select(Version).where(col(Version.id).in_(live_ids))).all()
    return {v.skill_id: v.created_at for v in versions}


def _count(s: Session) -> int:
    return int(s.exec(select(func.count()).select_from(_listed().subquery())).one())


def skills_count(ctx: AppContext) -> int:
    """How many skills there are (what `GET /v1/skills` says in `X-Total-Count`)."""
    with ctx.records.session() as s:
        return _count(s)


def skills_page(
    ctx: AppContext,
    after: str | None = None,
    limit: int | None = SKILLS_PAGE,
    query: str = "",
    slug: str | None = None,
) -> tuple[list[SkillView], str | None]:
    """A page of skills by slug after `after` (None: from the first; `limit` None: all), those
    whose slug or title holds `query` (any case), or the one named `slug`; and the cursor of
    the next page (None: this is the last)."""
    chosen = _listed()
    if slug is not None:
        chosen = chosen.where(Skill.slug == slug)
    if after:
        chosen = chosen.where(col(Skill.slug) > after)
    if query:
        said = query.lower()
        chosen = chosen.where(
            or_(
                col(Skill.slug).contains(said, autoescape=True),
                func.lower(col(Skill.title)).contains(said, autoescape=True),
            )
        )
    chosen = chosen.order_by(col(Skill.slug))
    if limit is not None:
        chosen = chosen.limit(limit + 1)
    with ctx.records.session() as s:
        rows = list(s.exec(chosen).all())
        skills = rows if limit is None else rows[:limit]
        more = limit is not None and len(rows) > limit
        return skill_views(s, skills, every=limit is None), skills[-1].slug if more else None


def skill_views(s: Session, skills: list[Skill], every: bool = False) -> list[SkillView]:
    """Each skill with its live version, the proposals waiting (those made after the live
    version: older ones were passed over) and its open action items; `every`: the list is
    the whole registry (read without naming each skill)."""
    ids = [k.id for k in skills]

    def mine(column: Any) -> Any:
        return true() if every else col(column).in_(ids)

    live_at = _live_at(s, [k.live_version_id for k in skills if k.live_version_id])
    proposed: dict[str, int] = {}
    waiting = select(Version).where(Version.status == "proposed", mine(Version.skill_id))
    for v in s.exec(waiting).all():
        if _waits(v.created_at, live_at.get(v.skill_id)):
            proposed[v.skill_id] = proposed.get(v.skill_id, 0) + 1
    actions: dict[str, int] = {}
    open_ = select(ActionItem).where(
        col(ActionItem.resolved_at).is_(None), mine(ActionItem.skill_id)
    )
    for a in s.exec(open_).all():
        actions[a.skill_id] = actions.get(a.skill_id, 0) + 1
    return [
        {
            "slug": k.slug,
            "title": k.title,
            "live_version_id": k.live_version_id,
            "proposals": proposed.get(k.id, 0),
            "open_actions": actions.get(k.id, 0),
            "detached": k.detached,
        }
        for k in skills
    ]


def skills_totals(ctx: AppContext) -> dict[str, int]:
    """What a person reads first, over every skill: how many there are, the proposals waiting
    and the open action items."""
    with ctx.records.session() as s:
        count = _count(s)
        live_at = _live_at(
            s, select(Skill.live_version_id).where(col(Skill.live_version_id).is_not(None))
        )
        waiting = sum(
            _waits(created, live_at.get(skill_id))
            for skill_id, created in s.exec(
                select(Version.skill_id, Version.created_at).where(Version.status == "proposed")
            ).all()
        )
        actions = s.exec(select(func.count()).where(col(ActionItem.resolved_at).is_(None))).one()
    return {"skills": count, "proposals": waiting, "open_actions": int(actions)}


def waiting_proposals(
    ctx: AppContext, slugs: list[str] | None = None
) -> tuple[list[tuple[str, str]], list[str]]:
    """Each skill's newest proposal that waits (made after its live version), as (slug, version
    id) by slug: of every skill, or of those `slugs` name; and the slugs named that no skill
    has."""
    with ctx.records.session() as s:
        chosen = select(Skill)
        if slugs is not None:
            chosen = chosen.where(col(Skill.slug).in_(slugs))
        skills = list(s.exec(chosen).all())
        live_at = _live_at(s, [k.live_version_id for k in skills if k.live_version_id])
        newest: dict[str, Version] = {}
        waiting = select(Version).where(
            Version.status == "proposed", col(Version.skill_id).in_([k.id for k in skills])
        )
        for v in s.exec(waiting).all():
            kept = newest.get(v.skill_id)
            if _waits(v.created_at, live_at.get(v.skill_id)) and (
                kept is None or as_utc(v.created_at) > as_utc(kept.created_at)
            ):
                newest[v.skill_id] = v
        found = sorted((k.slug, newest[k.id].id) for k in skills if k.id in newest)
        unknown = sorted(set(slugs or ()) - {k.slug for k in skills})
        return found, unknown
