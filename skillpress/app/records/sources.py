"""Source records: a skill's source (where its spec comes from), its revisions as they are
stored, how a submission that made no revision of its own ended, and the URL sources due for a
re-fetch. Ids derived from content; each row written once."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, select

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import as_utc
from skillpress.app.records.overview import submission_letters
from skillpress.platform.ids import derived_id
from skillpress.schemas.records import Skill, Source, SourceRevision, SubmissionOutcome, Version

__all__ = ["claim_due_sources", "ensure_skill_and_source", "record_outcome", "store_revision"]


def ensure_skill_and_source(
    ctx: AppContext, slug: str, url: str | None, base_url: str | None, credential_env: str | None
) -> tuple[str, str, bool]:
    """(skill id, source id, whether this submission changed how the source is derived: a new
    base URL or credential variable, which the same bytes must be derived again with)."""
    skill_id = derived_id("skill", slug)
    source_id = derived_id("source", skill_id)
    with ctx.records.session() as s:
        if s.get(Skill, skill_id) is None:
            s.add(Skill(id=skill_id, slug=slug, title=slug, created_at=ctx.clock()))
            s.flush()
        source = s.get(Source, source_id)
        if source is None:
            s.add(
                Source(
                    id=source_id,
                    skill_id=skill_id,
                    kind="url" if url else "upload",
                    fetched_from=url,
                    base_url=base_url,
                    credential_env=credential_env,
                )
            )
            return skill_id, source_id, False
        if url:
            source.kind, source.fetched_from = "url", url
        changed = bool(base_url and base_url != source.base_url) or bool(
            credential_env and credential_env != source.credential_env
        )
        if base_url:
            source.base_url = base_url
        if credential_env:
            source.credential_env = credential_env
    return skill_id, source_id, changed


def store_revision(
    ctx: AppContext,
    revision_id: str,
    source_id: str,
    sha: str,
    submission: str,
    created_by: str,
    rederive: bool,
) -> tuple[bool, str | None, str | None]:
    """The revision of these bytes stored for `submission`: (whether it goes through the
    pipeline now, the status it had when it existed already, why it was refused then). Identical
    bytes make no new revision: they go through again only when their source's options changed
    (`rederive`) or they never made a version and the submission that brought them stopped at a
    dead letter; a submission's own redelivery re-announces. Ten identical submissions at once
    are one revision's: the first goes through, the others end unchanged at once."""
    reason: str | None = None
    with ctx.records.session() as s:
        existing = s.get(SourceRevision, revision_id)
        if existing is None:
            s.add(
                SourceRevision(
                    id=revision_id,
                    source_id=source_id,
                    spec_sha256=sha,
                    fetched_at=ctx.clock(),
                    created_by=created_by[:128],
                    status="stored",
                    submission=submission[:128],
                )
            )
            return True, None, None
        if existing.submission == submission[:128]:
            return True, existing.status, None  # this submission's own redelivery re-announces
        if existing.status == "refused":  # the same refused bytes: refused again, and why
            reason = existing.refusal_reason or "refused"
            return False, "refused", reason
        status = existing.status
        done = s.exec(select(Version.id).where(Version.revision_id == revision_id)).first()
        # derived again when its source's options changed, or when it never made a version and
        # its own submission stopped (a dead letter); the same bytes while another submission
        # is still on its way are unchanged (they name its revision, and its version once made)
        stopped = existing.submission is None or bool(
            submission_letters(s, existing.submission, unreplayed=True)
        )
        created = rederive or (done is None and stopped)
        if created:
            existing.submission = submission[:128]
        if rederive:  # its parse stage's files were derived with the old options
            existing.status, existing.package_blob = "stored", None
    return created, status, reason


def record_outcome(
    ctx: AppContext,
    submission: str,
    slug: str,
    outcome: str,
    revision_id: str | None,
    reason: str | None,
) -> None:
    """Record how a submission that made no revision of its own ended (once: a redelivery
    finds it written)."""
    with ctx.records.session() as s:
        if s.get(SubmissionOutcome, submission[:128]) is None:
            s.add(
                SubmissionOutcome(
                    submission=submission[:128],
                    skill=slug[:128],
                    outcome=outcome,
                    revision_id=revision_id,
                    reason=reason[:20_000] if reason else None,
                    created_at=ctx.clock(),
                )
            )


def claim_due_sources(
    ctx: AppContext, slug: str | None, due_before: datetime, now: datetime
) -> list[tuple[str, str, str, str | None]]:
    """(source id, slug, URL, base URL) of each URL source due for a re-fetch (every one of
    `slug` when it names one), each marked checked `now`: once per slot however many replicas
    ask."""
    out: list[tuple[str, str, str, str | None]] = []
    with ctx.records.session() as s:
        query = select(Source, Skill).where(
            Source.skill_id == Skill.id, Source.kind == "url", col(Source.fetched_from).is_not(None)
        )
        if slug:
            query = query.where(Skill.slug == slug)
        for source, skill in s.exec(query).all():
            checked = as_utc(source.last_checked_at) if source.last_checked_at else None
            if slug is None and checked is not None and checked > due_before:
                continue
            source.last_checked_at = now
            assert source.fetched_from is not None
            out.append((source.id, skill.slug, source.fetched_from, source.base_url))
    return out
