"""Expand `#/types/Name` references into standalone tool schemas, within a byte budget."""

from __future__ import annotations

import json
from typing import Any

from services.derive.errors import SchemaTooLarge

__all__ = ["expand_types", "MAX_TOOL_SCHEMA_BYTES", "compact_json"]

MAX_TOOL_SCHEMA_BYTES = 24 * 1024


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)


def expand_types(schema: Any, types: dict[str, Any], budget: int = MAX_TOOL_SCHEMA_BYTES) -> Any:
    """The schema with every `#/types/` reference replaced by the type itself.

    A type that contains itself stops at `{"type": "object"}` the second time it is met on a
    path. Raises `SchemaTooLarge` as soon as the expansion certainly passes `budget` bytes
    (each key or item costs at least two bytes), and after the fact if it does.
    """
    counter = [budget // 2]

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                name = ref[8:]
                if name in stack or name not in types:
                    counter[0] -= 1
                    return {"type": "object"}
                return walk(types[name], stack + (name,))
            counter[0] -= len(node)
            if counter[0] < 0:
                raise SchemaTooLarge()
            return {k: walk(v, stack) for k, v in node.items()}
        if isinstance(node, list):
            counter[0] -= len(node)
            if counter[0] < 0:
                raise SchemaTooLarge()
            return [walk(v, stack) for v in node]
        return node

    out = walk(schema, ())
    if len(compact_json(out).encode()) > budget:
        raise SchemaTooLarge()
    return out
