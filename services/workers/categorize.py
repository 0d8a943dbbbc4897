"""categorize: `revision.parsed` → the grouping, recorded on the revision → `revision.categorized`.

Tags first. When they fail (no tags, one tag for everything, a tag per operation, or tag
categories that do not fit the body) and categories are needed, a configured model groups the
operations from their names and summaries; an invalid answer is repaired once, then the
offline path grouping stands. The source (tags, model, paths) and the reason are recorded and
shown in the proposal; render applies the grouping as given.
"""

from __future__ import annotations

from skillpress.schemas.events import RevisionCategorized, RevisionParsed
from skillpress.schemas.subjects import EVENTS
from skillpress.services.app.context import AppContext
from skillpress.services.app.derivations import derivation_files, load_derivation, load_revision
from skillpress.services.app.stages import Grouped, record_grouping, revision_grouping
from skillpress.services.derive.categories import Grouping
from skillpress.services.derive.model_grouping import choose_grouping
from skillpress.services.errors import NotFound
from skillpress.services.platform.logging import get_logger
from skillpress.services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "categorize"]


def decide(
    ctx: AppContext, files: dict[str, bytes], offline: Grouping
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


def categorize(ctx: AppContext, event: RevisionParsed) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    if inputs.revision.package_blob is None:
        raise NotFound(f"revision {event.revision_id} was not parsed")
    if inputs.revision.grouping_blob is None:  # decided once: a redelivery reuses the decision
        parsed = load_derivation(ctx, inputs.revision.package_blob)
        offline = Grouping.from_json(ctx.blobs.get(parsed.grouping))
        grouping, note = decide(ctx, derivation_files(ctx, parsed), offline)
        blob = ctx.blobs.put(grouping.to_json())
        record_grouping(
            ctx, event.revision_id, Grouped(blob, grouping.source, grouping.tag_failure, note)
        )
    decided = revision_grouping(ctx, event.revision_id)
    blob, source, failure, note = decided.blob, decided.source, decided.tag_failure, decided.note
    chosen = Grouping.from_json(ctx.blobs.get(blob))
    count = len(chosen.categories) if chosen.mode == "categories" else 0
    return [
        Outgoing(
            EVENTS.revision_categorized,
            RevisionCategorized(
                revision_id=event.revision_id,
                skill=event.skill,
                source=source or chosen.source,
                categories=count,
                tag_failure=failure,
                note=note,
                submission=event.submission,
            ),
            f"categorized:{event.revision_id}:{event.submission}",
        )
    ]


STEP = Step("categorize", EVENTS.revision_parsed, RevisionParsed, categorize)
