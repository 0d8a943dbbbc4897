"""The fetch stage's use-case: a submission taken in (its bytes uploaded, or fetched under the
guard) as a stored revision of its skill's source, the same bytes again as unchanged, or the
reason it is refused; and the refresh stage's: the URL sources due for a re-fetch. Idempotent:
ids derived from content, a row written once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from skillpress.app.base.context import AppContext
from skillpress.app.records.sources import (
    claim_due_sources,
    ensure_skill_and_source,
    record_outcome,
    store_revision,
)
from skillpress.errors import Permanent
from skillpress.platform.ids import derived_id

__all__ = ["Due", "Taken", "due_sources", "take_submission"]


@dataclass(frozen=True)
class Taken:
    """A submission taken in: its revision (`created`: new, or this submission's own again), or
    why it is refused (`refused`), or the same bytes again (`created` False)."""

    revision_id: str
    spec_sha256: str
    created: bool
    refused: str | None = None


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
        record_outcome(ctx, submission, slug, "refused", None, why)
        return Taken(refused_id, "", False, why)
    assert data is not None
    _, source_id, rederive = ensure_skill_and_source(ctx, slug, url, base_url, credential_env)
    # an upload was read by its key, so it is stored already; a URL's bytes are stored here
    sha = blob if blob else ctx.blobs.put(data)
    revision_id = derived_id("revision", source_id, sha)
    created, status, reason = store_revision(
        ctx, revision_id, source_id, sha, submission, created_by, rederive
    )
    if not created:
        refused_again = status == "refused"
        record_outcome(
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
    from skillpress.platform.blobs import BlobNotFound
    from skillpress.platform.fetcher import FetchLimits, FetchRefused, fetch_spec

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
    return [
        Due(derived_id("refresh", source_id, now.isoformat()), slug_, url, base_url)
        for source_id, slug_, url, base_url in claim_due_sources(ctx, slug, due_before, now)
    ]
