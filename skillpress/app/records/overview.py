"""What operators read across the records: open action items, dead letters, a skill's revisions, a
submission's fate, every skill at a glance (queries over several record kinds, each into its view)."""

from __future__ import annotations

import json

from sqlmodel import Session, col, select

from skillpress.app.base.bus import Event
from skillpress.app.base.context import AppContext
from skillpress.app.base.views import (
    ActionItemView,
    ActionResolved,
    DeadLetterBrief,
    DeadLetterView,
    RevisionView,
    SkillView,
    Stage,
    SubmissionView,
)
from skillpress.app.records.versions import find_skill
from skillpress.errors import NotFound
from skillpress.schemas.events import RevisionRejected, VersionProposed
from skillpress.schemas.records import (
    ActionItem,
    DeadLetter,
    Skill,
    Source,
    SourceRevision,
    SubmissionOutcome,
    Version,
)
from skillpress.schemas.subjects import EVENTS

__all__ = [
    "dead_letters",
    "open_actions",
    "resolve_action",
    "revisions",
    "skill_overview",
    "skills_overview",
    "submission_status",
    "stored_outcome",
    "recorded_submission",
    "unreplayed_letters",
]


def open_actions(ctx: AppContext) -> list[ActionItemView]:
    """Action items no one has resolved yet: proposals a scheduled refresh made."""
    with ctx.records.session() as s:
        rows = s.exec(
            select(ActionItem)
            .where(col(ActionItem.resolved_at).is_(None))
            .order_by(col(ActionItem.id))
        ).all()
        slugs = {k.id: k.slug for k in s.exec(select(Skill)).all()}
        return [
            {
                "id": a.id,
                "skill": slugs.get(a.skill_id),
                "kind": a.kind,
                "version_id": a.version_id,
                "created_at": a.created_at.isoformat(),
                "message": a.message,
            }
            for a in rows
        ]


def _named(payload: str, key: str) -> str | None:
    """What a dead letter's message names under `key` (its skill, its submission), if anything."""
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    found = body.get(key) if isinstance(body, dict) else None
    return found if isinstance(found, str) else None


def dead_letters(ctx: AppContext) -> list[DeadLetterView]:
    """Messages no worker could handle, oldest first, with their error and payload."""
    with ctx.records.session() as s:
        rows = s.exec(select(DeadLetter).order_by(col(DeadLetter.id))).all()
        return [
            {
                "id": d.id,
                "worker": d.worker,
                "subject": d.subject,
                "msg_id": d.msg_id,
                "error": d.error,
                "created_at": d.created_at.isoformat(),
                "payload": d.payload,
                "skill": _named(d.payload, "skill"),
                "submission": _named(d.payload, "submission"),
                "replayed_at": d.replayed_at.isoformat() if d.replayed_at else None,
                "replayed_as": d.replayed_as,
            }
            for d in rows
        ]


def _revision_row(rev: SourceRevision, source: Source, made: list[str]) -> RevisionView:
    return {
        "revision_id": rev.id,
        "spec_sha256": rev.spec_sha256,
        "fetched_at": rev.fetched_at.isoformat(),
        "from": source.fetched_from or source.kind,
        "status": rev.status,
        "refusal_reason": rev.refusal_reason,
        "operations": rev.operations,
        "submission": rev.submission,
        "versions": made,
    }


def revisions(ctx: AppContext, slug: str) -> list[RevisionView]:
    """A skill's revisions, newest first: when, from where, parsed or refused (and why), the
    versions each made."""
    skill = find_skill(ctx, slug)
    with ctx.records.session() as s:
        rows = s.exec(
            select(SourceRevision, Source)
            .where(SourceRevision.source_id == Source.id, Source.skill_id == skill.id)
            .order_by(col(SourceRevision.fetched_at).desc())
        ).all()
        out = []
        for rev, source in rows:
            made = s.exec(
                select(Version.id)
                .where(Version.revision_id == rev.id)
                .order_by(col(Version.created_at))
            ).all()
            out.append(_revision_row(rev, source, list(made)))
        return out


def submission_letters(s: Session, submission: str, unreplayed: bool = False) -> list[DeadLetter]:
    """The dead letters whose message descends from `submission`, oldest first (`unreplayed`:
    only those not sent again)."""
    query = select(DeadLetter).where(col(DeadLetter.payload).contains(f'"{submission}"'))
    if unreplayed:
        query = query.where(col(DeadLetter.replayed_at).is_(None))
    return list(s.exec(query.order_by(col(DeadLetter.id))).all())


def recorded_submission(ctx: AppContext, submission: str) -> bool:
    """Whether any stage has recorded `submission`: a revision, an ending, a dead letter."""
    with ctx.records.session() as s:
        if s.get(SubmissionOutcome, submission[:128]) is not None:
            return True
        found = s.exec(
            select(SourceRevision.id).where(SourceRevision.submission == submission[:128])
        ).first()
        return found is not None or bool(submission_letters(s, submission))


def unreplayed_letters(ctx: AppContext, submission: str) -> list[DeadLetter]:
    """`submission`'s dead letters not yet sent again, oldest first."""
    with ctx.records.session() as s:
        letters = submission_letters(s, submission, unreplayed=True)
        s.expunge_all()
    return letters


def stored_outcome(ctx: AppContext, slug: str, submission: str) -> Event | None:
    """A submission's ending as the record store has it (its revision refused, or the version
    its revision made), or None while it has none."""
    with ctx.records.session() as s:
        rev = s.exec(
            select(SourceRevision).where(SourceRevision.submission == submission[:128])
        ).first()
        ended = s.get(SubmissionOutcome, submission[:128])
        if ended is not None and ended.outcome == "refused":
            rejected = RevisionRejected(
                revision_id=ended.revision_id or "",
                skill=slug,
                reason=ended.reason or "refused",
                submission=submission,
            )
            return Event(EVENTS.revision_rejected, rejected)
        if ended is not None and ended.revision_id:  # the same bytes again: their version
            rev = s.get(SourceRevision, ended.revision_id)
        if rev is None:
            return None
        if rev.status == "refused":
            rejected = RevisionRejected(
                revision_id=rev.id,
                skill=slug,
                reason=rev.refusal_reason or "refused",
                submission=submission,
            )
            return Event(EVENTS.revision_rejected, rejected)
        version = s.exec(
            select(Version).where(Version.revision_id == rev.id).order_by(col(Version.created_at))
        ).first()
        if version is None:
            return None
        proposed = VersionProposed(
            version_id=version.id,
            skill=slug,
            revision_id=rev.id,
            created=ended is None,  # unchanged: the version these bytes made before
            summary=version.diff.get("summary", {}),
            submission=submission,
        )
        return Event(EVENTS.version_proposed, proposed)


def submission_status(ctx: AppContext, submission: str) -> SubmissionView:
    """Where a submission is now, stage by stage, from what the records hold (NotFound when no
    stage has recorded it: it is queued, or its first message was dead-lettered — both listed)."""
    with ctx.records.session() as s:
        found = s.exec(
            select(SourceRevision, Source).where(
                SourceRevision.submission == submission[:128],
                SourceRevision.source_id == Source.id,
            )
        ).first()
        letters: list[DeadLetterBrief] = [
            {
                "id": d.id,
                "worker": d.worker,
                "subject": d.subject,
                "error": d.error.splitlines()[0],
                "replayed_at": d.replayed_at.isoformat() if d.replayed_at else None,
            }
            for d in submission_letters(s, submission)
        ]
        ended = s.get(SubmissionOutcome, submission[:128])
        if ended is not None:  # it made no revision of its own: refused, or bytes seen before
            stage: Stage = (
                {"stage": "refused", "reason": ended.reason, "at": ended.created_at.isoformat()}
                if ended.outcome == "refused"
                else {"stage": "unchanged", "at": ended.created_at.isoformat()}
            )
            if ended.revision_id:
                stage["revision_id"] = ended.revision_id
                matched = s.exec(
                    select(Version.id)
                    .where(Version.revision_id == ended.revision_id)
                    .order_by(col(Version.created_at))
                ).first()
                if matched is not None and ended.outcome == "unchanged":
                    stage["version_id"] = matched
            return {"submission": submission, "stages": [stage], "dead_letters": letters}
        if found is None:
            if not letters:
                raise NotFound(
                    f"no stage has recorded submission {submission!r} yet (queued, or unknown)"
                )
            return {"submission": submission, "stages": [], "dead_letters": letters}
        rev, source = found
        made = s.exec(
            select(Version).where(Version.revision_id == rev.id).order_by(col(Version.created_at))
        ).all()
        stages: list[Stage] = [
            {
                "stage": "fetched",
                "at": rev.fetched_at.isoformat(),
                "from": source.fetched_from or source.kind,
            }
        ]
        if rev.status == "refused":
            stages.append({"stage": "refused", "reason": rev.refusal_reason})
        elif rev.status == "parsed":
            stages.append({"stage": "parsed", "operations": rev.operations})
            if rev.grouping_blob:
                stages.append({"stage": "categorized", "source": rev.grouping_source})
        # the version this submission proposed: the revision's first (later ones are proposals a
        # person's annotations made on the same revision, not stages of this submission)
        for version in made[:1]:
            stages.append(
                {
                    "stage": "proposed",
                    "version_id": version.id,
                    "at": version.created_at.isoformat(),
                }
            )
            if version.status in ("published", "superseded"):
                stages.append({"stage": "published", "version_id": version.id})
        return {
            "submission": submission,
            "revision_id": rev.id,
            "stages": stages,
            "dead_letters": letters,
        }


def resolve_action(ctx: AppContext, action_id: int) -> ActionResolved:
    """Mark an action item handled (it stays on record); NotFound for one that is not open."""
    with ctx.records.session() as s:
        row = s.get(ActionItem, action_id)
        if row is None or row.resolved_at is not None:
            raise NotFound(f"no open action item #{action_id} (skillpress actions lists them)")
        row.resolved_at = ctx.clock()
        return {"id": row.id, "resolved_at": row.resolved_at.isoformat()}


def skill_overview(ctx: AppContext, slug: str) -> SkillView:
    """One skill as `skills_overview` shows it; NotFound when there is no such skill (or every
    import of it was refused before a version was made)."""
    found = skills_overview(ctx, slug)
    if not found:
        raise NotFound(f"no skill {slug!r} (skillpress import SPEC --skill {slug} makes one)")
    return found[0]


def skills_overview(ctx: AppContext, slug: str | None = None) -> list[SkillView]:
    """Every skill by slug (or the one named `slug`): its live version, the proposals waiting,
    its open action items (`skill_list.skills_page` gives them a page at a time)."""
    from skillpress.app.records.skill_list import skills_page

    return skills_page(ctx, limit=None, slug=slug)[0]
