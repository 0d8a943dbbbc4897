"""A deterministic, readable JSON layout: objects one key per line, short values inline."""

from __future__ import annotations

import json
from json.encoder import (
    encode_basestring,  # the C encoder where there is one; what ensure_ascii=False uses
)
from typing import Any

__all__ = ["readable_json"]


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return encode_basestring(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)


class _TooLong(Exception):
    """The layout certainly has more line breaks than asked for."""


def readable_json(
    value: Any, width: int = 88, indent: int = 2, max_lines: int | None = None
) -> str | None:
    """Like `json.dumps(indent=2)`, but any value whose one-line form fits `width` stays on one line.

    One pass, bottom up: each node's one-line form is composed from its children's (exactly what
    `json.dumps(separators=(", ", ": "))` writes), so nothing is serialised twice. With
    `max_lines`: None as soon as the layout certainly has more line breaks than that. A node laid
    over several lines makes every node around it several lines too, each with at least its
    breaks; so a large schema is not laid out only to be written another way.
    """
    limit = -1 if max_lines is None else max_lines

    def fmt(node: Any, level: int) -> tuple[str, str, int]:
        if isinstance(node, dict) and node:
            parts = [(_scalar(str(k)), fmt(v, level + 1)) for k, v in node.items()]
            one = "{" + ", ".join(f"{k}: {c[0]}" for k, c in parts) + "}"
            pad = " " * (indent * level)
            if len(one) + len(pad) <= width:
                return one, one, 0
            breaks = len(parts) + 1 + sum(c[2] for _, c in parts)
            if breaks > limit >= 0:
                raise _TooLong
            inner = " " * (indent * (level + 1))
            text = "{\n" + ",\n".join(f"{inner}{k}: {c[1]}" for k, c in parts) + "\n" + pad + "}"
            return one, text, breaks
        if isinstance(node, list) and node:
            kids = [fmt(v, level + 1) for v in node]
            one = "[" + ", ".join(c[0] for c in kids) + "]"
            pad = " " * (indent * level)
            if len(one) + len(pad) <= width:
                return one, one, 0
            breaks = len(kids) + 1 + sum(c[2] for c in kids)
            if breaks > limit >= 0:
                raise _TooLong
            inner = " " * (indent * (level + 1))
            return (
                one,
                "[\n" + ",\n".join(f"{inner}{c[1]}" for c in kids) + "\n" + pad + "]",
                breaks,
            )
        one = _scalar(node)
        return one, one, 0

    try:
        return fmt(value, 0)[1]
    except _TooLong:
        return None
