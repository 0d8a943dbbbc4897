"""Suggestion records: every query on the `suggestions` table (guessed approval rules,
identities and credential headers, shown for review, never applied)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session, col, select, update

from skillpress.app.base.context import AppContext
from skillpress.app.records.annotations import unchanged
from skillpress.derive.approvals import Suggestion as Guess
from skillpress.platform.ids import derived_id
from skillpress.schemas.records import AnnotationRecord, Suggestion

__all__ = [
    "close_suggestions",
    "confirm_together",
    "decisions_of",
    "open_suggestions_of",
    "record_suggestions",
]


def record_suggestions(
    ctx: AppContext, skill_id: str, revision_id: str, guesses: Sequence[Guess]
) -> None:
    """Each guess as an open suggestion of this revision, once. A person's decision is never
    lost to a new revision: an operation whose suggestion of the same kind was confirmed or
    dismissed on an earlier one, or that already has an annotation of that kind in force,
    starts decided."""
    now = ctx.clock()
    with ctx.records.session() as s:
        decided: dict[tuple[str, str], str] = {}
        for op, kind, status in s.exec(
            select(Suggestion.operation, Suggestion.kind, Suggestion.status)
            .where(Suggestion.skill_id == skill_id, Suggestion.status != "open")
            .order_by(col(Suggestion.created_at))
        ).all():
            decided[(op, kind)] = status  # the latest decision stands
        for rec in s.exec(
            select(AnnotationRecord).where(
                AnnotationRecord.skill_id == skill_id,
                col(AnnotationRecord.retired_at).is_(None),
                col(AnnotationRecord.kind).in_(("approval", "identity")),
            )
        ).all():
            if rec.target.startswith("operation:"):
                decided.setdefault((rec.target.split(":", 1)[1], rec.kind), "confirmed")
        for g in guesses:
            sid = derived_id("suggestion", revision_id, g.operation, g.kind)
            if s.get(Suggestion, sid) is not None:
                continue
            s.add(
                Suggestion(
                    id=sid,
                    skill_id=skill_id,
                    revision_id=revision_id,
                    operation=g.operation[:128],
                    kind=g.kind,
                    group=g.group,
                    body_json=json.dumps(g.body, sort_keys=True),
                    status=decided.get((g.operation[:128], g.kind), "open"),
                    created_at=now,
                )
            )


def open_suggestions_of(ctx: AppContext, revision_id: str | None) -> list[Suggestion]:
    """A revision's suggestions still open."""
    with ctx.records.session() as s:
        rows = list(
            s.exec(
                select(Suggestion).where(
                    Suggestion.revision_id == revision_id, Suggestion.status == "open"
                )
            ).all()
        )
        s.expunge_all()
    return rows


def _decided(s: Session, sid: str, status: str, by: str, now: datetime) -> bool:
    """Whether this decision of suggestion `sid` is the one that stands: a conditional update
    from `open`, so of two people deciding it at once only the first one's wins."""
    won = s.connection().execute(
        update(Suggestion)
        .where(col(Suggestion.id) == sid, col(Suggestion.status) == "open")
        .values(status=status, decided_by=by[:128], decided_at=now)
    )
    return bool(won.rowcount == 1)


def close_suggestions(ctx: AppContext, ids: Sequence[str], status: str, by: str) -> list[str]:
    """The suggestions `ids` decided (`confirmed` or `dismissed`) by `by`, now: those still
    open (one decided already, or by someone else at this moment, keeps its decision); the ids
    this call decided. An unknown id is skipped."""
    now = ctx.clock()
    with ctx.records.session() as s:
        return [sid for sid in ids if _decided(s, sid, status, by, now)]


def confirm_together(
    ctx: AppContext,
    seen: frozenset[str],
    closing: Sequence[str],
    adding: Sequence[tuple[str, AnnotationRecord]],
    by: str,
) -> list[str] | None:
    """Suggestions confirmed by `by` in one transaction (a group's decision is one write:
    GitHub's 195 deletes were 390): `closing`, whose annotation is in force already, and
    `adding`, each stored with its annotation only where its confirmation wins (two people
    confirming one suggestion at once store one gate; one confirming while another dismisses
    stores none, or the dismissal loses). The suggestions of `adding` another decision took
    first, their annotations not stored; None, nothing written, when the skill's annotations
    in force are no longer `seen` (what the confirmation was checked against)."""
    now = ctx.clock()
    lost = []
    with ctx.records.session() as s:
        if adding and not unchanged(s, adding[0][1].skill_id, seen):
            return None
        for sid in closing:
            _decided(s, sid, "confirmed", by, now)
        for sid, record in adding:
            if _decided(s, sid, "confirmed", by, now):
                s.add(record)
            else:
                lost.append(sid)
    return lost


def decisions_of(ctx: AppContext, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
    """Each suggestion's status and who decided it, by id."""
    with ctx.records.session() as s:
        rows = s.exec(select(Suggestion).where(col(Suggestion.id).in_(list(ids)))).all()
        return {r.id: (r.status, r.decided_by) for r in rows}
