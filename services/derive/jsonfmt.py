"""A deterministic, readable JSON layout: objects one key per line, short values inline."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["readable_json"]


def _inline(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def readable_json(value: Any, width: int = 88, indent: int = 2) -> str:
    """Like `json.dumps(indent=2)`, but any value whose one-line form fits `width` stays on one line."""

    def fmt(node: Any, level: int) -> str:
        one = _inline(node)
        pad = " " * (indent * level)
        if len(one) + len(pad) <= width or not isinstance(node, (dict, list)) or not node:
            return one
        inner = " " * (indent * (level + 1))
        if isinstance(node, dict):
            items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {fmt(v, level + 1)}" for k, v in node.items()]
            return "{\n" + ",\n".join(items) + "\n" + pad + "}"
        items = [f"{inner}{fmt(v, level + 1)}" for v in node]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"

    return fmt(value, 0)
