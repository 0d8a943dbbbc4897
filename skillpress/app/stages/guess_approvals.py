"""The guess-approvals stage's use-case: an approval rule and (for creates) an identity guessed per
operation, stored as open suggestions, once; a person's decision on an earlier revision's
suggestion, or an annotation already in force, stays decided. Never applied."""

from __future__ import annotations

from dataclasses import dataclass

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import (
    derivation_files,
    load_derivation,
    load_revision,
)
from skillpress.app.records.suggestions import record_suggestions
from skillpress.derive.approvals import guess_suggestions
from skillpress.errors import NotFound

__all__ = ["Guessed", "guess_revision"]


@dataclass(frozen=True)
class Guessed:
    """How many suggestions of each kind a revision's guesses made."""

    approvals: int
    identities: int
    headers: int


def guess_revision(ctx: AppContext, revision_id: str) -> Guessed:
    """The revision's guesses stored as suggestions for a person to review."""
    inputs = load_revision(ctx, revision_id)
    if inputs.revision.package_blob is None:
        raise NotFound(f"revision {revision_id} was not parsed")
    guesses = guess_suggestions(
        derivation_files(ctx.blobs, load_derivation(ctx.blobs, inputs.revision.package_blob))
    )
    record_suggestions(ctx, inputs.skill.id, revision_id, guesses)
    return Guessed(
        approvals=sum(1 for g in guesses if g.kind == "approval"),
        identities=sum(1 for g in guesses if g.kind == "identity"),
        headers=sum(1 for g in guesses if g.kind == "header"),
    )
