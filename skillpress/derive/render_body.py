"""The skill's body as the derivation renders it (body.md: what the API is for, its categories with
their operations, where the files are), each category's and section's file, and its webhooks."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from skillpress.derive.auth import auth_hint
from skillpress.derive.categories import Category
from skillpress.derive.model import Operation, Webhook
from skillpress.derive.render import LEVELS, fits_one_read, humanize
from skillpress.derive.render_arguments import fields_text, shape_lines, spec_example
from skillpress.format.text import (
    first_sentence,
    full_text,
    short_text,
    spec_line,
    without_urls,
)
from skillpress.format.wording import CALL_BY_NAME

_BODY_LEVELS: tuple[tuple[int, int] | str | None, ...] = (
    (3, 100),
    (3, 60),
    (2, 80),
    (2, 40),
    (2, 0),
    (1, 60),
    (1, 0),
    (0, 60),
    (0, 0),
    "spans",  # names and counts, a split category with the span of its paths
    None,
)


def render_webhook(hook: Webhook) -> str:
    """An event's file: what the API sends to a URL of yours, and its payload (never a tool)."""
    text = ""
    for level in LEVELS:
        lines = [f"# {spec_line(hook.name)[:200]}", ""]
        what = hook.summary or first_sentence(hook.description)
        if what:
            lines += [what.rstrip(".") + ".", ""]
        desc = full_text(hook.description, 6000) if level.get("full") else ""
        if desc and not desc.startswith(what.rstrip(".…")):
            lines += [desc, ""]
        lines.append(
            f"An event this API sends: a `{hook.method}` to a URL you registered with it (a"
            " webhook). It is not a tool: nothing here sends it, and no call answers it."
        )
        body = hook.body
        if body is not None:
            lines += ["", "## Payload", body.content_type or "unspecified type"]
            if isinstance(body.schema, dict) and not isinstance(
                body.schema.get("properties"), dict
            ):
                lines += shape_lines(body.schema)
            lines += fields_text(body.schema, level, body.field_docs)
            lines += spec_example("The spec's example of this payload:", body.example, level)
        text = "\n".join(lines).rstrip() + "\n"
        if fits_one_read(text):
            return text
    return text


def webhook_lines(hooks: list[Webhook], cap: int = 30) -> list[str]:
    """The body's list of the events the API sends (at most `cap`, then how many more)."""
    if not hooks:
        return []
    lines = [
        "## Events it sends (webhooks, not tools)",
        "It calls a URL of yours with these; each one's payload is in its file, beside this one.",
    ]
    for hook in hooks[:cap]:
        what = first_sentence(without_urls(hook.summary or hook.description), 100).rstrip(".")
        lines.append(
            f"- `{spec_line(hook.name)[:200]}` ({hook.method})"
            + (f" — {what}." if what else ".")
            + f" File: {hook.file}"
        )
    if len(hooks) > cap:
        lines.append(f"- and {len(hooks) - cap} more: " + ", ".join(h.file for h in hooks[cap:]))
    return lines


def _count(n: int) -> str:
    return f"{n} operation" if n == 1 else f"{n} operations"


def op_line(op: Operation) -> str:
    """An operation's line in a listing: its name, what it does, and marks (never its address:
    the listing says once where operation files are)."""
    what = op.summary or first_sentence(op.description, 120) or humanize(op.name)
    what = first_sentence(without_urls(what), 120).rstrip(".") or humanize(op.name)
    marks = []
    if op.tool is None:
        marks.append("not callable here")
    if op.deprecated:
        marks.append("deprecated")
    mark = f" ({', '.join(marks)})" if marks else ""
    prefer = f" Prefer `{op.additions.prefer}`." if op.additions.prefer else ""
    return f"- `{op.name}` — {what}.{mark}{prefer}"


def render_category(cat: Category, lines_of: Mapping[str, str] | None = None) -> str:
    """A category's file: its operations one line each (`lines_of`: those lines, by name)."""
    lines = [f"# {spec_line(cat.title)}", ""]
    if cat.description:
        lines += [spec_line(short_text(cat.description, 400)), ""]
    if cat.notes:
        lines += ["## Notes", ""] + [f"{n}\n" for n in cat.notes]
    lines.append(
        f"{_count(len(cat.ops))}. Read an operation's file (<name>.md, beside this one) before calling it."
    )
    lines.append("")
    lines += [lines_of[op.name] if lines_of else op_line(op) for op in cat.ops]
    return "\n".join(lines) + "\n"


def render_section(section: Category, members: list[Category]) -> str:
    """A file of the second level: the categories of one section, for an API whose categories
    do not fit the body even one line each."""
    lines = [f"# {spec_line(section.title)}", ""]
    lines.append(
        f"{_count(sum(len(c.ops) for c in members))} in {len(members)} categories."
        " Read a category's file (<category>.md, beside this one) to see its operations."
    )
    lines.append("")
    lines += [_category_line(cat, 3, 100) for cat in members]
    return "\n".join(lines) + "\n"


def tool_share(tools: int, total: int) -> str:
    if total == 0 or tools == 0:
        return "none"
    if tools == total:
        return "all"
    if tools * 2 >= total:
        return "most"
    return "some"


def render_body(
    meta: dict[str, Any],
    ops: list[Operation],
    categories: list[Category] | None,
    fits: Callable[[str], bool] | None = None,
    sections: list[tuple[Category, list[Category]]] | None = None,
    lines_of: Mapping[str, str] | None = None,
) -> str:
    """The manifest: the operations, or their categories, or (past what the body holds even a
    name each) sections of categories. A list that `fits` refuses (the body's budget, in bytes
    and tokens) is written tighter.
    `lines_of`: the operations' listing lines, by name, when they are made already."""
    head = _body_head(meta, ops)
    events = meta.get("events") or []
    tail = ("\n" + "\n".join(events) + "\n") if events else ""
    if sections:
        lines = [
            "## Sections",
            "Read a section's file (<section>.md, beside this one) to see its categories.",
            *(
                f"- `{sec.name}` — {_count(len(sec.ops))} in {len(members)} categories: {sec.title}."
                for sec, members in sections
            ),
        ]
        return head + "\n".join(lines) + "\n" + tail
    if not categories:
        listed = (lines_of[op.name] if lines_of else op_line(op) for op in ops)
        return head + "\n".join(["## Operations", *listed]) + "\n" + tail
    text = ""
    for level in _BODY_LEVELS:
        lines = [
            "## Categories",
            "Read a category's file (<category>.md, beside this one) to see its operations.",
        ]
        if level is None or isinstance(level, str):
            lines += _name_paragraph(categories, spans=level == "spans")
        else:
            lines += [_category_line(cat, *level) for cat in categories]
        text = head + "\n".join(lines) + "\n" + tail
        if fits is None or fits(text):
            return text
    return text


def _body_head(meta: dict[str, Any], ops: list[Operation]) -> str:
    total = len(ops)
    tools = sum(1 for op in ops if op.tool is not None)
    share = tool_share(tools, total)
    lines = [f"# {spec_line(meta['title'])}", ""]
    intro = without_urls(short_text(meta.get("description") or "", 400))
    if intro:
        lines += [intro, ""]
    share_text = {
        "all": f"All of them are tools: {CALL_BY_NAME}",
        "most": f"Most of them ({tools}) are tools: {CALL_BY_NAME}",
        "some": f"Some of them ({tools}) are tools: {CALL_BY_NAME}",
        "none": "None of them is a tool: skillpress cannot send their requests, and each file spells its request out for an HTTP client of your own.",
    }[share]
    lines.append(f"{_count(total)}. {share_text}")
    if share in ("most", "some"):
        lines.append(
            "An operation marked (not callable here) is not a tool: skillpress cannot send it; its file"
            " spells out the request for an HTTP client of your own."
        )
    lines.append("Read an operation's file (<name>.md, beside this one) before you first call it.")
    auth = meta.get("auth") or {}
    if auth.get("header"):
        hint = auth_hint(auth)
        lines.append(f"The credential is attached for you ({hint}); never send one in an argument.")
    if auth.get("operations_unservable"):
        kinds = ", ".join(auth.get("unservable_kinds") or []) or "other schemes"
        lines.append(
            f"{auth['operations_unservable']} operations need authentication this skill cannot attach ({kinds})."
        )
    lines.append("")
    notes = meta.get("skill_notes") or []
    if notes:
        lines.append("## Conventions")
        lines += [f"- {n}" for n in notes]
        lines.append("")
    return "\n".join(lines) + "\n"


_SPAN = re.compile(r"\(([^;()]+); part \d+ of \d+\)$")


def _name_paragraph(categories: list[Category], spans: bool = False) -> list[str]:
    """Every category as `name` (count), wrapped: the tightest listing that still names each;
    with `spans`, a category split in parts says the paths its part holds (Graph's `me_3`
    (351: drive … events)), so a model opens the right part of six."""
    lines: list[str] = []
    line = ""
    for cat in categories:
        span = _SPAN.search(cat.title) if spans and cat.parent is not None else None
        said = f": {span.group(1)}" if span else ""
        item = f"`{cat.name}` ({len(cat.ops)}{said})"
        if line and len(line) + len(item) + 2 > 100:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {item}" if line else item
    if line:
        lines.append(line + ".")
    return lines


def _category_line(cat: Category, examples: int, chars: int) -> str:
    desc = first_sentence(without_urls(cat.description), chars) if cat.description and chars else ""
    tail = f" {desc.rstrip('.')}." if desc else ""
    if cat.parent is not None and cat.title != cat.name:
        tail = f" {cat.title}.{tail}"
    names = ", ".join(op.name for op in cat.ops[:examples])
    return f"- `{cat.name}` — {_count(len(cat.ops))}.{tail}" + (
        f" For example {names}." if names else ""
    )
