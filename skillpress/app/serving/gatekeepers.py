"""The gatekeepers every face decides a gated call with, and the desks they settle it at: the
records here (`LocalDesk`), or a skillpress API's approvals with a runtime's token (`ApiDesk`),
chosen once by `desk_opener`. A call is decided under the skill whose operation it is
(`decided_under`); a grant sends exactly one call (`GO`, and nothing else, sends).

- `terminal_gatekeeper`: a gated call from a terminal waits for a person's approval (or carries
  the operator's own, `--approve`), every decision recorded;
- `agent_gatekeeper` / `api_gatekeeper`: an agent's gated call is recorded as a request it is
  told to wait on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from skillpress.runtime.calling.calls import GateClosed, Gatekeeper
from skillpress.runtime.calling.gates import GateCheck

if TYPE_CHECKING:
    from skillpress.app.base.context import AppContext
    from skillpress.app.base.views import ApprovalView

__all__ = [
    "NOT_HERE",
    "ApiDesk",
    "Desk",
    "LocalDesk",
    "agent_gatekeeper",
    "api_gatekeeper",
    "decided_under",
    "desk_opener",
    "terminal_gatekeeper",
]


class Desk(Protocol):
    """Where a gated call is settled: the records here (`LocalDesk`), or the approvals of a
    skillpress API a runtime reaches with a token that decides nothing (`ApiDesk`)."""

    def settle(
        self, slug: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
    ) -> ApprovalView:
        """The call's decision as it stands: `auto`, `used` (go, once), or `pending`."""

    def consume(self, request_id: int) -> ApprovalView:
        """The decision the call waiting on `request_id` gets now (`used`: send it); GrantSpent
        when another call used the grant first."""

    def close(self) -> None:
        """Let go of what it holds."""


class LocalDesk:
    """Gated calls settled in this home's records (opened at the first gate, not before)."""

    def __init__(self, open_ctx: Callable[[], AppContext]) -> None:
        from skillpress.app.records import approval_requests as approvals

        self._approvals = approvals
        self.ctx = open_ctx()

    def settle(
        self, slug: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
    ) -> ApprovalView:
        row = self._approvals.settle(self.ctx, slug, gate, asked_by, approved_by)
        return self._approvals.as_dict(row, self.ctx)

    def consume(self, request_id: int) -> ApprovalView:
        return self._approvals.as_dict(self._approvals.consume(self.ctx, request_id), self.ctx)

    def close(self) -> None:
        self.ctx.close()


NOT_HERE = (
    "gated calls here are decided through the approvals API (SKILLPRESS_APPROVALS_URL), where a"
    " person grants them: nothing at this terminal approves"
)


class ApiDesk:
    """Gated calls settled through a skillpress API's approvals with a runtime's token: the
    server evaluates the live gate on the call's arguments and a person decides there; nothing
    here can approve."""

    def __init__(self, url: str, token: str) -> None:
        from skillpress.platform.approvals_api import ApprovalsApi

        self.api = ApprovalsApi(url, token)

    def settle(
        self, slug: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
    ) -> ApprovalView:
        if approved_by:
            from skillpress.errors import Refused

            raise Refused(NOT_HERE)
        return _view(self.api.settle(slug, gate.operation, gate.args, gate.page_url, asked_by))

    def consume(self, request_id: int) -> ApprovalView:
        from skillpress.platform.approvals_api import ApprovalsRefused
        from skillpress.runtime.calling.gates import GrantSpent

        try:
            return _view(self.api.consume(request_id))
        except ApprovalsRefused as exc:
            if exc.kind == "grant-spent":
                raise GrantSpent(str(exc)) from None
            raise

    def close(self) -> None:
        self.api.close()


def _view(found: dict[str, Any]) -> ApprovalView:
    """An approval as the API answered it, held to the shape the gatekeepers read."""
    from typing import cast

    from skillpress.platform.approvals_api import ApprovalsUnavailable

    if not isinstance(found.get("id"), int) or not isinstance(found.get("status"), str):
        raise ApprovalsUnavailable("the approvals API answered without a request's id and status")
    return cast("ApprovalView", found)


def desk_opener(
    approvals_url: str | None, open_ctx: Callable[[], AppContext]
) -> Callable[[], Desk]:
    """How this process settles gated calls: through the approvals API at `approvals_url`
    (SKILLPRESS_APPROVALS_URL) with the runtime token in SKILLPRESS_RUNTIME_TOKEN, or in the
    records here. The one place the two are chosen, for every face."""
    if not approvals_url:
        return lambda: LocalDesk(open_ctx)
    url = approvals_url

    def api() -> Desk:
        import os

        from skillpress.app.base.roles import RUNTIME_TOKEN_ENV
        from skillpress.errors import Refused

        token = os.environ.get(RUNTIME_TOKEN_ENV, "").strip()
        if not token:
            raise Refused(
                f"SKILLPRESS_APPROVALS_URL is {url}: this runtime asks for approvals there with"
                f" its token, in {RUNTIME_TOKEN_ENV}, which is not set; the call was not sent"
            )
        return ApiDesk(url, token)

    return api


def _goes(row: ApprovalView) -> bool:
    """Whether a decision sends the call: `auto` or a grant this call used (`GO`), nothing else."""
    from skillpress.runtime.calling.gates import GO

    return row["status"] in GO


def decided_under(bound: str | None, gate: GateCheck) -> str:
    """The skill a gated call is decided under: the one whose operation it is (`gate.skill`, as
    the face placing the call bound it), never the skill of a workflow calling it or another a
    host binds. A gatekeeper made for one skill (`bound`) decides no other's call: GateClosed."""
    named = gate.skill or bound
    if named is None:
        raise GateClosed(f"not sent: {gate.operation}'s call names no skill to decide it under")
    if bound is not None and named != bound:
        raise GateClosed(
            f"not sent: {gate.operation} is an operation of {named}, and this gatekeeper decides"
            f" {bound}'s calls only; a host binding several skills decides each under its own"
            " (api_gatekeeper(url, token) without a slug)"
        )
    return named


def terminal_gatekeeper(
    open_desk: Callable[[], Desk],
    slug: str,
    who: str,
    approver: Callable[[], str | None],
    wait: float,
    say: Callable[[str], None],
) -> Gatekeeper:
    """A gated call from a terminal goes only with a person's approval (or under the gate's
    `auto_below`), and every decision is recorded: the operator's own (`approver` names them,
    `--approve`), or a request another person grants (waited for up to `wait` seconds, polled
    twice a second). A grant another identical call used first is not this call's: it asks anew
    and waits on. Raises GateClosed, naming the request, when it is denied, expires or is still
    pending. What it says names no command that decides: whoever runs the call may be an agent."""
    from skillpress.runtime.calling.gates import GrantSpent

    def decide(gate: GateCheck) -> None:
        skill = decided_under(slug, gate)
        desk = open_desk()
        try:
            by = approver()
            row = desk.settle(skill, gate, who, f"{by} at the terminal" if by else None)
            if _goes(row):
                say(f"approved by {row['decided_by']} (#{row['id']}): {gate.describe()}")
                return
            if row["status"] == "pending":
                say(
                    f"waiting for approval #{row['id']}: {gate.describe()}."
                    " It waits for a person's decision"
                )
            deadline = time.monotonic() + wait
            while row["status"] == "pending":
                asked = row["id"]
                assert asked is not None
                try:
                    row = desk.consume(asked)
                except GrantSpent:
                    row = desk.settle(skill, gate, who)
                    if row["status"] == "pending":
                        say(
                            f"approval #{asked} was used by another call with the same values;"
                            f" this one waits for approval #{row['id']}"
                        )
                if _goes(row):
                    say(f"approved by {row['decided_by']} (#{row['id']})")
                    return
                if row["status"] != "pending" or time.monotonic() >= deadline:
                    break
                time.sleep(0.5)
        finally:
            desk.close()
        if row["status"] == "denied":
            raise GateClosed(
                f"not sent: approval #{row['id']} was denied by {row['decided_by']}",
                row["id"],
                denied=True,
            )
        if row["status"] == "pending":
            raise GateClosed(
                f"not sent: approval #{row['id']} is still pending; the same call once"
                " it is approved goes through",
                row["id"],
            )
        raise GateClosed(
            f"not sent: approval #{row['id']} {row['status']} before this call could use it;"
            " calling again asks anew"
        )

    return decide


def agent_gatekeeper(open_desk: Callable[[], Desk], slug: str | None = None) -> Gatekeeper:
    """An agent's gated call (over MCP, or a host's): sent under `auto_below`, or when a person
    granted exactly that call and this call used the grant (once); otherwise recorded as a
    request the agent is told to wait on (GateClosed naming it). Each call is decided under the
    skill whose operation it is; made for one `slug`, it decides that skill's calls only. The
    desk is opened at the first gated call, not when the server starts."""

    def decide(gate: GateCheck) -> None:
        skill = decided_under(slug, gate)
        desk = open_desk()
        try:
            row = desk.settle(skill, gate, gate.caller or "an MCP client")
        finally:
            desk.close()
        if _goes(row):
            return
        if row["status"] != "pending":
            raise GateClosed(
                f"not sent: approval #{row['id']} {row['status']} before this call could use it;"
                " calling again with the same arguments asks anew"
            )
        until = (row["expires_at"] or "")[:16].replace("T", " ")
        raise GateClosed(
            f"not sent: {gate.describe()}. It waits for a person's approval (request"
            f" #{row['id']}), open until {until} UTC;"
            " tell the user what you would send and why, and call again with the same arguments"
            " once they say it is approved.",
            row["id"],
        )

    return decide


def api_gatekeeper(url: str, token: str, slug: str | None = None) -> Gatekeeper:
    """`agent_gatekeeper` over the approvals of the skillpress API at `url`, with a runtime's
    `token`: what an agent host (`SkillHost(gatekeeper=...)`) uses when the approvals live with
    `skillpress serve`, out of the agent's reach. Without `slug` it decides every skill's calls,
    each under its own (a host of several skills); with one, that skill's only."""
    return agent_gatekeeper(lambda: ApiDesk(url, token), slug)
