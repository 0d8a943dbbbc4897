"""Reviewing what guess-approvals suggested: the open suggestions of the latest revision in review
order (money, deletes, changes, reads), and confirming one, each confirmation an annotation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import select

from schemas.records import Skill, Suggestion
from services.app.annotations import check_annotation, store_annotation
from services.app.context import AppContext
from services.app.derivations import latest_revision_id
from services.derive.annotations import Annotation
from services.derive.approvals import GROUPS
from services.errors import NotFound, Refused

__all__ = ["GROUPS", "Confirmed", "Pending", "confirm", "confirm_suggestions", "open_suggestions"]


@dataclass(frozen=True)
class Pending:
    """One open suggestion, and the annotation confirming it would add."""

    id: str
    operation: str
    group: str
    kind: str  # approval | identity
    annotation: dict[str, Any]
    why: str
    bindable: bool  # False: an approval with nothing to bind, which cannot be confirmed


def open_suggestions(ctx: AppContext, skill: Skill) -> list[Pending]:
    """The latest revision's open suggestions in review order."""
    revision_id = latest_revision_id(ctx, skill.id)
    with ctx.records.session() as s:
        rows = s.exec(
            select(Suggestion).where(
                Suggestion.revision_id == revision_id, Suggestion.status == "open"
            )
        ).all()
    out = []
    for r in sorted(rows, key=lambda r: (GROUPS.index(r.group), r.operation, r.kind)):
        body = json.loads(r.body_json)
        if r.kind == "approval":
            keep = ("matches", "risk", "binds", "amount", "currency")
            ann = {k: v for k, v in body.items() if k in keep}
            bindable = bool(body.get("bindable"))
        elif r.kind == "header":
            ann, bindable = {"names": body["names"]}, True
        else:
            ann, bindable = {"fields": body["fields"]}, True
        out.append(Pending(r.id, r.operation, r.group, r.kind, ann, body.get("why", ""), bindable))
    return out


def confirm(ctx: AppContext, skill: Skill, pending: Pending, by: str) -> str:
    """Confirm one suggestion: checked like any annotation, stored, the suggestion closed.
    Raises Refused (AnnotationRefused among them) for one that cannot be confirmed."""
    if not pending.bindable:
        raise Refused("nothing to bind, so no gate can be confirmed")
    if pending.kind == "header":
        raise Refused(
            f"only you know the value of {', '.join(pending.annotation['names'])}: skillpress annotate"
            f" {skill.slug} -o {pending.operation} --fixed-header NAME=VALUE"
        )
    target = f"operation:{pending.operation}"
    check_annotation(ctx, skill, [Annotation("(new)", pending.kind, target, pending.annotation)])
    aid = store_annotation(ctx, skill, pending.kind, target, pending.annotation, by, ctx.clock())
    with ctx.records.session() as s:
        row = s.get(Suggestion, pending.id)
        if row is not None:
            row.status = "confirmed"
    return aid


@dataclass(frozen=True)
class Confirmed:
    """What one confirmation pass did: annotations stored, suggestions skipped with why, and
    how many stay open."""

    annotation_ids: list[str]
    skipped: list[dict[str, str]]
    remaining: int


def confirm_suggestions(
    ctx: AppContext,
    skill: Skill,
    *,
    ids: Sequence[str] = (),
    groups: Sequence[str] = (),
    by: str,
) -> Confirmed:
    """Confirm the open suggestions named by `ids` and every one in `groups` (review order); one
    that cannot be confirmed is skipped with its reason. NotFound for an id that is not open,
    Refused for a group that does not exist."""
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise Refused(f"no group {unknown[0]!r}: one of {', '.join(GROUPS)}")
    pending = open_suggestions(ctx, skill)
    missing = set(ids) - {p.id for p in pending}
    if missing:
        raise NotFound(f"no open suggestion {sorted(missing)[0]!r} for {skill.slug}")
    chosen = [p for p in pending if p.id in ids or p.group in groups]
    confirmed: list[str] = []
    skipped: list[dict[str, str]] = []
    for sug in chosen:
        try:
            confirmed.append(confirm(ctx, skill, sug, by))
        except Refused as exc:
            skipped.append({"suggestion": sug.id, "operation": sug.operation, "reason": str(exc)})
    return Confirmed(confirmed, skipped, len(pending) - len(confirmed))
