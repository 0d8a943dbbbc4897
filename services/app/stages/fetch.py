"""The fetch stage's use-case: a submission taken in (its bytes uploaded, or fetched under the
guard) as a stored revision of its skill's source, the same bytes again as unchanged, or the
reason it is refused; and the refresh stage's: the URL sources due for a re-fetch. Idempotent:
ids derived from content, a row written once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlmodel import col, select

from skillpress.schemas.records import Skill, Source, SourceRevision, SubmissionOutcome, Version
from skillpress.services.app.base.context import AppContext
from skillpress.services.app.records.derivations import as_utc
from skillpress.services.errors import Permanent
from skillpress.services.platform.ids import derived_id

__all__ = ["Due", "Taken", "due_sources", "take_submission"]


@dataclass(frozen=True)
class Taken:
    """A submission taken in: its revision (`created`: new, or this submission's own again), or
    why it is refused (`refused`), or the same bytes again (`created` False)."""

    revision_id: str
    spec_sha256: str
    created: bool
    refused: str | None = None


def _skill_and_source(
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


def take_submission(
    ctx: AppContext,
    *,
    submission: str,
    slug: str,
    blob: str | None,
    url: str | None,
    base_url: str | None,
    created_by: str,
    credential_env: str | None = None,
) -> Taken:
    """The spec of a submission stored as a revision of its skill's source. Identical bytes make
    no new revision: unchanged once they made a version (or were refused); a revision that never
    got that far (its messages dead-lettered), or whose source now has another base URL or
    credential variable, goes through again. FetchFailed (retryable) when
    a URL does not answer."""
    if not (blob or url) or (blob and url):
        raise Permanent("a submission carries exactly one of blob or url")
    refused_id = derived_id("rejected-submission", submission)
    data, why = _submitted_bytes(ctx, blob, url)
    if why is not None:  # nothing of the skill is made or changed by a refusal
        _ended(ctx, submission, slug, "refused", None, why)
        return Taken(refused_id, "", False, why)
    assert data is not None
    _, source_id, rederive = _skill_and_source(ctx, slug, url, base_url, credential_env)
    sha = ctx.blobs.put(data)
    revision_id = derived_id("revision", source_id, sha)
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
            created = True
        elif existing.submission == submission[:128]:
            created = True  # this submission's own redelivery re-announces
        elif existing.status == "refused":  # the same refused bytes: refused again, and why
            reason = existing.refusal_reason or "refused"
            created = False
        else:
            done = s.exec(select(Version.id).where(Version.revision_id == revision_id)).first()
            # derived again when it never made a version, or its source's options changed
            created = done is None or rederive
            if created:
                existing.submission = submission[:128]
            if rederive:  # its parse stage's files were derived with the old options
                existing.status, existing.package_blob = "stored", None
    if not created:
        refused_again = existing is not None and existing.status == "refused"
        _ended(
            ctx,
            submission,
            slug,
            "refused" if refused_again else "unchanged",
            revision_id,
            reason if refused_again else None,
        )
        if refused_again:
            return Taken(revision_id, sha, False, reason)
    return Taken(revision_id, sha, created)


def _submitted_bytes(
    ctx: AppContext, blob: str | None, url: str | None
) -> tuple[bytes | None, str | None]:
    """(the spec's bytes, None), or (None, why they are refused)."""
    from skillpress.services.platform.blobs import BlobNotFound
    from skillpress.services.platform.fetcher import FetchLimits, FetchRefused, fetch_spec

    if blob:
        try:
            data = ctx.blobs.get(blob)
        except BlobNotFound:
            return None, f"the uploaded spec {blob[:12]}… is not in the blob store"
    else:
        assert url is not None
        limits = FetchLimits(
            ctx.settings.max_spec_bytes,
            ctx.settings.fetch_timeout,
            ctx.settings.fetch_allow_private,
        )
        try:
            data = fetch_spec(url, limits)
        except FetchRefused as exc:
            return None, str(exc)
    if len(data) > ctx.settings.max_spec_bytes:
        return None, (
            f"the spec is {len(data):,} bytes, over the {ctx.settings.max_spec_bytes:,}-byte limit"
        )
    return data, None


def _ended(
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


@dataclass(frozen=True)
class Due:
    """A URL source due for a re-fetch, submitted again as `submission`."""

    submission: str
    slug: str
    url: str
    base_url: str | None


def due_sources(ctx: AppContext, slug: str | None, interval: float) -> list[Due]:
    """The URL sources due for a re-fetch (all of one skill when `slug` names it), each marked
    checked now: once per slot however many replicas ask."""
    now = ctx.clock()
    due_before = now - timedelta(seconds=max(interval, 0.0) * 0.9)
    out: list[Due] = []
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
            submission = derived_id("refresh", source.id, now.isoformat())
            assert source.fetched_from is not None
            out.append(Due(submission, skill.slug, source.fetched_from, source.base_url))
    return out
