"""guess-approvals: `revision.parsed` → an approval rule and (for creates) an identity guessed per
operation, stored as suggestions for a person to review → `suggestions.made`. Never applied."""

from __future__ import annotations

from skillpress.schemas.events import RevisionParsed, SuggestionsMade
from skillpress.schemas.subjects import EVENTS
from skillpress.services.app.context import AppContext
from skillpress.services.app.derivations import derivation_files, load_derivation, load_revision
from skillpress.services.app.stages import record_suggestions
from skillpress.services.derive.approvals import guess_suggestions
from skillpress.services.errors import NotFound
from skillpress.services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "guess_approvals"]


def guess_approvals(ctx: AppContext, event: RevisionParsed) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    if inputs.revision.package_blob is None:
        raise NotFound(f"revision {event.revision_id} was not parsed")
    guesses = guess_suggestions(
        derivation_files(ctx, load_derivation(ctx, inputs.revision.package_blob))
    )
    record_suggestions(ctx, inputs.skill.id, event.revision_id, guesses)
    approvals = sum(1 for g in guesses if g.kind == "approval")
    return [
        Outgoing(
            EVENTS.suggestions_made,
            SuggestionsMade(
                revision_id=event.revision_id,
                skill=event.skill,
                approvals=approvals,
                identities=sum(1 for g in guesses if g.kind == "identity"),
                headers=sum(1 for g in guesses if g.kind == "header"),
                submission=event.submission,
            ),
            f"suggestions:{event.revision_id}:{event.submission}",
        )
    ]


STEP = Step("guess-approvals", EVENTS.revision_parsed, RevisionParsed, guess_approvals)
