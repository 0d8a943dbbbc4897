"""parse: `revision.stored` → the document loaded under every bound and derived once → parsed, or
refused with its reason recorded (a permanent outcome: not retried, nothing earlier touched).

The derivation's files and grouping go to the blob store under one manifest, so categorize,
guess-approvals and (when the grouping stands) render read it instead of deriving again."""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.stages.parse import parse_revision
from skillpress.schemas.events import RevisionParsed, RevisionRejected, RevisionStored
from skillpress.schemas.subjects import EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "parse"]


def parse(ctx: AppContext, event: RevisionStored) -> list[Outgoing]:
    rev = parse_revision(ctx, event.revision_id)
    if rev.status == "refused":
        return [
            Outgoing(
                EVENTS.revision_rejected,
                RevisionRejected(
                    revision_id=rev.id,
                    skill=event.skill,
                    reason=rev.refusal_reason or "refused",
                    submission=event.submission,
                ),
                f"rejected:{rev.id}:{event.submission}",
            )
        ]
    return [
        Outgoing(
            EVENTS.revision_parsed,
            RevisionParsed(
                revision_id=rev.id,
                skill=event.skill,
                operations=rev.operations or 0,
                submission=event.submission,
            ),
            f"parsed:{rev.id}:{event.submission}",
        )
    ]


STEP = Step("parse", EVENTS.revision_stored, RevisionStored, parse, derives=True)
