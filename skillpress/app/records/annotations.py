"""Annotation records: every query on the `annotations` table (people's additions, added and
retired, never edited or deleted). Records are returned detached from their session."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session, col, select, update

from skillpress.app.base.context import AppContext
from skillpress.errors import NotFound, Refused
from skillpress.schemas.records import AnnotationRecord, Skill

__all__ = [
    "active_ids",
    "take_turn",
    "unchanged",
    "write_if_unchanged",
    "skill_annotations",
    "active_of_kind",
    "retire_annotations",
    "annotations_to_rekey",
]


def active_ids(ctx: AppContext, skill_id: str) -> frozenset[str]:
    """The ids of the skill's annotations in force (not retired)."""
    with ctx.records.session() as s:
        return _active_ids(s, skill_id)


def _active_ids(s: Session, skill_id: str) -> frozenset[str]:
    query = select(AnnotationRecord.id).where(
        AnnotationRecord.skill_id == skill_id, col(AnnotationRecord.retired_at).is_(None)
    )
    return frozenset(s.exec(query).all())


def take_turn(s: Session, skill_id: str) -> None:
    """The skill's row taken for this transaction (a write that changes nothing): writers of
    one skill's annotations take turns, each seeing what the one before it wrote."""
    s.connection().execute(
        update(Skill).where(col(Skill.id) == skill_id).values(slug=col(Skill.slug))
    )


def unchanged(s: Session, skill_id: str, seen: frozenset[str]) -> bool:
    """Whether, its turn taken, the skill's annotations in force are still `seen`."""
    take_turn(s, skill_id)
    return _active_ids(s, skill_id) == seen


def write_if_unchanged(
    ctx: AppContext,
    skill_id: str,
    seen: frozenset[str],
    add: Sequence[AnnotationRecord],
    retire: Sequence[str],
    by: str,
    now: datetime,
) -> bool:
    """`add` stored and `retire` retired in one transaction, only while the skill's annotations
    in force are still `seen` (what the check that allowed them read): two people adding a
    gate to one operation at once, or promoting one workflow twice, were each checked against
    a skill without the other's, and both stored. False, nothing written, when they changed."""
    with ctx.records.session() as s:
        if not unchanged(s, skill_id, seen) or not set(retire) <= seen:
            return False
        for row in (s.get(AnnotationRecord, i) for i in retire):
            assert row is not None  # in force: `seen` holds it
            row.retired_at, row.retired_by = now, by
        s.add_all(add)
        return True


def skill_annotations(
    ctx: AppContext, skill_id: str, active_only: bool = False
) -> list[AnnotationRecord]:
    """A skill's annotations, oldest first (`active_only`: those not retired)."""
    query = select(AnnotationRecord).where(AnnotationRecord.skill_id == skill_id)
    if active_only:
        query = query.where(col(AnnotationRecord.retired_at).is_(None))
    with ctx.records.session() as s:
        rows = list(s.exec(query.order_by(col(AnnotationRecord.created_at))).all())
        s.expunge_all()
    return rows


def active_of_kind(ctx: AppContext, skill_id: str, kind: str) -> list[AnnotationRecord]:
    """The skill's annotations of one kind that are not retired."""
    with ctx.records.session() as s:
        rows = list(
            s.exec(
                select(AnnotationRecord).where(
                    AnnotationRecord.skill_id == skill_id,
                    AnnotationRecord.kind == kind,
                    col(AnnotationRecord.retired_at).is_(None),
                )
            ).all()
        )
        s.expunge_all()
    return rows


def retire_annotations(ctx: AppContext, ids: list[str], by: str, now: datetime) -> Skill:
    """Retire the annotations `ids` at `now` (NotFound for one not active); returns their skill."""
    with ctx.records.session() as s:
        rows = [s.get(AnnotationRecord, i) for i in ids]
        for i, r in zip(ids, rows, strict=True):
            if r is None or r.retired_at is not None:
                raise NotFound(f"no active annotation {i!r} (skillpress annotations SLUG)")
        skill = None
        for r in rows:
            assert r is not None
            r.retired_at, r.retired_by = now, by
            skill = skill or s.get(Skill, r.skill_id)
        assert skill is not None
        s.expunge(skill)
        return skill


def annotations_to_rekey(ctx: AppContext, ids: list[str]) -> tuple[Skill, list[AnnotationRecord]]:
    """The active annotations `ids`, all of one skill, and that skill (NotFound for one not
    active, Refused for two skills' at once)."""
    found: list[AnnotationRecord] = []
    skill: Skill | None = None
    with ctx.records.session() as s:
        for annotation_id in ids:
            row = s.get(AnnotationRecord, annotation_id)
            if row is None or row.retired_at is not None:
                raise NotFound(f"no active annotation {annotation_id!r}")
            if skill is not None and row.skill_id != skill.id:
                raise Refused(f"{annotation_id} is another skill's: re-key one skill at a time")
            if skill is None:
                skill = s.get(Skill, row.skill_id)
            found.append(row)
        assert skill is not None
        s.expunge_all()
    return skill, found
