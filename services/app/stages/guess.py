"""The guess-approvals stage's use-case: an approval rule and (for creates) an identity guessed per
operation, stored as open suggestions, once; a person's decision on an earlier revision's
suggestion, or an annotation already in force, stays decided. Never applied."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlmodel import col, select

from skillpress.schemas.records import AnnotationRecord, Suggestion
from skillpress.services.app.base.context import AppContext
from skillpress.services.app.records.derivations import (
    derivation_files,
    load_derivation,
    load_revision,
)
from skillpress.services.derive.approvals import Suggestion as Guess
from skillpress.services.derive.approvals import guess_suggestions
from skillpress.services.errors import NotFound
from skillpress.services.platform.ids import derived_id

__all__ = ["Guessed", "guess_revision", "record_suggestions"]


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


@dataclass(frozen=True)
class Guessed:
    """How many suggestions of each kind a revision's guesses made."""

    approvals: int
    identities: int
    headers: int


def guess_revision(ctx: AppContext, revision_id: str) -> Guessed:
    """The revision's guesses stored as suggestions for a person to review."""
    inputs = load_revision(ctx, revision_id)
    if inputs.revision.package_blob is None:
        raise NotFound(f"revision {revision_id} was not parsed")
    guesses = guess_suggestions(
        derivation_files(ctx, load_derivation(ctx, inputs.revision.package_blob))
    )
    record_suggestions(ctx, inputs.skill.id, revision_id, guesses)
    return Guessed(
        approvals=sum(1 for g in guesses if g.kind == "approval"),
        identities=sum(1 for g in guesses if g.kind == "identity"),
        headers=sum(1 for g in guesses if g.kind == "header"),
    )
