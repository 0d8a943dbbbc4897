"""A deterministic, readable JSON layout: objects one key per line, short values inline."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["readable_json"]

# one line, as `json.dumps(separators=(", ", ": "), ensure_ascii=False)` writes it (the C encoder)
_one_line = json.JSONEncoder(
    ensure_ascii=False, check_circular=False, separators=(", ", ": ")
).encode


def _length(node: Any, room: int) -> int:
    """The length of `node`'s one-line form when it is at most `room`; otherwise some number
    above `room` (the walk stops there, so a large value costs no more than a small one)."""
    if isinstance(node, str):
        n = len(node) + 2  # escaping only lengthens a string
        return n if n > room else len(_one_line(node))
    if isinstance(node, dict):
        total = 2 * len(node) or 2  # the braces, and ", " between entries
        for k, v in node.items():
            if total > room:
                return total
            total += _length(k, room - total) + 2
            if total <= room:
                total += _length(v, room - total)
        return total
    if isinstance(node, list):
        total = 2 * len(node) or 2
        for v in node:
            if total > room:
                return total
            total += _length(v, room - total)
        return total
    return len(_one_line(node))


class _TooLong(Exception):
    """The layout has more line breaks than asked for."""


def readable_json(
    value: Any, width: int = 88, indent: int = 2, max_lines: int | None = None
) -> str | None:
    """Like `json.dumps(indent=2)`, but any value whose one-line form fits `width` stays on one line.

    Top down: a node whose one-line form fits with its indentation is written so (measured
    without being written, and the measuring stops at the width); any other object or array
    has one key or item per line, each laid out the same way. With `max_lines`: None as soon as
    the layout has more line breaks than that, so a large schema is not laid out only to be
    written another way.
    """
    limit = -1 if max_lines is None else max_lines
    out: list[str] = []
    breaks = 0

    def lay(node: Any, level: int) -> None:
        nonlocal breaks
        pad = indent * level
        if (
            not node
            or not isinstance(node, dict | list)
            or _length(node, width - pad) <= width - pad
        ):
            out.append(_one_line(node))
            return
        breaks += len(node) + 1
        if breaks > limit >= 0:
            raise _TooLong
        inner = "\n" + " " * (pad + indent)
        if isinstance(node, dict):
            out.append("{")
            sep = inner
            for k, v in node.items():
                out.append(sep)
                out.append(_one_line(k))
                out.append(": ")
                lay(v, level + 1)
                sep = "," + inner
            out.append("\n" + " " * pad + "}")
        else:
            out.append("[")
            sep = inner
            for v in node:
                out.append(sep)
                lay(v, level + 1)
                sep = "," + inner
            out.append("\n" + " " * pad + "]")

    try:
        lay(value, 0)
    except _TooLong:
        return None
    return "".join(out)
