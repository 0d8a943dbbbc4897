"""Reviewing what guess-approvals suggested: the open suggestions of the latest revision in review
order (money, deletes, changes, reads), and confirming one, each confirmation an annotation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import SuggestionGroups, SuggestionView
from skillpress.app.operator.annotations import annotation_record, check_annotation
from skillpress.app.records.annotations import active_ids, active_of_kind
from skillpress.app.records.derivations import latest_revision_id
from skillpress.app.records.suggestions import (
    close_suggestions,
    confirm_together,
    decisions_of,
    open_suggestions_of,
)
from skillpress.app.records.versions import find_skill
from skillpress.derive.annotations import Annotation
from skillpress.derive.approvals import GROUPS
from skillpress.errors import NotFound, Refused, Unavailable
from skillpress.schemas.records import AnnotationRecord, Skill

# how many times a confirmation is checked again after another change to the skill's annotations
_TURNS = 10

__all__ = [
    "GROUPS",
    "Confirmed",
    "Pending",
    "confirm",
    "confirm_many",
    "confirm_suggestions",
    "dismiss_suggestions",
    "open_suggestions",
    "suggestion_groups",
]


@dataclass(frozen=True)
class Pending:
    """One open suggestion, and the annotation confirming it would add."""

    id: str
    operation: str
    group: str
    kind: str  # approval | identity
    annotation: dict[str, Any]
    why: str

    @property
    def confirmable(self) -> bool:
        """Whether confirming it adds the annotation (a header's value is only the operator's
        to give); a gate that binds nothing is confirmed like any other: each call waits."""
        return self.kind != "header"


def open_suggestions(ctx: AppContext, skill: Skill) -> list[Pending]:
    """The latest revision's open suggestions in review order."""
    revision_id = latest_revision_id(ctx, skill.id)
    rows = open_suggestions_of(ctx, revision_id)
    out = []
    for r in sorted(rows, key=lambda r: (GROUPS.index(r.group), r.operation, r.kind)):
        body = r.body
        if r.kind == "approval":
            keep = ("matches", "risk", "binds", "amount", "currency")
            ann = {k: v for k, v in body.items() if k in keep}
        elif r.kind == "header":
            ann = {"names": body["names"]}
        else:
            ann = {"fields": body["fields"]}
        why = str(body.get("why", ""))
        if body.get("unsure"):  # what a person checks before confirming the guess
            why += f"; unsure: {body['unsure']}"
        out.append(Pending(r.id, r.operation, r.group, r.kind, ann, why))
    return out


def _refusal(pending: Pending, skill: Skill) -> str | None:
    """Why a suggestion cannot be confirmed as it is, or None."""
    if pending.kind == "header":
        return (
            f"only you know the value of {', '.join(pending.annotation['names'])}: skillpress annotate"
            f" {skill.slug} -o {pending.operation} --fixed-header NAME=VALUE"
        )
    return None


def _in_force(rows: Sequence[AnnotationRecord], pending: Pending) -> str | None:
    """The annotation already in force (among the active `rows` of its kind) that this
    suggestion would add again (one gate per operation and match, one identity per operation),
    or None."""
    target = f"operation:{pending.operation}"
    for row in (r for r in rows if r.target == target):
        body = row.body
        if pending.kind == "identity" or body.get("matches") == pending.annotation.get("matches"):
            return row.id
    return None


def confirm(ctx: AppContext, skill: Skill, pending: Pending, by: str) -> str:
    """Confirm one suggestion: checked like any annotation, stored, the suggestion closed; the
    annotation already in force when one is (confirming twice adds nothing). Raises Refused
    (AnnotationRefused among them) for one that cannot be confirmed."""
    done = confirm_many(ctx, skill, [pending], by)
    if done.skipped:
        raise Refused(done.skipped[0]["reason"])
    return done.annotation_ids[0]


@dataclass(frozen=True)
class Confirmed:
    """What one confirmation pass did: annotations stored (or found in force), suggestions
    skipped with why, and how many stay open."""

    annotation_ids: list[str]
    skipped: list[dict[str, str]]
    remaining: int


def confirm_many(
    ctx: AppContext, skill: Skill, chosen: Sequence[Pending], by: str, open_count: int = 0
) -> Confirmed:
    """Confirm `chosen` with one derivation, however many there are: every new annotation is
    checked at once; one the derivation refuses is skipped with its reason and the rest checked
    again (so a group costs one derivation, plus one per suggestion that cannot be meant).
    Stored only against the annotations it was checked with: checked again when another
    change landed meanwhile (`store_checked`'s rule)."""
    for _ in range(_TURNS):
        done = _confirm_once(ctx, skill, chosen, by, open_count)
        if done is not None:
            return done
    raise Unavailable(f"{skill.slug}'s annotations kept changing while these were confirmed")


def _confirm_once(
    ctx: AppContext, skill: Skill, chosen: Sequence[Pending], by: str, open_count: int
) -> Confirmed | None:
    seen = active_ids(ctx, skill.id)
    skipped: list[dict[str, str]] = []
    kept: list[str] = []  # annotations already in force
    closed: list[str] = []  # their suggestions, confirmed with the rest
    todo: list[Pending] = []
    active = _in_force_by_kind(ctx, skill, chosen)
    for sug in chosen:
        why = _refusal(sug, skill)
        if why is not None:
            skipped.append({"suggestion": sug.id, "operation": sug.operation, "reason": why})
            continue
        existing = _in_force(active[sug.kind], sug)
        if existing is not None:
            kept.append(existing)
            closed.append(sug.id)
        else:
            todo.append(sug)
    while todo:
        new = [_as_annotation(sug) for sug in todo]
        try:
            check_annotation(ctx, skill, new)
            break
        except Refused as exc:
            if _in_force_meanwhile(ctx, skill, todo, kept, closed):
                continue  # another person confirmed some of them at this moment: check the rest
            named = [t for t in todo if f"({t.id})" in str(exc)]
            failed = named[:1] or _each_refused(ctx, skill, todo)
            if not failed:
                raise  # no one of them alone is refused: what refuses them is not theirs
            for culprit in failed:
                why = str(exc) if named else culprit_reason(ctx, skill, culprit)
                reason = why.replace(f" ({culprit.id})", "").replace(f"({culprit.id})", "")
                skipped.append(
                    {"suggestion": culprit.id, "operation": culprit.operation, "reason": reason}
                )
                todo.remove(culprit)
    now = ctx.clock()
    adding = [
        (
            sug.id,
            annotation_record(
                skill, sug.kind, f"operation:{sug.operation}", sug.annotation, by, now
            ),
        )
        for sug in todo
    ]
    decided = confirm_together(ctx, seen, closed, adding, by)
    if decided is None:
        return None  # another change to the skill's annotations landed: check again
    lost = set(decided)
    done = [*kept, *(record.id for sid, record in adding if sid not in lost)]
    if lost:  # decided by someone else at this moment: their decision stands
        done += _decided_meanwhile(ctx, skill, [t for t in todo if t.id in lost], skipped)
    return Confirmed(done, skipped, max(open_count - len(done), 0))


def _in_force_by_kind(
    ctx: AppContext, skill: Skill, pending: Sequence[Pending]
) -> dict[str, list[AnnotationRecord]]:
    """The skill's annotations in force, for each kind of the `pending` suggestions."""
    return {kind: active_of_kind(ctx, skill.id, kind) for kind in {p.kind for p in pending}}


def _in_force_meanwhile(
    ctx: AppContext, skill: Skill, todo: list[Pending], kept: list[str], closed: list[str]
) -> bool:
    """Whether any of `todo` is in force now (confirmed by another person since this
    confirmation read what was): each such one is moved to `kept` and `closed`, as one found in
    force at first is."""
    active = _in_force_by_kind(ctx, skill, todo)
    moved = False
    for sug in list(todo):
        existing = _in_force(active[sug.kind], sug)
        if existing is not None:
            kept.append(existing)
            closed.append(sug.id)
            todo.remove(sug)
            moved = True
    return moved


def _decided_meanwhile(
    ctx: AppContext, skill: Skill, lost: Sequence[Pending], skipped: list[dict[str, str]]
) -> list[str]:
    """What stands for suggestions another person decided while these were confirmed: the
    annotation their confirmation stored (confirming twice adds nothing), or a dismissal,
    added to `skipped` with who made it."""
    decisions = decisions_of(ctx, [sug.id for sug in lost])
    active = _in_force_by_kind(ctx, skill, lost)
    found = []
    for sug in lost:
        existing = _in_force(active[sug.kind], sug)
        if existing is not None:
            found.append(existing)
            continue
        status, by = decisions.get(sug.id, ("gone", None))
        reason = f"{status} by {by} meanwhile" if by else f"{status} meanwhile"
        skipped.append({"suggestion": sug.id, "operation": sug.operation, "reason": reason})
    return found


def _as_annotation(sug: Pending) -> Annotation:
    return Annotation(f"({sug.id})", sug.kind, f"operation:{sug.operation}", sug.annotation)


def culprit_reason(ctx: AppContext, skill: Skill, sug: Pending) -> str:
    """Why one suggestion alone is refused ('' when it is not)."""
    try:
        check_annotation(ctx, skill, [_as_annotation(sug)])
    except Refused as exc:
        return str(exc)
    return ""


def _each_refused(ctx: AppContext, skill: Skill, todo: Sequence[Pending]) -> list[Pending]:
    """The suggestions refused on their own (a refusal that named none of them: found one by one)."""
    return [t for t in todo if culprit_reason(ctx, skill, t)]


def confirm_suggestions(
    ctx: AppContext,
    skill: Skill,
    *,
    ids: Sequence[str] = (),
    groups: Sequence[str] = (),
    by: str,
) -> Confirmed:
    """Confirm the open suggestions named by `ids` and every one in `groups` (review order), in
    one derivation; one that cannot be confirmed is skipped with its reason. NotFound for an id
    that is not open, Refused for a group that does not exist."""
    chosen, pending = _chosen(ctx, skill, ids, groups)
    return confirm_many(ctx, skill, chosen, by, len(pending))


def dismiss_suggestions(
    ctx: AppContext,
    skill: Skill,
    *,
    ids: Sequence[str] = (),
    groups: Sequence[str] = (),
    by: str,
) -> int:
    """Dismiss suggestions: decided by `by`, never offered again, on later revisions either.
    How many; NotFound for an id that is not open."""
    chosen, _ = _chosen(ctx, skill, ids, groups)
    # one decided by someone else at this moment keeps their decision
    return len(close_suggestions(ctx, [p.id for p in chosen], "dismissed", by))


def _chosen(
    ctx: AppContext, skill: Skill, ids: Sequence[str], groups: Sequence[str]
) -> tuple[list[Pending], list[Pending]]:
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise Refused(f"no group {unknown[0]!r}: one of {', '.join(GROUPS)}")
    pending = open_suggestions(ctx, skill)
    missing = set(ids) - {p.id for p in pending}
    if missing:
        raise NotFound(f"no open suggestion {sorted(missing)[0]!r} for {skill.slug}")
    return [p for p in pending if p.id in ids or p.group in groups], pending


def suggestion_groups(ctx: AppContext, slug: str) -> SuggestionGroups:
    """The skill's open suggestions, grouped money, deletes, changes, reads."""
    pending = open_suggestions(ctx, find_skill(ctx, slug))
    groups: dict[str, list[SuggestionView]] = {g: [] for g in GROUPS}
    for p in pending:
        groups[p.group].append(
            {
                "id": p.id,
                "operation": p.operation,
                "kind": p.kind,
                "annotation": p.annotation,
                "why": p.why,
                "bindable": p.confirmable,
            }
        )
    return {"remaining": len(pending), "groups": groups}
