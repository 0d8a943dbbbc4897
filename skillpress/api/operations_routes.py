"""The JSON API's operations under /v1: what an operator tends besides skills (action items a
scheduled refresh raised, dead letters and their replay); each route calls one use-case."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from skillpress.api.deps import Ctx, Operator
from skillpress.api.problems import PROBLEM_RESPONSES
from skillpress.api.v1 import with_summaries
from skillpress.app.base.views import ActionItemView, ActionResolved, DeadLetterView, Replayed

__all__ = ["router"]

router = APIRouter(prefix="/v1", responses=PROBLEM_RESPONSES)


@router.get("/actions", name="list_action_items", tags=["operations"])
def actions(ctx: Ctx, who: Operator) -> list[ActionItemView]:
    """Open action items."""
    from skillpress.app.records.overview import open_actions

    return open_actions(ctx)


@router.post("/actions/{action_id}/resolve", name="resolve_action_item", tags=["operations"])
def resolve(ctx: Ctx, who: Operator, action_id: int) -> ActionResolved:
    """Mark an action item handled."""
    from skillpress.app.records.overview import resolve_action

    return resolve_action(ctx, action_id)


@router.get("/dead-letters", name="list_dead_letters", tags=["operations"])
def dead_letters(ctx: Ctx, who: Operator) -> list[DeadLetterView]:
    """Messages no worker could handle, oldest first."""
    from skillpress.app.records.overview import dead_letters as letters

    return letters(ctx)


class ReplayIn(BaseModel):
    ids: list[int] | None = Field(
        None, description="dead letters to replay (default: every one not yet replayed)"
    )


@router.post("/dead-letters/replay", name="replay_dead_letters", tags=["operations"])
def replay(ctx: Ctx, who: Operator, body: ReplayIn) -> list[Replayed]:
    """Re-publish dead letters' original messages under fresh message ids."""
    from skillpress.app.operator.dispatch import replay_dead_letters

    return replay_dead_letters(ctx, body.ids)


with_summaries(router)
