"""The proposals a publish spans: every version of a skill made after the live one up to the one
being published, oldest first, each with what made it (a new spec revision, people's annotation
changes in between). Read with one query per table; the tracing itself is pure
(`derive.lineage`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import col, or_, select

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import ProposalBrief
from skillpress.derive.diff import PackageDiff
from skillpress.derive.lineage import AnnotationChange, Step, origins, why_made
from skillpress.format.manifest import Manifest
from skillpress.schemas.records import AnnotationRecord, Version

__all__ = ["Made", "came_from", "proposals_between"]


@dataclass(frozen=True)
class Made:
    """A version in the line from live to a target, and why it was made, in words."""

    step: Step
    created_at: datetime
    because: str


def _cutoff(v: Version) -> datetime:
    return v.annotations_as_of or v.created_at


def _changes_between(
    rows: list[AnnotationRecord], after: datetime, upto: datetime
) -> list[AnnotationChange]:
    out: list[AnnotationChange] = []
    for r in rows:
        if after < r.created_at <= upto:
            out.append(AnnotationChange(r.kind, r.target, r.created_by, retired=False))
        if r.retired_at is not None and after < r.retired_at <= upto:
            out.append(AnnotationChange(r.kind, r.target, r.retired_by or "?", retired=True))
    return out


def proposals_between(ctx: AppContext, live: Version, target: Version) -> list[Made]:
    """The versions made after `live` up to `target` (just `target` when it is older), oldest
    first, each saying why it was made."""
    with ctx.records.session() as s:
        rows = list(
            s.exec(
                select(Version)
                .where(
                    Version.skill_id == target.skill_id,
                    col(Version.created_at) > live.created_at,
                    col(Version.created_at) <= target.created_at,
                )
                .order_by(col(Version.created_at))
            ).all()
        )
        if not rows or rows[-1].id != target.id:
            rows = [target]
        since = _cutoff(live)
        notes = list(
            s.exec(
                select(AnnotationRecord).where(
                    AnnotationRecord.skill_id == target.skill_id,
                    or_(
                        col(AnnotationRecord.created_at) > since,
                        col(AnnotationRecord.retired_at) > since,
                    ),
                )
            ).all()
        )
        s.expunge_all()
    made: list[Made] = []
    before = live
    for v in rows:
        changes = _changes_between(notes, _cutoff(before), _cutoff(v))
        because = why_made(v.revision_id != before.revision_id, v.revision_id, changes)
        made.append(Made(Step(v.id, v.files), v.created_at, because))
        before = v
    return made


def came_from(
    ctx: AppContext,
    live: Version,
    target: Version,
    old: dict[str, bytes],
    new: dict[str, bytes],
    diff: PackageDiff,
) -> tuple[list[ProposalBrief], dict[str, str]]:
    """The proposals from `live` to `target` (oldest first, each with why it was made) and, for
    each operation and file the diff names, the id of the proposal its change came from."""
    line = proposals_between(ctx, live, target)
    before, after = Manifest.from_json(old["skill.json"]), Manifest.from_json(new["skill.json"])
    files = {e.name: e.file for e in before.operations} | {e.name: e.file for e in after.operations}
    named = [
        *diff["added"],
        *diff["removed"],
        *(c["operation"] for c in diff["changed"]),
        *diff.get("described", []),
    ]
    paths = {n: files[n] for n in named if n in files}
    for p in [*diff.get("other_files", []), *(["workflows.yaml"] if diff.get("workflows") else [])]:
        paths[p] = p
    found = origins(live.files, [m.step for m in line], set(paths.values()))
    briefs: list[ProposalBrief] = [
        {
            "version_id": m.step.version_id,
            "created_at": m.created_at.isoformat(),
            "because": m.because,
        }
        for m in line
    ]
    return briefs, {n: found[p] for n, p in sorted(paths.items()) if p in found}
