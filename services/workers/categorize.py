"""categorize: `revision.parsed` → the grouping (tags, or the offline path grouping when tags
fail) stored as a blob and recorded on the revision → `revision.categorized`.

The render stage applies this grouping as given, so a grouping from elsewhere (a model, a
person's merge) changes the output without the derivation deciding again.
"""

from __future__ import annotations

from schemas.events import RevisionCategorized, RevisionParsed
from schemas.records import SourceRevision
from schemas.subjects import EVENTS
from services.derive.categories import Grouping
from services.workers.delivery import Outgoing, PermanentFailure, Step, WorkerContext
from services.workers.inputs import load_derivation, load_revision

__all__ = ["STEP", "categorize"]


def categorize(ctx: WorkerContext, event: RevisionParsed) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    if inputs.revision.package_blob is None:
        raise PermanentFailure(f"revision {event.revision_id} was not parsed")
    blob = load_derivation(ctx, inputs.revision.package_blob).grouping
    grouping = Grouping.from_json(ctx.blobs.get(blob))
    with ctx.records.session() as s:
        row = s.get(SourceRevision, event.revision_id)
        assert row is not None
        if row.grouping_blob is None:
            row.grouping_blob, row.grouping_source, row.tag_failure = blob, grouping.source, grouping.tag_failure
        blob, source, failure = row.grouping_blob, row.grouping_source, row.tag_failure
    count = len(grouping.categories) if grouping.mode == "categories" else 0
    return [Outgoing(EVENTS["revision_categorized"], RevisionCategorized(
        revision_id=event.revision_id, skill=event.skill, source=source or grouping.source, categories=count,
        tag_failure=failure, submission=event.submission), f"categorized:{event.revision_id}")]


STEP = Step("categorize", EVENTS["revision_parsed"], RevisionParsed, categorize)
