"""An operation's declaration written as its file's frontmatter: what `format/frontmatter.py`
reads back (the golden packages and a test that loads every derived file hold the two to each
other)."""

from __future__ import annotations

import json
import re

from skillpress.derive.model import Operation
from skillpress.format.declaration import JSON_BODY
from skillpress.format.jsonfmt import readable_json

__all__ = ["declaration_block"]

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def _y(value: str) -> str:
    """A YAML scalar: plain where that is unambiguous, JSON-quoted otherwise."""
    if _PLAIN.match(value) and value.lower() not in (
        "true",
        "false",
        "null",
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "~",
    ):
        return value
    return json.dumps(value, ensure_ascii=False)


def declaration_block(op: Operation, url: str) -> str:
    """The `---` frontmatter: the operation block (for a tool), then identity and approval where set."""
    lines = ["---"]
    if op.tool is not None:
        lines += [
            "operation:",
            f"  method: {op.method}",
            f"  url: {json.dumps(url, ensure_ascii=False)}",
        ]
        if op.tool.query:
            lines.append("  query: [" + ", ".join(_y(q) for q in op.tool.query) + "]")
        if op.tool.header:
            lines.append("  header: [" + ", ".join(_y(h) for h in op.tool.header) + "]")
        if op.tool.cookie:
            lines.append("  cookie: [" + ", ".join(_y(c) for c in op.tool.cookie) + "]")
        if op.tool.fixed:
            lines.append(
                "  fixed: " + json.dumps(op.tool.fixed, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.headers:
            lines.append(
                "  headers: " + json.dumps(op.tool.headers, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.content_type != JSON_BODY:
            lines.append(f"  content_type: {json.dumps(op.tool.content_type)}")
        if op.tool.styles:
            lines.append(
                "  style: " + json.dumps(op.tool.styles, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.body_arg:
            lines.append(f"  body_arg: {_y(op.tool.body_arg)}")
        if op.tool.sent_as:
            lines.append(
                "  sent_as: " + json.dumps(op.tool.sent_as, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.files:
            lines.append("  files: [" + ", ".join(_y(f) for f in op.tool.files) + "]")
        if op.credential:
            lines.append(f"  credential: {json.dumps(op.credential)}")
        paging = op.tool_paging()
        if paging is not None:
            lines.append("  paging: " + json.dumps(paging.to_dict(), ensure_ascii=False))
        pretty = readable_json(op.tool.schema, max_lines=300)
        if pretty is None:
            pretty = json.dumps(op.tool.schema, separators=(",", ":"), ensure_ascii=False)
        lines.append("  schema: |")
        lines.extend("    " + ln for ln in pretty.split("\n"))
        if op.additions.identity:
            lines.append("identity: " + json.dumps(op.additions.identity, ensure_ascii=False))
    if op.additions.approval is not None:
        lines.append("approval: " + json.dumps(op.additions.approval, ensure_ascii=False))
    if len(lines) == 1:
        return ""
    lines.append("---")
    return "\n".join(lines) + "\n"
