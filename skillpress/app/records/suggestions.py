"""Suggestion records: every query on the `suggestions` table (guessed approval rules,
identities and credential headers, shown for review, never applied)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlmodel import col, select

from skillpress.app.base.context import AppContext
from skillpress.derive.approvals import Suggestion as Guess
from skillpress.platform.ids import derived_id
from skillpress.schemas.records import AnnotationRecord, Suggestion

__all__ = ["record_suggestions", "open_suggestions_of", "close_suggestions", "confirm_together"]


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


def close_suggestions(ctx: AppContext, ids: Sequence[str], status: str, by: str) -> None:
    """The suggestions `ids` decided (`confirmed` or `dismissed`) by `by`, now; an unknown id
    is skipped."""
    now = ctx.clock()
    with ctx.records.session() as s:
        for sid in ids:
            row = s.get(Suggestion, sid)
            if row is not None:
                row.status, row.decided_by, row.decided_at = status, by[:128], now


def confirm_together(
    ctx: AppContext, records: Sequence[AnnotationRecord], ids: Sequence[str], by: str
) -> None:
    """The annotations `records` stored and the suggestions `ids` confirmed by `by`, in one
    transaction: a group's decision is one write (GitHub's 195 deletes were 390)."""
    now = ctx.clock()
    with ctx.records.session() as s:
        s.add_all(records)
        for sid in ids:
            row = s.get(Suggestion, sid)
            if row is not None:
                row.status, row.decided_by, row.decided_at = "confirmed", by[:128], now
