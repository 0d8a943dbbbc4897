"""render: the pure derivation of a revision with the annotations as of one moment → content-
addressed files in the blob store → one immutable *proposed* version, with its diff against the
live one (operations added, removed, changed; annotations orphaned, and re-keying offered where
a renamed operation kept its method and path).

Two triggers: `revision.categorized` (a new spec revision, with the annotations as of its fetch)
and `annotation.changed` (the latest revision, with the annotations as of the change). A
scheduled refresh's proposal raises an action item; nothing here ever publishes; a skill
detached from its source no longer regenerates.
"""

from __future__ import annotations

from datetime import datetime

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import as_utc
from skillpress.app.stages.render import (
    Detached,
    Proposed,
    propose_for_change,
    propose_for_revision,
)
from skillpress.schemas.events import (
    AnnotationChanged,
    RevisionCategorized,
    RevisionRejected,
    VersionProposed,
)
from skillpress.schemas.subjects import EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "STEP_ANNOTATIONS", "render", "render_annotations"]


def _announced(
    made: Proposed | Detached, as_of: datetime, submission: str | None
) -> list[Outgoing]:
    if isinstance(made, Detached):
        return [
            Outgoing(
                EVENTS.revision_rejected,
                RevisionRejected(
                    revision_id=made.revision_id,
                    skill=made.skill,
                    reason=made.reason,
                    submission=submission,
                ),
                f"detached:{made.revision_id}:{submission or ''}",
            )
        ]
    return [
        Outgoing(
            EVENTS.version_proposed,
            VersionProposed(
                version_id=made.version_id,
                skill=made.skill,
                revision_id=made.revision_id,
                created=made.created,
                summary=made.summary,
                submission=submission,
            ),
            f"proposed:{made.version_id}:{made.revision_id}:{as_of.isoformat()}:{submission or ''}",
        )
    ]


def render(ctx: AppContext, event: RevisionCategorized) -> list[Outgoing]:
    made, as_of = propose_for_revision(ctx, event.revision_id)
    return _announced(made, as_of, event.submission)


def render_annotations(ctx: AppContext, event: AnnotationChanged) -> list[Outgoing]:
    as_of = as_utc(datetime.fromisoformat(event.as_of))
    return _announced(propose_for_change(ctx, event.skill, as_of), as_of, event.submission)


STEP = Step("render", EVENTS.revision_categorized, RevisionCategorized, render, derives=True)
STEP_ANNOTATIONS = Step(
    "render",
    EVENTS.annotation_changed,
    AnnotationChanged,
    render_annotations,
    durable="render-annotations",
    derives=True,
)
