"""Approvals of gated calls: a call to a gated operation asks, a person grants or denies, and
a grant whose bound values equal a call's lets exactly that call through, once. Every decision
is recorded with who made it (a gate's own `auto_below` included)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from skillpress.schemas.records import ApprovalRequest
from skillpress.services.app.base.context import AppContext
from skillpress.services.app.base.views import ApprovalView
from skillpress.services.errors import NotFound, Refused
from skillpress.services.runtime.gates import GateCheck

__all__ = [
    "ApprovalsPage",
    "announce",
    "approvals_page",
    "ask",
    "consume",
    "decide",
    "decided_requests",
    "expires_at",
    "list_requests",
    "pending_count",
    "record",
    "as_dict",
    "request_view",
    "settle",
    "settle_asked",
]


def _bound(bound: dict[str, Any]) -> str:
    return json.dumps(bound, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)  # SQLite gives its datetimes back naive


def expires_at(ctx: AppContext, r: ApprovalRequest) -> datetime | None:
    """When an open request (pending since it was made, granted since it was decided) expires."""
    since = r.created_at if r.status == "pending" else r.decided_at
    if r.status not in ("pending", "granted") or since is None:
        return None
    return _utc(since) + timedelta(seconds=ctx.settings.approval_expiry)


def _lapsed(ctx: AppContext, row: ApprovalRequest) -> bool:
    """Mark `row` expired when it is open and past its time (True then): a pending one no one
    decided while its caller waited cannot be granted for nobody, and a grant no call used no
    longer lets one by."""
    ends = expires_at(ctx, row)
    if ends is None or ends > _utc(ctx.clock()):
        return False
    row.status = "expired"
    if row.decided_at is None:
        row.decided_at = ends
    return True


def _expire(ctx: AppContext, s: Session) -> None:
    """Every open request past its time marked expired (before a listing reads them)."""
    open_ = col(ApprovalRequest.status).in_(("pending", "granted"))
    for row in s.exec(select(ApprovalRequest).where(open_)).all():
        _lapsed(ctx, row)
    s.flush()


def as_dict(r: ApprovalRequest, ctx: AppContext) -> ApprovalView:
    ends = expires_at(ctx, r)
    return {
        "id": r.id,
        "skill": r.skill,
        "operation": r.operation,
        "risk": r.risk,
        "bound": r.bound,
        "status": r.status,
        "requested_by": r.requested_by,
        "decided_by": r.decided_by,
        "created_at": r.created_at.isoformat(),
        "decided_at": r.decided_at.isoformat() if r.decided_at else None,
        "expires_at": ends.isoformat() if ends else None,
    }


def ask(
    ctx: AppContext, skill: str, operation: str, risk: str, bound: dict[str, Any], by: str
) -> ApprovalRequest:
    """The open request for this exact call (the same one when asked again, unless it expired),
    or a new one."""
    key = _bound(bound)
    with ctx.records.session() as s:
        found = s.exec(
            select(ApprovalRequest).where(
                ApprovalRequest.skill == skill,
                ApprovalRequest.operation == operation,
                ApprovalRequest.bound_json == key,
                col(ApprovalRequest.status).in_(("pending", "granted")),
            )
        ).first()
        if found is None or _lapsed(ctx, found):
            found = ApprovalRequest(
                skill=skill,
                operation=operation,
                risk=risk,
                bound_json=key,
                requested_by=by[:128],
                created_at=ctx.clock(),
            )
            s.add(found)
            s.flush()
        s.expunge(found)
        return found


def record(
    ctx: AppContext,
    skill: str,
    operation: str,
    risk: str,
    bound: dict[str, Any],
    status: str,
    by: str,
) -> ApprovalRequest:
    """A decision made where the call is made (`auto` by the gate's threshold, `used` by the
    person at a terminal approving it), recorded as any other."""
    now = ctx.clock()
    with ctx.records.session() as s:
        row = ApprovalRequest(
            skill=skill,
            operation=operation,
            risk=risk,
            bound_json=_bound(bound),
            status=status,
            requested_by=by[:128],
            decided_by=by[:128],
            created_at=now,
            decided_at=now,
        )
        s.add(row)
        s.flush()
        s.expunge(row)
        return row


def settle(
    ctx: AppContext, skill: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
) -> ApprovalRequest:
    """A gated call's decision as it stands: `auto` under the gate's threshold, `used` when
    `approved_by` (a person where the call is made) approves it or a grant for exactly these
    values was waiting (used up now), else the `pending` request it waits on (announced)."""
    if gate.auto or approved_by:
        status, by = ("auto", "its gate (auto_below)") if gate.auto else ("used", str(approved_by))
        return record(ctx, skill, gate.operation, gate.risk, gate.bound, status, by)
    asked = ask(ctx, skill, gate.operation, gate.risk, gate.bound, asked_by)
    assert asked.id is not None
    if asked.status == "pending":
        announce(ctx, asked)
    return consume(ctx, asked.id)


def settle_asked(
    ctx: AppContext,
    skill: str,
    operation: str,
    risk: str,
    bound: dict[str, Any],
    auto: bool,
    asked_by: str,
) -> ApprovalView:
    """`settle` for a runtime that asks over the API: never a person's approval at the call (a
    runtime's token decides nothing), its gate's own under `auto_below`."""
    gate = GateCheck(operation, risk, bound, auto)
    return as_dict(settle(ctx, skill, gate, asked_by), ctx)


def request_view(ctx: AppContext, request_id: int) -> ApprovalView:
    """One request as it stands now (an open one past its time marked expired)."""
    with ctx.records.session() as s:
        row = s.get(ApprovalRequest, request_id)
        if row is None:
            raise NotFound(f"no approval request #{request_id}")
        _lapsed(ctx, row)
        s.flush()
        s.expunge(row)
        return as_dict(row, ctx)


def decide(ctx: AppContext, request_id: int, grant: bool, by: str) -> ApprovalRequest:
    """Grant or deny a pending request (Refused when it is decided already, or expired)."""
    with ctx.records.session() as s:
        row = s.get(ApprovalRequest, request_id)
        if row is None:
            raise NotFound(f"no approval request #{request_id} (skillpress approvals lists them)")
        if _lapsed(ctx, row) or row.status == "expired":
            raise Refused(
                f"approval request #{request_id} expired: no one decided it within"
                f" {_span(ctx.settings.approval_expiry)} (SKILLPRESS_APPROVAL_EXPIRY), so no call"
                " is waiting on it; if the caller still wants it, its next call asks again"
            )
        if row.status != "pending":
            raise Refused(f"approval request #{request_id} is {row.status} already")
        row.status = "granted" if grant else "denied"
        row.decided_by, row.decided_at = by[:128], ctx.clock()
        s.flush()
        s.expunge(row)
        return row


def consume(ctx: AppContext, request_id: int) -> ApprovalRequest:
    """The request's decision for the call waiting on it: a grant is used up (one call), a
    denial or a pending request is returned as it is."""
    with ctx.records.session() as s:
        row = s.get(ApprovalRequest, request_id)
        if row is None:
            raise NotFound(f"no approval request #{request_id}")
        _lapsed(ctx, row)
        if row.status == "granted":
            row.status = "used"
            s.flush()
        s.expunge(row)
        return row


def _pending(
    ctx: AppContext, s: Session, everything: bool, offset: int, limit: int | None
) -> list[ApprovalView]:
    query = select(ApprovalRequest).order_by(col(ApprovalRequest.id))
    if not everything:
        query = query.where(ApprovalRequest.status == "pending")
    query = query.offset(max(offset, 0))
    if limit is not None:
        query = query.limit(limit)
    return [as_dict(r, ctx) for r in s.exec(query).all()]


def _waiting(s: Session) -> int:
    query = select(func.count()).select_from(ApprovalRequest)
    return int(s.exec(query.where(ApprovalRequest.status == "pending")).one())


def _decided(ctx: AppContext, s: Session, limit: int) -> list[ApprovalView]:
    query = (
        select(ApprovalRequest)
        .where(ApprovalRequest.status != "pending")
        .order_by(col(ApprovalRequest.decided_at).desc(), col(ApprovalRequest.id).desc())
        .limit(limit)
    )
    return [as_dict(r, ctx) for r in s.exec(query).all()]


def list_requests(
    ctx: AppContext, everything: bool = False, offset: int = 0, limit: int | None = None
) -> list[ApprovalView]:
    """Pending requests, oldest first (`everything`: decided and expired ones too), from
    `offset`, at most `limit` of them."""
    with ctx.records.session() as s:
        _expire(ctx, s)
        return _pending(ctx, s, everything, offset, limit)


def pending_count(ctx: AppContext) -> int:
    """How many calls wait for a decision now."""
    with ctx.records.session() as s:
        _expire(ctx, s)
        return _waiting(s)


def decided_requests(ctx: AppContext, limit: int = 50) -> list[ApprovalView]:
    """The latest decisions (granted, denied, used, automatic, expired), the last made first."""
    with ctx.records.session() as s:
        _expire(ctx, s)
        return _decided(ctx, s, limit)


@dataclass(frozen=True)
class ApprovalsPage:
    """One page of the calls waiting (oldest first), how many wait in all, and the latest
    decisions: what an operator's approvals page shows."""

    waiting: int
    page: int
    pages: int
    first: int  # the position of the page's first request among all waiting
    pending: list[ApprovalView]
    decided: list[ApprovalView]


def approvals_page(ctx: AppContext, page: int, per_page: int, decided: int = 50) -> ApprovalsPage:
    """Page `page` (held to the pages there are) of the waiting calls, expired ones marked once."""
    with ctx.records.session() as s:
        _expire(ctx, s)
        waiting = _waiting(s)
        pages = max(1, -(-waiting // per_page))
        at = min(max(page, 1), pages)
        offset = (at - 1) * per_page
        return ApprovalsPage(
            waiting,
            at,
            pages,
            offset + 1,
            _pending(ctx, s, False, offset, per_page),
            _decided(ctx, s, decided),
        )


def _span(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def announce(ctx: AppContext, request: ApprovalRequest) -> bool:
    """Publish `skillpress.approval.requested` when a pipeline is running (configured NATS or
    `skillpress up`), so a console or a chat bot can ask the operator; best effort, never waited
    on: the request is recorded either way. True when announced."""
    import asyncio

    from skillpress.schemas.events import ApprovalRequested
    from skillpress.schemas.subjects import EVENTS, STREAM
    from skillpress.services.app.base.bus import running_up
    from skillpress.services.platform.broker import BrokerUnavailable, connect, nats_options

    url = ctx.settings.nats_url or running_up(ctx.settings)
    if not url or request.id is None:
        return False
    event = ApprovalRequested(
        request_id=request.id,
        skill=request.skill,
        operation=request.operation,
        risk=request.risk,
        bound=request.bound,
        requested_by=request.requested_by,
    )

    async def send() -> None:
        nc = await connect(
            url,
            name="skillpress-approvals",
            attempts=1,
            options=nats_options(ctx.settings, url),
        )
        try:
            await nc.jetstream().publish(
                EVENTS.approval_requested,
                event.model_dump_json().encode(),
                headers={"Nats-Msg-Id": f"approval:{request.id}:{request.created_at.isoformat()}"},
                stream=STREAM,
                timeout=3.0,
            )
        finally:
            await nc.close()

    try:
        asyncio.run(send())
    except (BrokerUnavailable, OSError, TimeoutError):
        return False
    return True
