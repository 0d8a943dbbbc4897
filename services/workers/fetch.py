"""fetch: `spec.submitted` → the bytes (uploaded, or fetched by URL under guard) → a stored revision.

Identical bytes make no new revision: the revision id is derived from the source and the
bytes' sha256, so the same spec submitted twice finds its revision and says it is unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import select

from schemas.events import RevisionRejected, RevisionStored, RevisionUnchanged, SpecSubmitted
from schemas.records import Skill, Source, SourceRevision, Version
from schemas.subjects import EVENTS
from services.app.context import AppContext
from services.errors import Permanent
from services.platform.blobs import BlobNotFound
from services.platform.fetcher import FetchFailed, FetchLimits, FetchRefused, fetch_spec
from services.platform.ids import derived_id
from services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "fetch"]


def _skill_and_source(ctx: AppContext, event: SpecSubmitted) -> tuple[str, str]:
    skill_id = derived_id("skill", event.skill)
    source_id = derived_id("source", skill_id)
    now = datetime.now(UTC)
    with ctx.records.session() as s:
        if s.get(Skill, skill_id) is None:
            s.add(Skill(id=skill_id, slug=event.skill, title=event.skill, created_at=now))
            s.flush()
        source = s.get(Source, source_id)
        if source is None:
            s.add(
                Source(
                    id=source_id,
                    skill_id=skill_id,
                    kind="url" if event.url else "upload",
                    fetched_from=event.url,
                    base_url=event.base_url,
                )
            )
        else:
            if event.url:
                source.kind, source.fetched_from = "url", event.url
            if event.base_url:
                source.base_url = event.base_url
    return skill_id, source_id


def fetch(ctx: AppContext, event: SpecSubmitted) -> list[Outgoing]:
    if not (event.blob or event.url) or (event.blob and event.url):
        raise Permanent("a submission carries exactly one of blob or url")
    _, source_id = _skill_and_source(ctx, event)

    def rejected(reason: str) -> list[Outgoing]:
        rid = derived_id("rejected-submission", event.submission)
        return [
            Outgoing(
                EVENTS["revision_rejected"],
                RevisionRejected(
                    revision_id=rid, skill=event.skill, reason=reason, submission=event.submission
                ),
                f"rejected:{event.submission}",
            )
        ]

    if event.blob:
        try:
            data = ctx.blobs.get(event.blob)
        except BlobNotFound:
            return rejected(f"the uploaded spec {event.blob[:12]}… is not in the blob store")
    else:
        assert event.url is not None
        limits = FetchLimits(
            ctx.settings.max_spec_bytes,
            ctx.settings.fetch_timeout,
            ctx.settings.fetch_allow_private,
        )
        try:
            data = fetch_spec(event.url, limits)
        except FetchRefused as exc:
            return rejected(str(exc))
        except FetchFailed:
            raise  # retried with spaced delays, then dead-lettered
    if len(data) > ctx.settings.max_spec_bytes:
        return rejected(
            f"the spec is {len(data):,} bytes, over the {ctx.settings.max_spec_bytes:,}-byte limit"
        )
    sha = ctx.blobs.put(data)
    revision_id = derived_id("revision", source_id, sha)
    with ctx.records.session() as s:
        existing = s.get(SourceRevision, revision_id)
        if existing is None:
            s.add(
                SourceRevision(
                    id=revision_id,
                    source_id=source_id,
                    spec_sha256=sha,
                    fetched_at=datetime.now(UTC),
                    created_by=event.created_by[:128],
                    status="stored",
                    submission=event.submission[:128],
                )
            )
            created = True
        elif existing.submission == event.submission[:128]:
            created = True  # this submission's own redelivery re-announces
        else:
            # the same bytes again: unchanged once they made a version (or were refused); a
            # revision that never got that far (its messages dead-lettered) goes through again
            done = existing.status == "refused" or (
                s.exec(select(Version.id).where(Version.revision_id == revision_id)).first()
                is not None
            )
            created = not done
            if created:
                existing.submission = event.submission[:128]
    if created:
        return [
            Outgoing(
                EVENTS["revision_stored"],
                RevisionStored(
                    revision_id=revision_id,
                    skill=event.skill,
                    spec_sha256=sha,
                    submission=event.submission,
                ),
                f"stored:{revision_id}:{event.submission}",
            )
        ]
    return [
        Outgoing(
            EVENTS["revision_unchanged"],
            RevisionUnchanged(
                revision_id=revision_id,
                skill=event.skill,
                spec_sha256=sha,
                submission=event.submission,
            ),
            f"unchanged:{event.submission}",
        )
    ]


STEP = Step("fetch", EVENTS["spec_submitted"], SpecSubmitted, fetch)
