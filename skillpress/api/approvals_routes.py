"""The JSON API's approvals, tokens and workflow runs under /v1: what a runtime reaches with its
token (ask, read and consume its own requests) and what an operator decides (grants, tokens);
each route parses its input, calls one use-case and returns what it gives."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from skillpress.api.deps import (
    Ctx,
    Decider,
    Operator,
    Reader,
)
from skillpress.api.problems import PROBLEM_RESPONSES
from skillpress.api.v1 import with_summaries
from skillpress.app.base.views import (
    ApprovalView,
    RunView,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", responses=PROBLEM_RESPONSES)


@router.get("/approvals", name="list_approvals", tags=["approvals"])
def approvals(ctx: Ctx, who: Operator, everything: bool = False) -> list[ApprovalView]:
    """Calls to gated operations waiting for a person, oldest first (`everything`: decided ones too)."""
    from skillpress.app.records.approval_requests import list_requests

    return list_requests(ctx, everything)


class DecisionIn(BaseModel):
    grant: bool = Field(description="true grants the call (once, for exactly its bound values)")


@router.post("/approvals/{request_id}/decide", name="decide_approval", tags=["approvals"])
def decide(ctx: Ctx, who: Decider, request_id: int, body: DecisionIn) -> ApprovalView:
    """Grant or deny a waiting call; the operator's name is recorded with the decision."""
    from skillpress.app.records.approval_requests import as_dict
    from skillpress.app.records.approval_requests import decide as decided

    return as_dict(decided(ctx, request_id, body.grant, who), ctx)


class AskIn(BaseModel):
    skill: str = Field(max_length=64, description="the skill's slug")
    operation: str = Field(max_length=128, description="the gated operation")
    arguments: dict[str, Any] | None = Field(
        default=None,
        description="the call's arguments, by the API's names: the server evaluates the live"
        " version's gate on them (what it binds, and whether its auto_below lets the call go)",
    )
    page_url: str | None = Field(
        default=None, max_length=8192, description="the next page the call is sent to, if any"
    )
    bound: dict[str, Any] = Field(
        default_factory=dict,
        description="an earlier release's field: read as `arguments` when those are not given",
    )
    risk: str = Field(
        default="high", max_length=32, description="ignored: the live version's gate says"
    )
    auto: bool = Field(
        default=False,
        description="ignored: whether a call is under its gate's auto_below is the server's"
        " finding, never a client's claim",
    )
    requested_by: str = Field(default="", max_length=128, description="who asks (an agent, a host)")


@router.post("/approvals", name="ask_approval", tags=["approvals"])
def ask(ctx: Ctx, who: Reader, body: AskIn) -> ApprovalView:
    """A gated call asks (a runtime's token may): the server evaluates the skill's live gate on
    the call's arguments. `used` when a grant for exactly these values was waiting and this call
    used it up, `auto` when under the gate's threshold, else the `pending` request it waits on
    (announced), the asking token's own. Its caller waits with `consume`."""
    from skillpress.app.records.approval_requests import settle_asked

    by = f"{body.requested_by[:100]} (as {who.name})" if body.requested_by else who.name
    args = body.arguments if body.arguments is not None else body.bound
    return settle_asked(ctx, body.skill, body.operation, args, body.page_url, by, who.name)


@router.get("/approvals/{request_id}", name="get_approval", tags=["approvals"])
def approval(ctx: Ctx, who: Reader, request_id: int) -> ApprovalView:
    """One request as it stands (pending, granted, denied, used, expired): a runtime reads only
    the requests its own token made."""
    from skillpress.app.records.approval_requests import request_view

    return request_view(ctx, request_id, None if who.operator else who.name)


@router.post("/approvals/{request_id}/consume", name="consume_approval", tags=["approvals"])
def consume(ctx: Ctx, who: Reader, request_id: int) -> ApprovalView:
    """The decision for the call waiting on a request the same token made: a grant is used up by
    exactly one call (`used`: send it, once), and any other gets a 409 `grant-spent` problem
    (ask anew); a pending, denied or expired one comes back as it is."""
    from skillpress.app.records.approval_requests import as_dict
    from skillpress.app.records.approval_requests import consume as consumed

    return as_dict(consumed(ctx, request_id, who.name), ctx)


class TokenIn(BaseModel):
    name: str = Field(max_length=64, description="whose token (lowercase letters, digits, . _ -)")
    role: Literal["operator", "runtime"] = Field(
        default="runtime",
        description="runtime: reads live versions, asks for approvals and waits on them;"
        " operator: everything",
    )


class TokenMade(BaseModel):
    name: str
    role: str
    token: str = Field(description="the token itself: shown this once, only its digest is kept")


class TokenRow(BaseModel):
    name: str
    role: str
    created: str


@router.get("/tokens", name="list_tokens", tags=["tokens"])
def tokens(ctx: Ctx, who: Operator) -> list[TokenRow]:
    """Every token by name, with its role and when it was made (never a token itself)."""
    from skillpress.app.base.roles import token_list

    return [TokenRow(name=t.name, role=t.role, created=t.created) for t in token_list(ctx.settings)]


@router.post("/tokens", name="make_token", tags=["tokens"])
def make_token(ctx: Ctx, who: Decider, body: TokenIn) -> TokenMade:
    """A new token (an operator's to make): a runtime's for a follower, an MCP server or a host
    that asks for approvals here; its secret is in this answer only."""
    from skillpress.app.base.roles import mint_token

    return TokenMade(
        name=body.name, role=body.role, token=mint_token(ctx.settings, body.name, body.role)
    )


@router.get("/skills/{slug}/runs", name="list_runs", tags=["runs"])
def skill_runs(
    ctx: Ctx, who: Operator, slug: str, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[RunView]:
    """The skill's workflow runs, newest first, without their steps."""
    from skillpress.app.records.runs import list_runs

    return list_runs(ctx, slug, limit)


@router.get("/runs/{run_id}", name="get_run", tags=["runs"])
def run(ctx: Ctx, who: Operator, run_id: int) -> RunView:
    """One workflow run with its steps: each request (secrets redacted), status, try, timing
    and answer; a waiting run names the approval request it waits on."""
    from skillpress.app.records.runs import get_run

    return get_run(ctx, run_id)


with_summaries(router)
