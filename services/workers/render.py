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

from skillpress.schemas.events import (
    AnnotationChanged,
    RevisionCategorized,
    RevisionRejected,
    VersionProposed,
)
from skillpress.schemas.subjects import EVENTS
from skillpress.services.app.context import AppContext
from skillpress.services.app.derivations import (
    RevisionInputs,
    as_utc,
    latest_revision_id,
    load_revision,
)
from skillpress.services.app.proposals import propose_version
from skillpress.services.app.versions import find_skill
from skillpress.services.errors import NotFound
from skillpress.services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "STEP_ANNOTATIONS", "render", "render_annotations"]


def _propose(
    ctx: AppContext, inputs: RevisionInputs, as_of: datetime, submission: str | None
) -> list[Outgoing]:
    made = propose_version(ctx, inputs, as_of)
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
            f"proposed:{made.version_id}:{made.revision_id}:{as_of.isoformat()}",
        )
    ]


def _detached(ctx: AppContext, inputs: RevisionInputs, submission: str | None) -> list[Outgoing]:
    reason = f"{inputs.skill.slug} is detached from its source: it no longer regenerates (its versions are edited as packages)"
    return [
        Outgoing(
            EVENTS.revision_rejected,
            RevisionRejected(
                revision_id=inputs.revision.id,
                skill=inputs.skill.slug,
                reason=reason,
                submission=submission,
            ),
            f"detached:{inputs.revision.id}",
        )
    ]


def render(ctx: AppContext, event: RevisionCategorized) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    if inputs.skill.detached:
        return _detached(ctx, inputs, event.submission)
    return _propose(ctx, inputs, as_utc(inputs.revision.fetched_at), event.submission)


def render_annotations(ctx: AppContext, event: AnnotationChanged) -> list[Outgoing]:
    as_of = as_utc(datetime.fromisoformat(event.as_of))
    skill_id = find_skill(ctx, event.skill).id
    revision_id = latest_revision_id(ctx, skill_id)
    if revision_id is None:
        raise NotFound(f"{event.skill} has no categorized revision to derive from")
    inputs = load_revision(ctx, revision_id)
    if inputs.skill.detached:
        return _detached(ctx, inputs, event.submission)
    return _propose(ctx, inputs, as_of, event.submission)


STEP = Step("render", EVENTS.revision_categorized, RevisionCategorized, render)
STEP_ANNOTATIONS = Step(
    "render",
    EVENTS.annotation_changed,
    AnnotationChanged,
    render_annotations,
    durable="render-annotations",
)
