"""One call of a skill's operation, the same on every face (`call`, `run`, MCP, `SkillHost`,
workflow steps): build the exact request, hold it at its gate, send it.

The faces differ only in who decides a gated call (the `Gatekeeper` they pass: the person at a
terminal, an approval request an agent waits on, or nobody), in how they show the outcome, and
in where the credential and local files come from (`CallSetup`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from skillpress.errors import Refused
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits, send
from skillpress.runtime.calling.gates import GateCheck, check_gate
from skillpress.runtime.calling.paging import next_page, page_url_request
from skillpress.runtime.calling.request import CallRefused, FileReader, PreparedRequest
from skillpress.runtime.calling.results import CallResult
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.model import Tool

__all__ = [
    "send_prepared",
    "CallSetup",
    "GateClosed",
    "Gatekeeper",
    "Placed",
    "ask_gatekeeper",
    "closed_gate",
    "place_call",
    "prepare_call",
]


class GateClosed(PermissionError, Refused):
    """A gated call, not sent: it waits for a person's decision (`request` names the approval
    request, when one was recorded), or a person denied it."""

    problem = "gate-closed"
    status = 409

    def __init__(self, message: str, request: int | None = None, denied: bool = False) -> None:
        super().__init__(message)
        self.request, self.denied = request, denied

    @property
    def waits(self) -> bool:
        """Whether a person may still grant it (a request is pending), so the call can go later."""
        return self.request is not None and not self.denied


# the longest next page's URL a result offers (what an agent is sent counts against its budget)
MAX_PAGE_URL = 4096

# decides a gated call: returns when it may be sent, raises GateClosed when it may not
Gatekeeper = Callable[[GateCheck], None]


def ask_gatekeeper(gatekeeper: Gatekeeper, gate: GateCheck, skill: str) -> None:
    """Let `gatekeeper` decide `gate`, a call of an operation of `skill` (the slug it is bound
    as): every face asks through here, so a gatekeeper always knows whose operation it decides."""
    gatekeeper(replace(gate, skill=skill))


def closed_gate(check: GateCheck) -> None:
    """Nobody here approves: only a call under the gate's `auto_below` goes."""
    if not check.auto:
        raise GateClosed(f"not sent: {check.describe()}; a person approves each such call")


@dataclass(frozen=True)
class CallSetup:
    """Where a face's calls get what the model does not give: the credential, the bounds, the
    folder local files may be read from, the environment the credential's variable is read in."""

    credential: Credential | None = None
    limits: CallLimits = field(default_factory=CallLimits)
    files: FileReader | None = None
    environ: Mapping[str, str] | None = None

    def for_tool(self, tool: Tool) -> CallSetup:
        """This setup as `tool` is sent: with the credential of the scheme its operation names
        (`operation.credential`, one skill.json lists), where it is not the skill's first."""
        if tool.auth is None:
            return self
        allow = self.credential.allow_private_token_url if self.credential else False
        env = tool.auth.env or ""
        return replace(self, credential=Credential(tool.auth, env, allow_private_token_url=allow))


@dataclass(frozen=True)
class Placed:
    """A call's request, its gate (None when the operation has none) and, once sent, its result."""

    request: PreparedRequest
    gate: GateCheck | None
    result: CallResult | None = None
    # the credential it is sent with, where its operation names its own (else the setup's)
    credential: Credential | None = None

    def shown_request(self, setup: CallSetup) -> dict[str, Any]:
        """The request as a dry run prints it: each credential as the variable it comes from,
        where it goes (a header, the query, a cookie)."""
        shown = self.request.as_dict()
        credential = self.credential or setup.credential
        return credential.show(shown) if credential else shown


def prepare_call(
    tool: Tool,
    args: Any,
    hosts: frozenset[str],
    setup: CallSetup = CallSetup(),
    page_url: str | None = None,
) -> Placed:
    """The request and its gate, nothing sent (CallRefused when the arguments are wrong);
    with `page_url` (a previous result's `next.page_url`), the same request sent there."""
    args = tool.from_model(args)
    request = build_request(tool, args, hosts, setup.files)
    if page_url is not None:
        request = page_url_request(tool.declaration, request, page_url, hosts)
    gate = check_gate(tool, args if isinstance(args, dict) else {}, page_url)
    return Placed(request, gate, credential=setup.for_tool(tool).credential if tool.auth else None)


def _with_next(
    tool: Tool, args: Any, hosts: frozenset[str], request: PreparedRequest, result: CallResult
) -> None:
    """Set the result's `next` (the next page), or why a next page it names is not offered."""
    decl = tool.declaration
    if decl.paging is None:
        return
    given = {**(args if isinstance(args, dict) else {})}
    found = next_page(decl, given, request.url, result.status, result.headers, result.body_value())
    if found is not None and len(str(found.get("page_url", ""))) > MAX_PAGE_URL:
        result.next_refused = (
            f"the answer names a next page at a URL of {len(str(found['page_url'])):,}"
            f" characters, over the {MAX_PAGE_URL:,} a page URL may have"
        )
        return
    if found is not None and "page_url" in found:
        try:
            page_url_request(decl, request, found["page_url"], hosts)
        except CallRefused as exc:
            result.next_refused = (
                f"the answer names a next page at {found['page_url']}: {exc.reason}"
            )
            return
    result.next = found


def place_call(
    tool: Tool,
    args: Any,
    hosts: frozenset[str],
    setup: CallSetup = CallSetup(),
    gatekeeper: Gatekeeper = closed_gate,
    page_url: str | None = None,
    *,
    skill: str,
) -> Placed:
    """Build the request (CallRefused), let its gate decide (GateClosed), send it
    (ExecutionFailed when no complete answer came back). `skill`: the slug the tool's skill is
    bound as, which its gate is decided under."""
    args = tool.from_model(args)
    placed = prepare_call(tool, args, hosts, setup, page_url)
    if placed.gate is not None:
        ask_gatekeeper(gatekeeper, placed.gate, skill)
    result = send_prepared(placed.request, setup.for_tool(tool))
    _with_next(tool, args, hosts, placed.request, result)
    return Placed(placed.request, placed.gate, result, placed.credential)


def send_prepared(request: PreparedRequest, setup: CallSetup) -> CallResult:
    return send(request, credential=setup.credential, environ=setup.environ, limits=setup.limits)
