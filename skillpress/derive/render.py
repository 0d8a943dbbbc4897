"""Render an operation's file, at each level of detail until it fits one read: what it does,
the call, its arguments (`render_arguments`) and its answers. The body, categories and webhooks
are `render_body`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skillpress.derive.declare import declaration_block
from skillpress.derive.model import Operation, Response
from skillpress.derive.render_arguments import body_section, described, params_section
from skillpress.derive.servers import join_url
from skillpress.format.text import (
    INVISIBLE,
    first_sentence,
    full_text,
    short_text,
    spec_line,
)

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILE_LINES",
    "LEVELS",
    "fits_one_read",
    "written_fits_one_read",
    "humanize",
    "render_operation",
]

MAX_FILE_BYTES = 32 * 1024
MAX_FILE_LINES = 2000
LEVELS = (
    # descriptions whole (Markdown kept) first; shortened only when the file would not fit a read
    {"desc": 300, "full": True, "fields": 25, "errors": 8, "enum": 12, "optional": True},
    {"desc": 300, "fields": 25, "errors": 8, "enum": 12, "optional": True},
    {"desc": 140, "fields": 12, "errors": 5, "enum": 6, "optional": True},
    {"desc": 80, "fields": 6, "errors": 3, "enum": 4, "optional": False},
    {"desc": 0, "fields": 0, "errors": 0, "enum": 0, "optional": False},
)


def fits_one_read(text: str) -> bool:
    return written_fits_one_read(text.encode())


def written_fits_one_read(data: bytes) -> bool:
    """`fits_one_read` of a file's bytes (a newline is one byte in UTF-8)."""
    return len(data) <= MAX_FILE_BYTES and data.count(b"\n") + 1 <= MAX_FILE_LINES


def _additions_section(op: Operation) -> list[str]:
    add = op.additions
    lines: list[str] = []
    if add.approval is not None:
        binds = add.approval.get("binds") or []
        bound = f", bound to the values of {', '.join(f'`{b}`' for b in binds)}" if binds else ""
        lines += [
            "",
            f"Gated: a person approves each call before it is sent (risk {add.approval.get('risk', 'high')}{bound}).",
        ]
    if add.identity and op.tool is not None:
        fields = ", ".join(f"`{f}`" for f in add.identity)
        lines += [
            "",
            f"The tool sends an `Idempotency-Key` header derived from {fields}: the same call retried is done once.",
        ]
    if add.prefer:
        lines += ["", f"Prefer `{add.prefer}` instead: a person who knows this API says so."]
    if op.tool is not None and op.tool.headers:
        sent = ", ".join(f"`{k}: {v}`" for k, v in sorted(op.tool.headers.items()))
        lines += ["", f"The tool sends on every call: {sent}."]
    if add.notes:
        lines += ["", "## Notes"]
        for note in add.notes:
            lines += ["", note]
    return lines


def _examples_section(op: Operation) -> list[str]:
    if not op.additions.examples:
        return []
    lines = ["", "## Examples", "Observed calls that worked:"]
    for ex in op.additions.examples:
        lines.append(
            f"- `{json.dumps(ex['arguments'], ensure_ascii=False, sort_keys=True)}` (turn {ex['turn']})"
        )
    return lines


def _call_section(op: Operation, url: str) -> list[str]:
    lines = [
        "",
        "## The call",
        "Not a tool: skillpress cannot send this request, so there is nothing to load or call here."
        f" Whoever has an HTTP client can: `{op.method} {url}`",
    ]
    if "{" in op.path:
        lines.append("Fill each `{name}` in the URL with the path parameter, percent-encoded.")
    if any(p.location == "query" for p in op.params):
        lines.append("Put query parameters in the query string.")
    if op.body is not None:
        lines.append(
            f"Send the body as `{op.body.content_type or 'application/octet-stream'}` with that Content-Type header."
        )
    if op.not_tool_reason:
        lines.append(f"(No tool because {op.not_tool_reason}.)")
    return lines


def _responses_section(op: Operation, level: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    success = [r for r in op.responses if r.status.startswith("2")]
    redirects = [r for r in op.responses if r.status.startswith("3")]
    errors = [r for r in op.responses if not r.status.startswith(("2", "3"))]
    if success:
        lines += _success_lines(op, success, level)
    for r in redirects[:3]:
        lines.append(
            f"Redirect {r.status}"
            + (f" — {short_text(r.description, 80)}" if r.description else "")
            + " (not followed: the Location header says where)."
        )
    if errors and level["errors"]:
        lines += ["", "## Errors"]
        for r in errors[: level["errors"]]:
            lines.append(
                f"- {r.status}"
                + (
                    f" — {described(r.long_description or r.description, level, min(level['desc'], 160) or 60, 600)}"
                    if r.description
                    else ""
                )
            )
    return lines


def _success_lines(op: Operation, success: list[Response], level: dict[str, Any]) -> list[str]:
    """The `## Response` section: the first success answer's shape (its fields up to the level's
    cap), how the read pages, and the other success answers by status."""
    r = success[0]
    lines = ["", "## Response"]
    head = f"{r.status}" + (
        f" — {short_text(r.description, level['desc'] or 60)}" if r.description else ""
    )
    lines.append(head)
    if r.status in ("204", "205"):
        pass  # no content, by definition
    elif r.shape_note == "any" and not r.shape:
        lines.append("The body's shape is not declared.")
    elif r.shape_note:
        lines.append(f"Returns {r.shape_note}" + (" with:" if r.shape else "."))
    elif r.shape:
        lines.append("Returns an object with:")
    if r.shape:
        cap = max(level["fields"], 0)
        for name, label in r.shape[:cap]:
            lines.append(f"- `{name}` ({label})")
        if len(r.shape) > cap:
            lines.append(f"- and {len(r.shape) - cap} more fields.")
    paging = op.tool_paging()
    if paging is not None:
        lines.append(paging.line())
    for other in success[1:3]:
        lines.append(
            f"Also {other.status}"
            + (f" — {short_text(other.description, 80)}" if other.description else "")
            + "."
        )
    return lines


def render_operation(
    op: Operation,
    base_url: str | None,
    credential_header: str | None = None,
    types: Mapping[str, Any] | None = None,
) -> bytes:
    """The operation's file, summarised further (never cut) until it fits one read
    (`credential_header`: where the skill attaches its credential, if it does; `types`: the
    shared types, so an enum type's values are listed where it is used). As bytes: the size
    that decides is theirs, and a share rendered by a forked child comes back as they are."""
    url = join_url(op.server_url or base_url, op.path)
    for level in LEVELS:
        data = _render_operation(op, url, {**level, "types": types}, credential_header).encode()
        if written_fits_one_read(data):
            return data
    return data


def _render_operation(
    op: Operation, url: str, level: dict[str, Any], credential_header: str | None
) -> str:
    parts: list[str] = []
    front = declaration_block(op, url)
    parts.append(f"# {op.name}\n")
    what = spec_line(op.summary or first_sentence(op.description)) or humanize(op.name)
    parts.append(what.rstrip(".") + ".")
    if level.get("full"):
        desc = full_text(op.description, 6000)
    else:
        desc = short_text(op.description, level["desc"] * 2) if level["desc"] else ""
    said = what.rstrip(".…")
    if desc.startswith(said):  # the description opens with the summary: the rest is news
        desc = desc[len(said) :].lstrip(".").strip()
    if desc and len(desc) > 3:
        parts.append(f"\n{desc}")
    if op.deprecated:
        parts.append("\nDeprecated: prefer another operation where one exists.")
    if not level.get("full"):
        parts.append("\nDescriptions here are shortened to fit one read; the spec's are longer.")
    if op.tool is not None:
        parts.append(
            f"\nTool: `{op.tool_name}` (call it by that name; the request is built for you)."
        )
        if op.tool.reduced:
            parts.append(
                f"Its argument schema is shortened to fit the tool budget ({op.tool.reduced});"
                " this file describes every field."
            )
    lines = "\n".join(parts).split("\n")
    lines += _additions_section(op)
    if op.tool is None:
        lines += _call_section(op, url)
    lines += params_section(op, level, credential_header)
    lines += body_section(op, level)
    lines += _responses_section(op, level)
    lines += _examples_section(op)
    prose = "\n".join(lines).rstrip() + "\n"
    if INVISIBLE.search(prose):  # a name or path that holds one: shown as its escape, never hidden
        prose = INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", prose)
    return (front + "\n" if front else "") + prose


# how a body lists its categories, tightest last: (examples, description characters); None: a
# paragraph of names and counts


def humanize(name: str) -> str:
    return name.replace("_", " ").capitalize()
