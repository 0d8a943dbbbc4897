"""Approvals of gated calls: a call to a gated operation asks, a person grants or denies, and
a grant whose bound values equal a call's lets exactly that call through, once. Every decision
is recorded with who made it (a gate's own `auto_below` included) and the token that asked.

Two invariants live here, for every face:
- **a grant is consumed by exactly one call** (`consume`: a conditional update only one caller
  can win, on SQLite and PostgreSQL alike; every other caller waiting on it gets GrantSpent and
  asks anew);
- **a runtime reads and consumes only the requests it made** (every read and consume is scoped
  to the asking token; a request of another's is not found).
An automatic approval asked over the API is the server's own evaluation of the live version's
gate (`settle_asked`), never a client's claim."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import ApprovalView
from skillpress.errors import NotFound, Refused
from skillpress.platform.records import DuplicateRecord
from skillpress.runtime.calling.gates import GO, GateCheck, GrantSpent
from skillpress.schemas.records import ApprovalRequest

__all__ = [
    "GO",
    "GrantSpent",
    "ApprovalsPage",
    "ask_key",
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
        "token": r.token,
    }


def ask_key(skill: str, operation: str, bound_json: str, token: str | None) -> str:
    """One exact call by one asker: what at most one open request carries (migration 0009
    writes the same)."""
    text = json.dumps([skill, operation, bound_json, token], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def ask(
    ctx: AppContext,
    skill: str,
    operation: str,
    risk: str,
    bound: dict[str, Any],
    by: str,
    token: str | None = None,
) -> ApprovalRequest:
    """The open request for this exact call by this asker (a grant waiting first; the same one
    when asked again, unless it expired), or a new one. Identical calls asking at the same
    moment share one: the store holds one open request per call and asker, and the one that
    loses the insert reads the winner's."""
    bound_json = _bound(bound)
    key = ask_key(skill, operation, bound_json, token)
    for _ in range(5):
        try:
            with ctx.records.session() as s:
                found = s.exec(
                    select(ApprovalRequest)
                    .where(
                        ApprovalRequest.ask_key == key,
                        col(ApprovalRequest.status).in_(("pending", "granted")),
                    )
                    .order_by(col(ApprovalRequest.id))
                ).first()
                if found is None or _lapsed(ctx, found):
                    s.flush()
                    found = ApprovalRequest(
                        skill=skill,
                        operation=operation,
                        risk=risk,
                        bound_json=bound_json,
                        requested_by=by[:128],
                        created_at=ctx.clock(),
                        token=token,
                        ask_key=key,
                    )
                    s.add(found)
                    s.flush()
                s.expunge(found)
                return found
        except DuplicateRecord:
            continue  # another identical call made the request a moment ago: read it
    raise Refused(
        f"could not record an approval request for {skill} {operation}: identical calls kept"
        " racing; call again"
    )


def record(
    ctx: AppContext,
    skill: str,
    gate: GateCheck,
    status: str,
    asked_by: str,
    decided_by: str,
    token: str | None = None,
) -> ApprovalRequest:
    """A decision made where the call is made (`auto` by the gate's threshold, `used` by the
    person at a terminal approving it), recorded as any other: who asked and who decided."""
    now = ctx.clock()
    bound_json = _bound(gate.bound)
    with ctx.records.session() as s:
        row = ApprovalRequest(
            skill=skill,
            operation=gate.operation,
            risk=gate.risk,
            bound_json=bound_json,
            status=status,
            requested_by=asked_by[:128],
            decided_by=decided_by[:128],
            created_at=now,
            decided_at=now,
            token=token,
            ask_key=ask_key(skill, gate.operation, bound_json, token),
        )
        s.add(row)
        s.flush()
        s.expunge(row)
        return row


AUTO = "its gate (auto_below)"


def settle(
    ctx: AppContext,
    skill: str,
    gate: GateCheck,
    asked_by: str,
    approved_by: str | None = None,
    token: str | None = None,
) -> ApprovalRequest:
    """A gated call's decision as it stands: `auto` under the gate's threshold, `used` when
    `approved_by` (a person where the call is made) approves it or a grant for exactly these
    values was waiting and this call used it up, else the `pending` request it waits on
    (announced). A grant another identical call took first is not this call's: it asks anew."""
    if gate.auto:
        return record(ctx, skill, gate, "auto", asked_by, AUTO, token)
    if approved_by:
        return record(ctx, skill, gate, "used", asked_by, approved_by, token)
    for _ in range(3):
        asked = ask(ctx, skill, gate.operation, gate.risk, gate.bound, asked_by, token)
        assert asked.id is not None
        if asked.status == "pending":
            announce(ctx, asked)
            return asked
        try:
            return consume(ctx, asked.id, token)
        except GrantSpent:
            continue  # spent by another call a moment ago: this one asks anew
    return ask(ctx, skill, gate.operation, gate.risk, gate.bound, asked_by, token)


def _served_gate(
    ctx: AppContext, skill: str, operation: str, args: dict[str, Any], page_url: str | None
) -> GateCheck:
    """The gate of `operation` as the skill's live version declares it, evaluated here on the
    call's arguments: what a runtime's request is decided on. A skill with no live version, an
    operation it does not have or does not gate: a person decides (never automatic)."""
    from skillpress.app.records.versions import live_files
    from skillpress.runtime.calling.gates import check_gate
    from skillpress.runtime.package.model import PackageError, UnknownOperation
    from skillpress.runtime.package.skill import load_skill

    try:
        tool = load_skill(live_files(ctx, skill), lazy=True).tool(operation)
        found = check_gate(tool, args, page_url)
    except (NotFound, Refused, PackageError, UnknownOperation):
        found = None
    if found is not None:
        return found
    bound = dict(args) | ({"page_url": page_url} if page_url is not None else {})
    return GateCheck(operation, "high", bound, False, None, None, dict(args), page_url)


def settle_asked(
    ctx: AppContext,
    skill: str,
    operation: str,
    args: dict[str, Any],
    page_url: str | None,
    asked_by: str,
    token: str,
) -> ApprovalView:
    """`settle` for a runtime that asks over the API with its token: the gate is the live
    version's, evaluated here on the call's arguments (`auto` is this server's finding, never
    the runtime's say-so), and never a person's approval at the call (a runtime's token decides
    nothing). The request is the token's own."""
    gate = _served_gate(ctx, skill, operation, args, page_url)
    return as_dict(settle(ctx, skill, gate, asked_by, token=token), ctx)


def _own(row: ApprovalRequest | None, request_id: int, token: str | None) -> ApprovalRequest:
    """`row` when `token` asked it (None: a call made where the records are); NotFound for a
    request of another asker's, as for one that does not exist: a runtime learns nothing of
    another's calls."""
    if row is None or row.token != token:
        raise NotFound(f"no approval request #{request_id} of yours")
    return row


def request_view(ctx: AppContext, request_id: int, token: str | None = None) -> ApprovalView:
    """One request as it stands now (an open one past its time marked expired): any request for
    an operator (`token` None), the token's own for a runtime."""
    with ctx.records.session() as s:
        row = s.get(ApprovalRequest, request_id)
        if row is None:
            raise NotFound(f"no approval request #{request_id}")
        if token is not None:
            row = _own(row, request_id, token)
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
        won = s.connection().execute(
            update(ApprovalRequest)
            .where(col(ApprovalRequest.id) == request_id, col(ApprovalRequest.status) == "pending")
            .values(
                status="granted" if grant else "denied", decided_by=by[:128], decided_at=ctx.clock()
            )
        )
        if won.rowcount != 1:  # two people deciding at once: the first decision stands
            s.rollback()
            s.refresh(row)
            raise Refused(f"approval request #{request_id} is {row.status} already")
        s.expunge(row)
    return _row(ctx, request_id)


def _row(ctx: AppContext, request_id: int) -> ApprovalRequest:
    with ctx.records.session() as s:
        row = s.get(ApprovalRequest, request_id)
        if row is None:
            raise NotFound(f"no approval request #{request_id}")
        s.expunge(row)
        return row


def consume(ctx: AppContext, request_id: int, token: str | None = None) -> ApprovalRequest:
    """The request's decision for the call waiting on it, asked by its own asker (`token`): a
    grant is used up by exactly one call — the one whose conditional update wins — and comes
    back `used`; every other caller gets GrantSpent (and asks anew). A pending, denied or
    expired request comes back as it is."""
    with ctx.records.session() as s:
        row = _own(s.get(ApprovalRequest, request_id), request_id, token)
        if _lapsed(ctx, row):
            s.flush()
        if row.status == "used":
            raise _spent(request_id)
        if row.status != "granted":
            s.expunge(row)
            return row
        won = s.connection().execute(
            update(ApprovalRequest)
            .where(col(ApprovalRequest.id) == request_id, col(ApprovalRequest.status) == "granted")
            .values(status="used")
        )
        if won.rowcount != 1:
            raise _spent(request_id)
        s.expunge(row)
    row.status = "used"
    return row


def _spent(request_id: int) -> GrantSpent:
    return GrantSpent(
        f"approval #{request_id} was used by another call with the same values: a grant lets one"
        " call through; this one was not sent, and asks anew"
    )


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

    from skillpress.app.base.bus import running_up
    from skillpress.platform.broker import BrokerUnavailable, connect, nats_options
    from skillpress.schemas.events import ApprovalRequested
    from skillpress.schemas.subjects import EVENTS, STREAM

    url = ctx.settings.nats_url or running_up(ctx.settings, "runtime")
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
