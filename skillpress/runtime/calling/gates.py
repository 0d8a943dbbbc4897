"""Gates at call time: a call to an operation whose file declares `approval:` is sent only when a
person approved that exact call, or when its amount is under the gate's `auto_below`.

Pure: given a tool and a call's arguments, what the gate binds and whether it lets the call
through on its own. The faces decide who approves (`skillpress call --approve`: the person at the
terminal); an agent over MCP is told the call waits for a person, never sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from skillpress.errors import Refused
from skillpress.runtime.package.model import Tool

__all__ = ["GO", "GateCheck", "GrantSpent", "check_gate"]

# the decisions a gated call is sent on, and nothing else: under its gate's threshold (`auto`),
# or a person's grant this very call used up (`used`); pending, denied, expired and any status
# a later release adds hold it
GO = frozenset({"auto", "used"})


class GrantSpent(Refused):
    """A grant another call with the same values used first: a grant lets exactly one call
    through, so this one was not sent (it asks anew)."""

    problem = "grant-spent"
    status = 409


@dataclass(frozen=True)
class GateCheck:
    operation: str
    risk: str
    bound: dict[str, Any]  # the values of the fields the gate binds, as the call gives them
    auto: bool  # under `auto_below`: approved by the gate itself
    amount: Any = None
    caller: str | None = None  # who asks, when the face knows (an MCP client by its name)
    # the call's arguments and page URL: what an approvals server evaluates the gate on itself
    args: dict[str, Any] = field(default_factory=dict)
    page_url: str | None = None
    # the skill whose operation this is, as the face placing the call bound it: what the call is
    # decided under (never the skill of a workflow that calls it, nor of a host's other skills)
    skill: str | None = None

    def describe(self) -> str:
        values = json.dumps(self.bound, ensure_ascii=False, sort_keys=True)
        return f"{self.operation} is gated (risk {self.risk}); this call binds {values}"


def _dig(args: dict[str, Any], dotted: str) -> Any:
    value: Any = args
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _small(amount: Any, below: float | None) -> bool:
    """Whether `amount` is a number under the threshold (a negative one is never small)."""
    return (
        below is not None
        and isinstance(amount, (int, float))
        and not isinstance(amount, bool)
        and 0 <= amount < below
    )


def check_gate(tool: Tool, args: dict[str, Any], page_url: str | None = None) -> GateCheck | None:
    """The gate on this call, or None when the operation has none. A call sent to a page URL
    binds that URL too (its path values and its whole query are what the person sees and
    grants): a grant for one page is not a grant for another. An amount is approved by the gate
    only in the currency its threshold is in (`auto_currency`, read from the call's `currency`):
    a call that leaves the currency out, or a gate that reads none, is never automatic."""
    gate = tool.declaration.approval
    if gate is None:
        return None
    amount = _dig(args, gate.amount) if gate.amount else None
    currency = _dig(args, gate.currency) if gate.currency else None
    # an amount is automatic only in the currency its threshold is in: a gate that reads no
    # currency (a hand-written one; an annotation is refused without it) lets nothing through
    in_currency = bool(currency) and str(currency).upper() == (gate.auto_currency or "")
    auto = _small(amount, gate.auto_below) and in_currency
    bound = {name: args[name] for name in gate.binds if args.get(name) is not None}
    if page_url is not None:
        bound["page_url"] = page_url
    return GateCheck(tool.operation, gate.risk, bound, auto, amount, None, dict(args), page_url)
