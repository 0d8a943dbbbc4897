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


def readable_json(value: Any, width: int = 88, indent: int = 2) -> str:
    """Like `json.dumps(indent=2)`, but any value whose one-line form fits `width` stays on one line.

    One pass, bottom up: each node's one-line form is composed from its children's (exactly what
    `json.dumps(separators=(", ", ": "))` writes), so nothing is serialised twice.
    """

    def fmt(node: Any, level: int) -> tuple[str, str]:
        if isinstance(node, dict) and node:
            parts = [(_scalar(str(k)), fmt(v, level + 1)) for k, v in node.items()]
            one = "{" + ", ".join(f"{k}: {c[0]}" for k, c in parts) + "}"
            pad = " " * (indent * level)
            if len(one) + len(pad) <= width:
                return one, one
            inner = " " * (indent * (level + 1))
            return one, "{\n" + ",\n".join(
                f"{inner}{k}: {c[1]}" for k, c in parts
            ) + "\n" + pad + "}"
        if isinstance(node, list) and node:
            kids = [fmt(v, level + 1) for v in node]
            one = "[" + ", ".join(c[0] for c in kids) + "]"
            pad = " " * (indent * level)
            if len(one) + len(pad) <= width:
                return one, one
            inner = " " * (indent * (level + 1))
            return one, "[\n" + ",\n".join(f"{inner}{c[1]}" for c in kids) + "\n" + pad + "]"
        one = _scalar(node)
        return one, one

    return fmt(value, 0)[1]
