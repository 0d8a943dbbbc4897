"""The slash form for direct use: `/operation {"k": "v"}`, `/operation text`, `/help [operation]`.

Parsing rules follow the direct tool execution of the orchestration plan: the name runs to the
first space; the rest is JSON when it parses as JSON, otherwise plain text, which fills the
operation's one required argument (and is refused, with what it takes, when it has not exactly one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillpress.errors import Refused
from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.calling.translate import describe_arguments
from skillpress.runtime.package.model import Skill, Tool

if TYPE_CHECKING:
    from skillpress.runtime.workflows.model import Workflow

__all__ = [
    "SlashCommand",
    "SlashError",
    "help_text",
    "json_arguments",
    "parse_slash",
    "slash_arguments",
]


class SlashError(ValueError, Refused):
    """A line that is not a slash command; the message says the form."""


@dataclass(frozen=True)
class SlashCommand:
    name: str
    raw_args: str

    @property
    def is_help(self) -> bool:
        return self.name == "help"


def parse_slash(line: str) -> SlashCommand:
    text = line.strip()
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        raise SlashError(
            'write /operation {"arg": "value"}, /operation text, /help or /help operation'
        )
    head, _, rest = text[1:].partition(" ")
    return SlashCommand(head.strip(), rest.strip())


def json_arguments(raw: str) -> dict[str, Any] | None:
    """What follows a name on a slash line when it is JSON: the object it holds, or None when
    it is plain text; ValueError (saying what is wrong) for broken JSON or JSON that is not an
    object."""
    if not (raw[:1] in ("{", "[", '"') or raw in ("null", "true", "false")):
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"arguments are not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value


def slash_arguments(tool: Tool, raw: str) -> dict[str, Any]:
    """The call's arguments from what follows the name."""
    if not raw:
        return {}
    try:
        value = json_arguments(raw)
    except ValueError as exc:
        said = str(exc)
        if said.endswith("object"):
            said += f"; it takes {describe_arguments(tool)}"
        raise CallRefused(tool.operation, said) from None
    if value is not None:
        return value
    required = tool.declaration.required
    if len(required) == 1:
        return {required[0]: raw}
    raise CallRefused(
        tool.operation,
        f"plain text fills an operation's one required argument, and this one has {len(required)}; give JSON: it takes {describe_arguments(tool)}",
    )


def help_text(
    skill: Skill, name: str | None = None, workflows: Mapping[str, Workflow] | None = None
) -> str:
    """`/help`: every operation and whether it is a tool, then the workflows; `/help name`: one
    tool's (or workflow's) arguments and schema."""
    flows = dict(workflows or {})
    if name and name in flows:
        wf = flows[name]
        required = set(wf.parameters.get("required") or [])
        takes = [
            f"{p}{'' if p in required else '?'}"
            for p in sorted(wf.parameters.get("properties") or {})
        ]
        lines = [
            f"/{wf.name} — {wf.description}",
            f"  workflow   {wf.execution}"
            + (
                " (its steps run as written, no model)"
                if wf.execution == "hardened"
                else " (a model runs it)"
            ),
            f"  tool       {wf.tool_name or wf.name}",
            f"  arguments  {', '.join(takes) or 'none'}"
            + (f"; plain text fills {next(iter(required))}" if len(required) == 1 else ""),
            "  schema     " + json.dumps(wf.parameters, ensure_ascii=False),
        ]
        return "\n".join(lines)
    if name:
        tool = skill.tool(name)
        decl = tool.declaration
        lines = [
            f"/{tool.operation} — {tool.description}",
            f"  tool       {tool.name}",
            f"  request    {decl.method} {decl.url}",
            f"  arguments  {describe_arguments(tool)}",
        ]
        if decl.identity:
            lines.append(f"  identity   {', '.join(decl.identity)} (an Idempotency-Key is sent)")
        if decl.approval:
            lines.append(f"  approval   {decl.approval.matches}, risk {decl.approval.risk}")
        lines.append("  schema     " + json.dumps(tool.schema, ensure_ascii=False))
        return "\n".join(lines)
    width = max((len(o.name) for o in skill.operations), default=0)
    lines = [
        f"{skill.title} ({skill.slug}): {skill.tool_count} of {len(skill.operations)} operations are tools"
    ]
    for entry in skill.operations:
        mark = "" if entry.tool else "  (not a tool: read its file)"
        lines.append(f"  /{entry.name.ljust(width)}  {entry.method} {entry.path}{mark}")
    if flows:
        lines.append(f"Workflows ({len(flows)}):")
        wide = max(len(n) for n in flows)
        for n, wf in sorted(flows.items()):
            lines.append(
                f"  /{n.ljust(wide)}  {wf.execution}: {wf.description.splitlines()[0] if wf.description else ''}".rstrip()
            )
    lines.append(
        'Call one with /name {"arg": "value"}'
        + (", a workflow with /run name {...} or /name {...}" if flows else "")
        + "; /help name shows its arguments."
    )
    return "\n".join(lines)
