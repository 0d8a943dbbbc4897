"""guess-approvals: `revision.parsed` → an approval rule and (for creates) an identity guessed per
operation, stored as suggestions for a person to review → `suggestions.made`. Never applied."""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.stages.guess_approvals import guess_revision
from skillpress.schemas.events import RevisionParsed, SuggestionsMade
from skillpress.schemas.subjects import EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "guess_approvals"]


def guess_approvals(ctx: AppContext, event: RevisionParsed) -> list[Outgoing]:
    guessed = guess_revision(ctx, event.revision_id)
    return [
        Outgoing(
            EVENTS.suggestions_made,
            SuggestionsMade(
                revision_id=event.revision_id,
                skill=event.skill,
                approvals=guessed.approvals,
                identities=guessed.identities,
                headers=guessed.headers,
                submission=event.submission,
            ),
            f"suggestions:{event.revision_id}:{event.submission}",
        )
    ]


STEP = Step(
    "guess-approvals", EVENTS.revision_parsed, RevisionParsed, guess_approvals, derives=True
)
