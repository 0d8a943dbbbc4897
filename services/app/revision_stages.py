"""The derive-side pipeline stages as use-cases, each what one worker calls with its message's
revision (the worker parses the message, calls one, and publishes what it returns):

- `parse_revision`: the document loaded under every bound and derived once (its files and
  grouping stored under one manifest, which the later stages read instead of deriving again),
  or refused with its reason; written once;
- `categorize_revision`: the grouping to use (tags, else a configured model's, else paths),
  decided once, a redelivery reusing the decision;
- `guess_revision`: an approval rule and (for creates) an identity guessed per operation, stored
  as open suggestions (a person's earlier decision stands). Never applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from skillpress.schemas.records import SourceRevision
from skillpress.services.app.context import AppContext
from skillpress.services.app.derivations import (
    derivation_files,
    derive_revision,
    load_derivation,
    load_revision,
    store_derivation,
)
from skillpress.services.app.package_dir import LazyFiles
from skillpress.services.app.stages import (
    Grouped,
    record_grouping,
    record_parse,
    record_suggestions,
    revision_grouping,
)
from skillpress.services.derive import SpecRefused
from skillpress.services.derive.approvals import guess_suggestions
from skillpress.services.derive.categories import Grouping
from skillpress.services.derive.model_grouping import choose_grouping
from skillpress.services.errors import NotFound
from skillpress.services.platform.logging import get_logger

__all__ = [
    "Categorized",
    "Guessed",
    "categorize_revision",
    "guess_revision",
    "parse_revision",
]


def parse_revision(ctx: AppContext, revision_id: str) -> SourceRevision:
    """The revision parsed (or refused), as it now stands: derived only while it is `stored`."""
    inputs = load_revision(ctx, revision_id)
    rev = inputs.revision
    if rev.status != "stored":
        return rev
    manifest = None
    try:
        package = derive_revision(ctx, inputs)
        status, reason, operations = "parsed", None, package.manifest.stats.operations
        manifest = store_derivation(ctx, package).manifest  # later stages read it
    except SpecRefused as exc:
        status, reason, operations = "refused", exc.reason, None
    return record_parse(ctx, rev.id, status, reason, operations, manifest)


@dataclass(frozen=True)
class Categorized:
    """The grouping a revision stands on: where it came from, why tags failed, the model's
    note, and how many categories it makes (0: a flat body)."""

    source: str
    tag_failure: str | None
    note: str | None
    categories: int


def _decide(
    ctx: AppContext, files: Mapping[str, bytes], offline: Grouping
) -> tuple[Grouping, str | None]:
    """The grouping to use and why (`choose_grouping`, with the configured model if any)."""
    client = ctx.chat()
    log = get_logger("categorize.model", model=client.model if client else None)
    return choose_grouping(
        offline,
        files,
        client.complete if client else None,
        client.model if client else "",
        ctx.settings.llm_context_budget,
        report=lambda event, fields: log.info(event, **fields),
    )


def categorize_revision(ctx: AppContext, revision_id: str) -> Categorized:
    """The revision's grouping, decided once: tags first; when they fail and categories are
    needed, a configured model groups the operations (an invalid answer repaired once, else the
    offline path grouping stands)."""
    inputs = load_revision(ctx, revision_id)
    if inputs.revision.package_blob is None:
        raise NotFound(f"revision {revision_id} was not parsed")
    if inputs.revision.grouping_blob is None:  # decided once: a redelivery reuses the decision
        parsed = load_derivation(ctx, inputs.revision.package_blob)
        offline = Grouping.from_json(ctx.blobs.get(parsed.grouping))
        # the files are read only if a model is asked (tags failed and categories are needed)
        files = LazyFiles(sorted(parsed.files), lambda path: ctx.blobs.get(parsed.files[path]))
        grouping, note = _decide(ctx, files, offline)
        blob = ctx.blobs.put(grouping.to_json())
        record_grouping(
            ctx, revision_id, Grouped(blob, grouping.source, grouping.tag_failure, note)
        )
    decided = revision_grouping(ctx, revision_id)
    chosen = Grouping.from_json(ctx.blobs.get(decided.blob))
    return Categorized(
        source=decided.source or chosen.source,
        tag_failure=decided.tag_failure,
        note=decided.note,
        categories=len(chosen.categories) if chosen.mode == "categories" else 0,
    )


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
        derivation_files(ctx, load_derivation(ctx, inputs.revision.package_blob))
    )
    record_suggestions(ctx, inputs.skill.id, revision_id, guesses)
    return Guessed(
        approvals=sum(1 for g in guesses if g.kind == "approval"),
        identities=sum(1 for g in guesses if g.kind == "identity"),
        headers=sum(1 for g in guesses if g.kind == "header"),
    )
