"""The JSON API's people's additions under /v1: annotations added, listed, retired and rekeyed,
and the review of suggestions (confirmed or dismissed); each route parses its input, calls one
use-case and returns what it gives."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from skillpress.api.deps import (
    Ctx,
    Operator,
)
from skillpress.api.problems import PROBLEM_RESPONSES
from skillpress.api.v1 import with_summaries
from skillpress.app.base.context import AppContext
from skillpress.app.base.views import (
    AnnotationAdded,
    AnnotationRekeyed,
    AnnotationRetired,
    AnnotationView,
    Confirmation,
    Dismissal,
    SuggestionGroups,
)
from skillpress.app.operator.annotations import Kind

__all__ = ["router"]

router = APIRouter(prefix="/v1", responses=PROBLEM_RESPONSES)


@router.get("/skills/{slug}/annotations", name="list_annotations", tags=["annotations"])
def annotations_list(
    ctx: Ctx, who: Operator, slug: str, include_retired: bool = False
) -> list[AnnotationView]:
    """Annotations, each applied, orphaned, pending or retired."""
    from skillpress.app.operator.annotations import list_annotations

    return list_annotations(ctx, slug, include_retired)


class AnnotationIn(BaseModel):
    kind: Kind
    operation: str | None = Field(
        default=None, description="the operation, by the name the skill shows"
    )
    category: str | None = Field(default=None, description="with a note: a category, by its tag")
    value: str = Field(
        "",
        description="the note's text, the gate's `matches`, the identity's fields, NAME=VALUE,"
        " a credential's header or query parameter…",
    )
    risk: Literal["low", "medium", "high"] = "high"
    binds: str | None = Field(default=None, description="a gate's bound fields, comma-separated")
    amount: str | None = None
    currency: str | None = None
    auto_below: str | None = None
    auto_currency: str | None = Field(
        default=None, description="the currency auto_below is in: another is never automatic"
    )
    turn: str | None = None
    credential_in: Literal["header", "query"] | None = Field(
        default=None, description="a credential's place: a header (default) or the query"
    )
    credential_kind: Literal["apiKey", "bearer", "basic"] | None = Field(
        default=None,
        description="how a credential is attached: as it is (apiKey, default), Bearer, or basic",
    )
    credential_env: str | None = Field(
        default=None,
        description="the variable a credential is read from, when not <SLUG>_API_KEY (a name)",
    )
    timeout: float = Field(default=120.0, gt=0, le=600)


def add_annotation(ctx: AppContext, slug: str, given: AnnotationIn, who: str) -> AnnotationAdded:
    from skillpress.app.operator.changes import annotate

    values = given.model_dump()
    values[given.kind] = given.value
    return annotate(
        ctx, slug, given.kind, given.operation, given.category, values, who, given.timeout
    )


@router.post(
    "/skills/{slug}/annotations", name="add_annotation", status_code=201, tags=["annotations"]
)
def annotate(ctx: Ctx, who: Operator, slug: str, body: AnnotationIn) -> AnnotationAdded:
    """Add one annotation (checked against the latest revision) and propose the version it makes."""
    return add_annotation(ctx, slug, body, who)


@router.post("/annotations/{annotation_id}/retire", name="retire_annotation", tags=["annotations"])
def retire(ctx: Ctx, who: Operator, annotation_id: str) -> AnnotationRetired:
    """Retire an annotation (it stays on record) and propose the version without it."""
    from skillpress.app.operator.changes import retire as retired

    return retired(ctx, annotation_id, who)


class RekeyIn(BaseModel):
    operation: str = Field(description="the operation it belongs to now")


@router.post("/annotations/{annotation_id}/rekey", name="rekey_annotation", tags=["annotations"])
def rekey(ctx: Ctx, who: Operator, annotation_id: str, body: RekeyIn) -> AnnotationRekeyed:
    """Move an orphaned annotation to an operation's new name."""
    from skillpress.app.operator.changes import rekey as rekeyed

    return rekeyed(ctx, {annotation_id: body.operation}, who)


class RekeyManyIn(BaseModel):
    moves: dict[str, str] = Field(
        description="each orphaned annotation's id → the operation it belongs to now",
        min_length=1,
        max_length=1000,
    )


@router.post("/annotations/rekey", name="rekey_annotations", tags=["annotations"])
def rekey_many(ctx: Ctx, who: Operator, body: RekeyManyIn) -> AnnotationRekeyed:
    """Move several orphaned annotations of one skill at once: one version proposed for all."""
    from skillpress.app.operator.changes import rekey as rekeyed

    return rekeyed(ctx, body.moves, who)


@router.get("/skills/{slug}/suggestions", name="list_suggestions", tags=["review"])
def suggestions(ctx: Ctx, who: Operator, slug: str) -> SuggestionGroups:
    """Open suggestions grouped money, deletes, changes, reads."""
    from skillpress.app.operator.review import suggestion_groups

    return suggestion_groups(ctx, slug)


class ConfirmIn(BaseModel):
    ids: list[str] = Field(default_factory=list, description="suggestions to confirm")
    groups: list[str] = Field(default_factory=list, description="whole groups to confirm")


@router.post("/skills/{slug}/suggestions/confirm", name="confirm_suggestions", tags=["review"])
def confirm_route(ctx: Ctx, who: Operator, slug: str, body: ConfirmIn) -> Confirmation:
    """Confirm suggestions one at a time or a group at once; each becomes an annotation."""
    from skillpress.app.operator.changes import confirm

    return confirm(ctx, slug, body.ids, body.groups, who)


@router.post("/skills/{slug}/suggestions/dismiss", name="dismiss_suggestions", tags=["review"])
def dismiss_route(ctx: Ctx, who: Operator, slug: str, body: ConfirmIn) -> Dismissal:
    """Dismiss suggestions one at a time or a group at once: decided (recorded under who did
    it), never offered again, on later revisions either; nothing is proposed."""
    from skillpress.app.operator.changes import dismiss

    return dismiss(ctx, slug, body.ids, body.groups, who)


with_summaries(router)
