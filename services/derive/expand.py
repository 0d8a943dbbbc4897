"""Expand `#/types/Name` references into standalone tool schemas, within a byte budget."""

from __future__ import annotations

import json
from typing import Any

from services.derive.errors import SchemaTooLarge
from services.derive.schema import refs_in
from services.derive.text import short_text

__all__ = [
    "ExpandedSizes",
    "expand_types",
    "has_ref_keyword",
    "reduce_to_budget",
    "MAX_TOOL_SCHEMA_BYTES",
    "compact_json",
]

MAX_TOOL_SCHEMA_BYTES = 24 * 1024
# keywords whose keys are field names, not schema keywords (a field may be called `$ref`)
NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)


def expand_types(
    schema: Any,
    types: dict[str, Any],
    budget: int = MAX_TOOL_SCHEMA_BYTES,
    max_depth: int | None = None,
    descriptions: bool = True,
    description_chars: int | None = None,
) -> Any:
    """The schema with every `#/types/` reference replaced by the type itself.

    A type that contains itself stops at `{"type": "object"}` the second time it is met on a
    path. Raises `SchemaTooLarge` as soon as the expansion certainly passes `budget` bytes (a
    running lower bound of the bytes written: keys, strings, punctuation), and after the fact if
    it does. A reduction:
    `max_depth` leaves types nested deeper than that many references undetailed (any value),
    `descriptions=False` drops every description below the arguments themselves, and
    `description_chars` shortens those kept.
    """
    counter = [budget]  # a lower bound of the bytes written so far, taken off the budget
    cap = description_chars or budget

    def cost(key: str, value: Any, names: bool) -> int:
        if isinstance(value, str):
            shortened = key == "description" and not names
            return len(key) + 6 + (min(len(value), cap // 2) if shortened else len(value))
        return len(key) + 4

    def walk(node: Any, stack: tuple[str, ...], level: int, names: bool = False) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                name = ref[8:]
                if name in stack or name not in types:
                    counter[0] -= 17
                    return {"type": "object"}
                if max_depth is not None and len(stack) >= max_depth:
                    counter[0] -= 60
                    return {
                        "description": f"a {name} (not detailed here: see the operation's file)"
                    }
                return walk(types[name], stack + (name,), level + 1)
            keep_all = descriptions or names or level <= 2  # `names`: keys are field names
            counter[0] -= 2 + sum(
                cost(k, v, names) for k, v in node.items() if keep_all or k != "description"
            )
            if counter[0] < 0:
                raise SchemaTooLarge()
            out = {
                k: walk(v, stack, level + 1, k in NAME_MAPS and not names)
                for k, v in node.items()
                if keep_all or k != "description"
            }
            text = out.get("description")
            if description_chars and not names and isinstance(text, str):
                out["description"] = short_text(text, description_chars)
            return out
        if isinstance(node, list):
            counter[0] -= 2 + sum(len(v) + 3 if isinstance(v, str) else 1 for v in node)
            if counter[0] < 0:
                raise SchemaTooLarge()
            return [walk(v, stack, level + 1) for v in node]
        return node

    out = walk(schema, (), 0)
    if len(compact_json(out).encode()) > budget:
        raise SchemaTooLarge()
    return out


class ExpandedSizes:
    """Whether `expand_types(schema, types)` fits the budget, answered without building it: the
    byte size of each type's expansion is computed once and reused wherever its expansion cannot
    differ (none of the types it reaches is on the path it is met on, so no cycle is cut
    differently). The same bytes `compact_json` would write, counted."""

    def __init__(self, types: dict[str, Any], budget: int = MAX_TOOL_SCHEMA_BYTES) -> None:
        self.types = types
        self.budget = budget
        self._sizes: dict[str, int] = {}
        self._reach: dict[str, frozenset[str]] = {}

    def fits(self, schema: Any) -> bool:
        return self.size(schema) <= self.budget

    def size(self, schema: Any) -> int:
        """The expansion's bytes, or budget + 1 for any size past the budget."""
        return self._size(schema, ())

    def _reaches(self, name: str) -> frozenset[str]:
        got = self._reach.get(name)
        if got is None:
            seen: set[str] = set()
            todo = [name]
            while todo:
                cur = todo.pop()
                if cur not in seen:
                    seen.add(cur)
                    todo.extend(refs_in(self.types.get(cur)))
            got = self._reach[name] = frozenset(seen)
        return got

    def _size(self, node: Any, stack: tuple[str, ...]) -> int:
        over = self.budget + 1
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                name = ref[8:]
                if name in stack or name not in self.types:
                    return 17  # {"type":"object"}
                if stack and not self._reaches(name).isdisjoint(stack):
                    return self._size(self.types[name], stack + (name,))
                size = self._sizes.get(name)
                if size is None:
                    size = self._sizes[name] = self._size(self.types[name], (name,))
                return size
            total = 1 + max(len(node), 1)  # braces and commas
            for k, v in node.items():
                total += len(compact_json(k).encode()) + 1 + self._size(v, stack)
                if total > self.budget:
                    return over
            return total
        if isinstance(node, list):
            total = 1 + max(len(node), 1)
            for v in node:
                total += self._size(v, stack)
                if total > self.budget:
                    return over
            return total
        return len(compact_json(node).encode())


# reductions tried in turn when a tool's schema is over budget, fewest first:
# (types detailed to this depth, descriptions inside the arguments kept, what it says)
REDUCTIONS: tuple[tuple[int | None, bool, str], ...] = (
    (None, True, "descriptions shortened"),
    (None, False, "descriptions inside the arguments left out, the arguments' own shortened"),
    *(
        (
            depth,
            False,
            f"descriptions left out, types nested deeper than {depth} levels not detailed",
        )
        for depth in (6, 5, 4, 3, 2, 1)
    ),
)


def reduce_to_budget(schema: Any, types: dict[str, Any]) -> tuple[Any, str]:
    """The expanded schema made to fit the budget (fewest reductions first), and what was reduced;
    raises SchemaTooLarge when even the strongest reduction does not fit."""
    for depth, nested, said in REDUCTIONS:
        try:
            reduced = expand_types(
                schema, types, max_depth=depth, descriptions=nested, description_chars=120
            )
            return reduced, said
        except SchemaTooLarge:
            continue
    raise SchemaTooLarge()


def has_ref_keyword(schema: Any) -> bool:
    """Whether a `$ref` keyword is left (a field named `$ref` inside `properties` is not one)."""
    stack: list[tuple[Any, bool]] = [(schema, False)]
    while stack:
        node, names = stack.pop()
        if isinstance(node, dict):
            if not names and isinstance(node.get("$ref"), str):
                return True
            stack.extend((v, k in NAME_MAPS and not names) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, False) for v in node)
    return False
