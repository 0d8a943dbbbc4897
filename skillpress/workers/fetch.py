"""fetch: `spec.submitted` → the bytes (uploaded, or fetched by URL under guard) → a stored revision.

Identical bytes make no new revision: the revision id is derived from the source and the
bytes' sha256, so the same spec submitted twice finds its revision and says it is unchanged.
"""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.stages.fetch import take_submission
from skillpress.schemas.events import (
    RevisionRejected,
    RevisionStored,
    RevisionUnchanged,
    SpecSubmitted,
)
from skillpress.schemas.subjects import EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "fetch"]


def fetch(ctx: AppContext, event: SpecSubmitted) -> list[Outgoing]:
    taken = take_submission(
        ctx,
        submission=event.submission,
        slug=event.skill,
        blob=event.blob,
        url=event.url,
        base_url=event.base_url,
        created_by=event.created_by,
        credential_env=event.credential_env,
    )
    if taken.refused is not None:
        return [
            Outgoing(
                EVENTS.revision_rejected,
                RevisionRejected(
                    revision_id=taken.revision_id,
                    skill=event.skill,
                    reason=taken.refused,
                    submission=event.submission,
                ),
                f"rejected:{event.submission}",
            )
        ]
    if taken.created:
        return [
            Outgoing(
                EVENTS.revision_stored,
                RevisionStored(
                    revision_id=taken.revision_id,
                    skill=event.skill,
                    spec_sha256=taken.spec_sha256,
                    submission=event.submission,
                ),
                f"stored:{taken.revision_id}:{event.submission}",
            )
        ]
    return [
        Outgoing(
            EVENTS.revision_unchanged,
            RevisionUnchanged(
                revision_id=taken.revision_id,
                skill=event.skill,
                spec_sha256=taken.spec_sha256,
                submission=event.submission,
            ),
            f"unchanged:{event.submission}",
        )
    ]


STEP = Step("fetch", EVENTS.spec_submitted, SpecSubmitted, fetch)
