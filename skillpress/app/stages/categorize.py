"""The categorize stage's use-case: the grouping a revision's operations are listed by (tags, else
a configured model's, else paths), decided once, a redelivery reusing the decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import (
    lazy_derivation_files,
    load_derivation,
    load_revision,
)
from skillpress.app.records.revisions import Grouped, record_grouping, revision_grouping
from skillpress.derive.categories import Grouping
from skillpress.derive.model_grouping import choose_grouping
from skillpress.errors import NotFound
from skillpress.platform.blobs import sha256_hex
from skillpress.platform.logging import get_logger

__all__ = ["Categorized", "categorize_revision"]


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
    mine: tuple[str, Grouping] | None = None
    if inputs.revision.grouping_blob is None:  # decided once: a redelivery reuses the decision
        parsed = load_derivation(ctx.blobs, inputs.revision.package_blob)
        offline = Grouping.from_json(ctx.blobs.get(parsed.grouping))
        # the files are read only if a model is asked (tags failed and categories are needed)
        files = lazy_derivation_files(ctx.blobs, parsed)
        grouping, note = _decide(ctx, files, offline)
        data = grouping.to_json()
        blob = sha256_hex(data)
        if blob != parsed.grouping:  # the parse stage's grouping is stored already
            ctx.blobs.put(data)
        record_grouping(
            ctx, revision_id, Grouped(blob, grouping.source, grouping.tag_failure, note)
        )
        mine = blob, grouping
    decided = revision_grouping(ctx, revision_id)  # another delivery's, if it decided first
    if mine is not None and mine[0] == decided.blob:
        chosen = mine[1]
    else:
        chosen = Grouping.from_json(ctx.blobs.get(decided.blob))
    return Categorized(
        source=decided.source or chosen.source,
        tag_failure=decided.tag_failure,
        note=decided.note,
        categories=len(chosen.categories) if chosen.mode == "categories" else 0,
    )
