"""parse: `revision.stored` → the document loaded under every bound and derived once → parsed, or
refused with its reason recorded (a permanent outcome: not retried, nothing earlier touched).

The derivation's files and grouping go to the blob store under one manifest, so categorize,
guess-approvals and (when the grouping stands) render read it instead of deriving again."""

from __future__ import annotations

from skillpress.schemas.events import RevisionParsed, RevisionRejected, RevisionStored
from skillpress.schemas.subjects import EVENTS
from skillpress.services.app.context import AppContext
from skillpress.services.app.derivations import derive_revision, load_revision, store_derivation
from skillpress.services.app.stages import record_parse
from skillpress.services.derive import SpecRefused
from skillpress.services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "parse"]


def parse(ctx: AppContext, event: RevisionStored) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    rev = inputs.revision
    if rev.status == "stored":
        manifest = None
        try:
            package = derive_revision(ctx, inputs)
            status, reason, operations = "parsed", None, package.manifest.stats.operations
            manifest = store_derivation(
                ctx, package
            ).manifest  # later stages read it instead of deriving again
        except SpecRefused as exc:
            status, reason, operations = "refused", exc.reason, None
        rev = record_parse(ctx, rev.id, status, reason, operations, manifest)
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


STEP = Step("parse", EVENTS.revision_stored, RevisionStored, parse)
