"""Expand `#/types/Name` references into standalone tool schemas, within a byte budget."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from skillpress.format.errors import SchemaTooLarge
from skillpress.format.gc_pause import cleared_after
from skillpress.format.jsonfmt import scalar_json
from skillpress.format.provider_names import provider_names, rename_cost
from skillpress.format.text import short_text
from skillpress.format.type_refs import reachable

__all__ = [
    "ExpandedSizes",
    "expand_types",
    "has_ref_keyword",
    "reduce_to_budget",
    "shallow_schema",
    "MAX_TOOL_SCHEMA_BYTES",
    "REDUCTIONS",
    "compact_json",
]

MAX_TOOL_SCHEMA_BYTES = 24 * 1024
# keywords whose keys are field names, not schema keywords (a field may be called `$ref`)
NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)


@cleared_after
@lru_cache(maxsize=262144)  # keys and enum values recur across a spec's schemas
def _str_bytes(text: str) -> int:
    return len(compact_json(text).encode())


def _scalar_bytes(value: Any) -> int:
    if isinstance(value, str):
        return _str_bytes(value)
    return len(scalar_json(value))  # ASCII: a number, true, false or null


CUT_SAYS = "(not detailed here: see the operation's file)"


def _resolved(node: Any, types: dict[str, Any]) -> Any:
    """`node` with its `#/types/` references followed (None for one that goes round, or nowhere)."""
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        name = node["$ref"].removeprefix("#/types/")
        if name in seen:
            return None
        seen.add(name)
        node = types.get(name)
    return node


def _type_key(value: Any) -> Any:
    """A `type` as a set member: a name, or a list of names (OpenAPI 3.1's `["object", "null"]`)
    as a sorted tuple; anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(sorted(set(value)))
    return None


def _one_value(node: Any, types: dict[str, Any]) -> bool:
    node = _resolved(node, types)
    if not isinstance(node, dict):
        return False
    enum = node.get("enum")
    return "const" in node or (isinstance(enum, list) and len(enum) == 1)


def _branches_type(node: dict[str, Any], types: dict[str, Any]) -> str | None:
    """The one `type` every branch of `node`'s oneOf or anyOf declares, if they agree."""
    branches = node.get("oneOf") or node.get("anyOf")
    if not isinstance(branches, list) or not branches:
        return None
    found: set[Any] = set()
    for branch in branches:
        branch = _resolved(branch, types)
        found.add(_type_key(branch.get("type")) if isinstance(branch, dict) else None)
    only = found.pop() if len(found) == 1 else None
    return only if isinstance(only, str) else None


def cut_type(name: str, types: dict[str, Any]) -> dict[str, Any]:
    """What a type not detailed (past the depth kept) is written as: its own `type`, and the
    fields it requires with their own types and bounds (a few levels down), so a value the
    spec refuses for its shape is refused here too (a string where an object is declared, an
    amount without its currency); any other field is admitted, and the operation's file
    describes them all."""
    out = shallow_schema(types[name], types)
    out["description"] = f"a {name} {CUT_SAYS}"
    return out


# what a field kept in a cut type keeps of its schema: its type and the bounds on its value
_SHALLOW_KEEP = (
    "type", "format", "pattern", "minLength", "maxLength", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "const", "nullable",
)  # fmt: skip


def shallow_schema(
    node: Any, types: dict[str, Any], depth: int = 3, seen: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """`node`'s type and the bounds on its value, and the fields it requires, each the same way
    `depth` levels down (shared types' references followed): what a schema cut short keeps."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"].removeprefix("#/types/")
        if ref in seen or ref not in types:
            return {}
        seen |= {ref}
        node = types[ref]
    if not isinstance(node, dict):
        return {}
    out = _value_bounds(node, types)
    if depth <= 0:
        return out
    branches = node.get("oneOf") or node.get("anyOf")
    if isinstance(branches, list) and branches and len(branches) <= 20:
        # each branch as shallow (anyOf: two branches cut alike may both match a value)
        out["anyOf"] = [shallow_schema(b, types, depth, seen) for b in branches]
    if isinstance(node.get("items"), dict) and out.get("type") == "array":
        out["items"] = shallow_schema(node["items"], types, depth, seen)
    props = node.get("properties")
    if isinstance(props, dict):
        required = node.get("required")
        listed = required if isinstance(required, list) else []
        kept = [r for r in listed if isinstance(r, str) and r in props]
        # a field with one possible value (a discriminator's `type: ach`) says which branch
        chosen = kept + [k for k, v in props.items() if k not in kept and _one_value(v, types)]
        if kept:
            out["required"] = kept
        if chosen:
            out["properties"] = {
                k: shallow_schema(props[k], types, depth - 1, seen) for k in chosen
            }
    return out


def _value_bounds(node: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    """`node`'s type (or the one its branches agree on) and the bounds on its value."""
    out = {k: node[k] for k in _SHALLOW_KEEP if k in node}
    declared = out.get("type")
    if not (
        isinstance(declared, str)
        or (isinstance(declared, list) and all(isinstance(t, str) for t in declared))
    ):
        out.pop("type", None)
        shared = _branches_type(node, types)  # every branch an object: the value is one
        if shared is not None:
            out["type"] = shared
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) <= 20:
        out["enum"] = enum
    return out


def _undetailed(branch: Any) -> bool:
    """A branch an expansion cut (a type met again on its path, or past the depth kept): it
    matches any value of its type, so it may overlap another branch."""
    if not isinstance(branch, dict):
        return False
    if branch == {"type": "object"}:
        return True
    said = branch.get("description")
    return isinstance(said, str) and said.endswith(CUT_SAYS)


def loosened(node: dict[str, Any]) -> dict[str, Any]:
    """`node` with a `oneOf` that has a cut branch written `anyOf` (the same bytes): two cut
    branches match every value, and `oneOf` would then refuse every value. Shortening may
    loosen a schema, never make it unsatisfiable."""
    branches = node.get("oneOf")
    if not isinstance(branches, list) or not any(_undetailed(b) for b in branches):
        return node
    return {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}


def expand_types(
    schema: Any,
    types: dict[str, Any],
    budget: int = MAX_TOOL_SCHEMA_BYTES,
    max_depth: int | None = None,
    descriptions: bool = True,
    description_chars: int | None = None,
) -> Any:
    """The schema with every `#/types/` reference replaced by the type itself.

    A type that contains itself is cut (`cut_type`: its type and the fields it requires) the
    second time it is met on a path. Raises `SchemaTooLarge` as soon as the expansion certainly passes `budget` bytes (a
    running lower bound of the bytes written: keys, strings, punctuation), and after the fact if
    it does. A reduction:
    `max_depth` leaves types nested deeper than that many references undetailed (any value),
    `descriptions=False` drops every description below the arguments themselves, and
    `description_chars` shortens those kept.
    """
    counter = [budget]  # a lower bound of the bytes written so far, taken off the budget
    cap = description_chars or budget

    def cost(key: str, value: Any, names: bool) -> int:
        """`"key":` and, for a string, its value: no more than compact_json writes for them."""
        if isinstance(value, str):
            shortened = key == "description" and not names
            return len(key) + 5 + (min(len(value), cap // 2) if shortened else len(value))
        return len(key) + 3

    def referred(name: str, stack: tuple[str, ...], level: int) -> Any:
        """A named type where it is referred to: expanded, or cut (a cycle, too deep)."""
        if name not in types:
            counter[0] -= 17
            return {"type": "object"}
        if name in stack or (max_depth is not None and len(stack) >= max_depth):
            counter[0] -= 60
            return cut_type(name, types)
        return walk(types[name], stack + (name,), level + 1)

    def walk(node: Any, stack: tuple[str, ...], level: int, names: bool = False) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                return referred(ref[8:], stack, level)
            keep_all = descriptions or names or level <= 2  # `names`: keys are field names
            kept = [cost(k, v, names) for k, v in node.items() if keep_all or k != "description"]
            counter[0] -= 2 + sum(kept) + max(len(kept) - 1, 0)  # braces, items, commas
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
            return out if names else loosened(out)
        if isinstance(node, list):
            counter[0] -= (
                2
                + sum(
                    len(v) + 2 if isinstance(v, str) else 0 if isinstance(v, dict | list) else 1
                    for v in node
                )
                + max(len(node) - 1, 0)
            )
            if counter[0] < 0:
                raise SchemaTooLarge()
            return [walk(v, stack, level + 1) for v in node]
        return node

    out = walk(schema, (), 0)
    if len(compact_json(provider_names(out)[0]).encode()) > budget:  # as a provider is given it
        raise SchemaTooLarge()
    return out


class ExpandedSizes:
    """Whether `expand_types(schema, types, …)` fits the budget, answered without building it:
    the byte size of each type's expansion is computed once and reused wherever its expansion
    cannot differ (none of the types it reaches is on the path it is met on, so no cycle is cut
    differently; the same depth left, and the same level where that matters). The same bytes
    `compact_json` would write, counted. `max_depth`, `descriptions` and `description_chars` are
    `expand_types`' reductions; `reduced` gives the sizes under one of them."""

    def __init__(
        self,
        types: dict[str, Any],
        budget: int = MAX_TOOL_SCHEMA_BYTES,
        max_depth: int | None = None,
        descriptions: bool = True,
        description_chars: int | None = None,
        renamed: bool = True,
    ) -> None:
        self.types = types
        # counted as a provider is given it (`provider_names`' renames too): derive's measure;
        # a package's load measures the schema as written, so a package derived before loads
        self.renamed = renamed
        self.budget = budget
        self.max_depth = max_depth
        self.descriptions = descriptions
        self.description_chars = description_chars
        self._sizes: dict[tuple[str, int, int], int] = {}
        self._cuts: dict[str, tuple[dict[str, Any], int]] = {}  # a cut type, and its bytes
        self._built: dict[tuple[str, int, int], Any] = {}
        self._reach: dict[str, frozenset[str]] = {}
        self._refs: dict[str, list[str]] = {}  # the types each type refers to directly
        self._reduced: dict[tuple[int | None, bool], ExpandedSizes] = {}

    def reduced(self, max_depth: int | None, descriptions: bool, chars: int) -> ExpandedSizes:
        key = (max_depth, descriptions)
        got = self._reduced.get(key)
        if got is None:
            got = self._reduced[key] = ExpandedSizes(
                self.types, self.budget, max_depth, descriptions, chars, self.renamed
            )
            # what a type reaches, and what a cut one is written as, do not depend on it
            got._reach, got._refs, got._cuts = self._reach, self._refs, self._cuts
        return got

    def fits(self, schema: Any) -> bool:
        return self.size(schema) <= self.budget

    def expand(self, schema: Any) -> Any:
        """`expand_types(schema, types, …)` under this object's reductions, for a schema that
        `fits`: each type's expansion is built once and shared wherever it cannot differ (the
        same keys as the sizes), so the result's subtrees may be shared — read it, never change it."""
        return self._build(schema, (), 0, False)

    def _build_ref(self, name: str, stack: tuple[str, ...], level: int) -> Any:
        if name not in self.types:
            return {"type": "object"}
        if name in stack or (self.max_depth is not None and len(stack) >= self.max_depth):
            return self._cut(name)[0]
        inner = stack + (name,)
        key = self._key(name, stack, level)
        if key is None:
            return self._build(self.types[name], inner, level + 1, False)
        got = self._built.get(key)
        if got is None:
            got = self._built[key] = self._build(self.types[name], inner, level + 1, False)
        return got

    def _build(self, node: Any, stack: tuple[str, ...], level: int, names: bool) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                return self._build_ref(ref[8:], stack, level)
            keep_all = self.descriptions or names or level <= 2
            out = {
                k: self._build(v, stack, level + 1, k in NAME_MAPS and not names)
                for k, v in node.items()
                if keep_all or k != "description"
            }
            text = out.get("description")
            if self.description_chars and not names and isinstance(text, str):
                out["description"] = short_text(text, self.description_chars)
            return out if names else loosened(out)
        if isinstance(node, list):
            return [self._build(v, stack, level + 1, False) for v in node]
        return node

    def size(self, schema: Any) -> int:
        """The expansion's bytes, or budget + 1 for any size past the budget."""
        return self._size(schema, (), 0, False)

    def _reaches(self, name: str) -> frozenset[str]:
        return reachable(name, self.types, self._refs, self._reach)

    def _cut(self, name: str) -> tuple[dict[str, Any], int]:
        """Type `name` not detailed (`cut_type`), made once, and the bytes it is written in."""
        got = self._cuts.get(name)
        if got is None:
            cut = cut_type(name, self.types)
            written = provider_names(cut)[0] if self.renamed else cut
            got = self._cuts[name] = (cut, len(compact_json(written).encode()))
        return got

    def _ref(self, name: str, stack: tuple[str, ...], level: int) -> int:
        if name not in self.types:
            return 17  # {"type":"object"}
        if name in stack or (self.max_depth is not None and len(stack) >= self.max_depth):
            return self._cut(name)[1]
        inner = stack + (name,)
        key = self._key(name, stack, level)
        if key is None:
            return self._size(self.types[name], inner, level + 1, False)
        size = self._sizes.get(key)
        if size is None:
            size = self._sizes[key] = self._size(self.types[name], inner, level + 1, False)
        return size

    def _key(self, name: str, stack: tuple[str, ...], level: int) -> tuple[str, int, int] | None:
        """What the expansion of type `name` met on `stack` depends on, to reuse it by; None
        when a type it reaches is on the stack (a cycle is cut there: work it out afresh)."""
        if stack and not self._reaches(name).isdisjoint(stack):
            return None
        return (
            name,
            0 if self.descriptions else min(level + 1, 3),  # past level 2 the level is moot
            -1 if self.max_depth is None else self.max_depth - len(stack),
        )

    def _size(self, node: Any, stack: tuple[str, ...], level: int, names: bool) -> int:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                return self._ref(ref[8:], stack, level)
            return self._object_size(node, stack, level, names)
        if isinstance(node, list):
            total = 1 + max(len(node), 1)
            for v in node:
                if isinstance(v, dict | list):
                    total += self._size(v, stack, level + 1, False)
                else:
                    total += _scalar_bytes(v)
                if total > self.budget:
                    return self.budget + 1
            return total
        return _scalar_bytes(node)

    def _object_size(
        self, node: dict[str, Any], stack: tuple[str, ...], level: int, names: bool
    ) -> int:
        keep_all = self.descriptions or names or level <= 2
        total, count = 2, 0
        for k, v in node.items():
            if not keep_all and k == "description":
                continue
            count += 1
            if isinstance(v, str):  # leaves are counted here: most values are
                if k == "description" and self.description_chars and not names:
                    v = short_text(v, self.description_chars)
                value = _str_bytes(v)
            elif isinstance(v, dict | list):
                value = self._size(v, stack, level + 1, k in NAME_MAPS and not names)
                if k == "properties" and self.renamed and not names and isinstance(v, dict):
                    # what a provider's names add (`provider_names`), counted here
                    value += sum(rename_cost(name) for name in v if isinstance(name, str))
            else:
                value = _scalar_bytes(v)
            total += _str_bytes(k) + 1 + value
            if total > self.budget:
                return self.budget + 1
        return total + count - 1 if count else total


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
# past every reduction above (the last resort before arguments are left undetailed)
STRONGEST = (0, False, "descriptions left out, shared types not detailed")


def reduce_to_budget(
    schema: Any,
    types: dict[str, Any],
    sizes: ExpandedSizes | None = None,
    strongest: bool = False,
) -> tuple[Any, str]:
    """The expanded schema made to fit the budget (fewest reductions first), and what was reduced;
    raises SchemaTooLarge when even the strongest reduction does not fit (`strongest`: with no
    shared type detailed at all, too). `sizes` (over the same types) answers which reduction
    fits without building the ones that do not."""
    for depth, nested, said in (*REDUCTIONS, *((STRONGEST,) if strongest else ())):
        if sizes is not None:
            fitting = sizes.reduced(depth, nested, 120)
            if fitting.fits(schema):
                return fitting.expand(schema), said
            continue
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
