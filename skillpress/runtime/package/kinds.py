"""Whether each operation of a skill reads or writes: the approval annotations where a person set
them, else the guesses, else its method. What the tool contract types each tool by, and what a
sandboxed workflow run refuses to send."""

from __future__ import annotations

from collections.abc import Mapping

from skillpress.derive.approvals import guess_suggestions
from skillpress.format.declaration import READ_METHODS, WRITE_RISKS
from skillpress.runtime.package.model import Skill

__all__ = ["operation_kinds"]


def operation_kinds(skill: Skill, files: Mapping[str, bytes]) -> dict[str, str]:
    """read | write per operation: the approval annotations where a person set them, else the guesses."""
    out: dict[str, str] = {}
    if "skill.json" in files:
        for g in guess_suggestions(files):
            if g.kind == "approval":
                out[g.operation] = "read" if g.group == "reads" else "write"
    for tool in skill.tools:
        decl = tool.declaration
        if tool.operation not in out:
            out[tool.operation] = "read" if decl.method in READ_METHODS else "write"
        if decl.approval is not None and decl.approval.risk in WRITE_RISKS:
            out[tool.operation] = "write"
    return out
