"""A tool schema's named types: the `#/types/Name` references a schema holds, every type one
reaches, and the one short label a schema is shown by (`string`, `array of Pet`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["NAMED_PREFIXES", "named_ref", "reachable", "refs_in", "type_label"]

# where a document names its schemas (OpenAPI 3, Swagger 2)
NAMED_PREFIXES = ("#/components/schemas/", "#/definitions/")


def named_ref(ref: str) -> str | None:
    for prefix in NAMED_PREFIXES:
        if ref.startswith(prefix):
            rest = ref[len(prefix) :]
            if rest and "/" not in rest:
                return rest
    return None


def reachable(
    name: str,
    types: dict[str, Any],
    refs: dict[str, list[str]],
    reach: dict[str, frozenset[str]],
) -> frozenset[str]:
    """Every type name reachable from type `name` in `types` (itself included), walked over
    each type's direct references (`refs`, found once per type) and kept in `reach`."""
    got = reach.get(name)
    if got is None:
        seen: set[str] = set()
        todo = [name]
        while todo:
            cur = todo.pop()
            if cur not in seen:
                seen.add(cur)
                direct = refs.get(cur)
                if direct is None:
                    direct = refs[cur] = refs_in(types.get(cur))
                todo.extend(direct)
        got = reach[name] = frozenset(seen)
    return got


def refs_in(schema: Any) -> list[str]:
    """Type names referenced (`#/types/Name`) anywhere inside a translated schema."""
    found: list[str] = []
    stack = [schema]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            ref = cur.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/"):
                found.append(ref[8:])
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return found


def _types_ref(ref: str) -> str:
    return ref[8:] if ref.startswith("#/types/") else (named_ref(ref) or "object")


def type_label(schema: Any, ref_label: Callable[[str], str] = _types_ref) -> str:
    """The one short human label of a schema, translated or as the spec wrote it: `string`,
    `array of Pet`, `integer or null`, `string (date-time)`. `ref_label` names a `$ref`."""
    if not isinstance(schema, dict):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref_label(ref)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        return type_label(all_of[0], ref_label)
    typ = schema.get("type")
    if isinstance(typ, list):
        return " or ".join(_one_label(schema, str(t), ref_label) for t in typ)
    if isinstance(typ, str):
        return _one_label(schema, typ, ref_label)
    for key in ("oneOf", "anyOf"):
        alts = schema.get(key)
        if isinstance(alts, list) and alts:
            labels = list(dict.fromkeys(type_label(a, ref_label) for a in alts))
            return " or ".join(labels[:4]) + (" or …" if len(labels) > 4 else "")
    if "enum" in schema:
        return "enum"
    return "object" if "properties" in schema else "any"


def _one_label(schema: dict[str, Any], typ: str, ref_label: Callable[[str], str]) -> str:
    if typ == "array":
        return f"array of {type_label(schema.get('items'), ref_label)}"
    fmt = schema.get("format")
    if typ in ("string", "integer", "number") and isinstance(fmt, str):
        return f"{typ} ({fmt})"
    return typ
