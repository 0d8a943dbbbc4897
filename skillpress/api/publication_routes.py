"""The JSON API's publications under /v1: a version made live, and several skills' newest
proposals made live in one request; each route parses its input, calls one use-case and returns
what it gives."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from skillpress.api.deps import Ctx, Operator
from skillpress.api.problems import PROBLEM_RESPONSES
from skillpress.api.v1 import with_summaries
from skillpress.app.base.views import ManyPublished, PublicationView

__all__ = ["router"]

router = APIRouter(prefix="/v1", responses=PROBLEM_RESPONSES)


class PublishIn(BaseModel):
    remove_gates: bool = Field(
        default=False, description="publish even though live gates would be dropped"
    )
    timeout: float = Field(default=60.0, gt=0, le=600)


@router.post("/skills/{slug}/versions/{ref}/publish", name="publish_version", tags=["versions"])
def publish(ctx: Ctx, who: Operator, slug: str, ref: str, body: PublishIn) -> PublicationView:
    """Make a version live (refused with the gates it would drop unless `remove_gates`)."""
    from skillpress.app.operator.changes import publish as published

    return published(ctx, slug, ref, body.remove_gates, body.timeout, who)


class PublishManyIn(PublishIn):
    skills: list[str] | None = Field(
        default=None,
        max_length=500,
        description="the skills whose newest waiting proposal to publish; none named: every one",
    )


@router.post("/publications", name="publish_many", tags=["versions"])
def publish_many(ctx: Ctx, who: Operator, body: PublishManyIn) -> ManyPublished:
    """Publish several skills' newest waiting proposals, each checked as a single publish is:
    what was published, and what was refused with why (the others are published all the
    same); at most 500 in one request."""
    from skillpress.app.operator.publish_many import publish_proposed

    return publish_proposed(ctx, body.skills, body.remove_gates, body.timeout, who)


with_summaries(router)
