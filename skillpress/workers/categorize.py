"""categorize: `revision.parsed` → the grouping, recorded on the revision → `revision.categorized`.

Tags first. When they fail (no tags, one tag for everything, a tag per operation, or tag
categories that do not fit the body) and categories are needed, a configured model groups the
operations from their names and summaries; an invalid answer is repaired once, then the
offline path grouping stands. The source (tags, model, paths) and the reason are recorded and
shown in the proposal; render applies the grouping as given.
"""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.stages.categorize import categorize_revision
from skillpress.schemas.events import RevisionCategorized, RevisionParsed
from skillpress.schemas.subjects import EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "categorize"]


def categorize(ctx: AppContext, event: RevisionParsed) -> list[Outgoing]:
    decided = categorize_revision(ctx, event.revision_id)
    return [
        Outgoing(
            EVENTS.revision_categorized,
            RevisionCategorized(
                revision_id=event.revision_id,
                skill=event.skill,
                source=decided.source,
                categories=decided.categories,
                tag_failure=decided.tag_failure,
                note=decided.note,
                submission=event.submission,
            ),
            f"categorized:{event.revision_id}:{event.submission}",
        )
    ]


STEP = Step("categorize", EVENTS.revision_parsed, RevisionParsed, categorize, derives=True)
