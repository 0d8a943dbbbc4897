"""What changed in an operation's declaration, in words a person reviewing a publication reads:
a new required argument, a type or an enum that moved, a gate added or dropped, an identity, a
fixed value, where the request goes. Pure: two files' frontmatter in, sentences out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skillpress.format.declaration import DeclarationError
from skillpress.format.frontmatter import split_frontmatter

__all__ = ["declaration_changes", "description_only"]

MAX_DETAILS = 12  # per operation; the rest is counted


def _front(path: str, data: bytes | None) -> dict[str, Any]:
    if not data:
        return {}
    try:
        return split_frontmatter(path, data.decode("utf-8", "replace")).frontmatter
    except DeclarationError:
        return {}


def _schema(block: Mapping[str, Any]) -> dict[str, Any]:
    raw = block.get("schema")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _kind(prop: Any) -> str:
    """An argument's type in a word: its type, its shared type's name, or its alternatives."""
    if not isinstance(prop, dict):
        return "any"
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    typ = prop.get("type")
    if isinstance(typ, list):
        return " or ".join(str(t) for t in typ)
    if typ == "array":
        return f"list of {_kind(prop.get('items'))}"
    if typ:
        return str(typ)
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return " or ".join(_kind(p) for p in prop[key])
    return "any"


def _names(values: Any) -> str:
    return ", ".join(f"`{v}`" for v in values)


def _arguments(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    before, after = old.get("properties") or {}, new.get("properties") or {}
    was_required, required = set(old.get("required") or ()), set(new.get("required") or ())
    for name in sorted(set(after) - set(before)):
        out.append(
            f"new {'required ' if name in required else ''}argument `{name}` ({_kind(after[name])})"
        )
    for name in sorted(set(before) - set(after)):
        out.append(f"argument `{name}` removed")
    for name in sorted(set(before) & set(after)):
        a, b = before[name], after[name]
        if _kind(a) != _kind(b):
            out.append(f"`{name}`: {_kind(a)} → {_kind(b)}")
        if name in required and name not in was_required:
            out.append(f"`{name}` is now required")
        elif name in was_required and name not in required:
            out.append(f"`{name}` is no longer required")
        values = _values_change(name, a, b)
        if values is not None:
            out.append(values)
    return out


def _values_change(name: str, a: Any, b: Any) -> str | None:
    """What changed in the values an argument takes (its enum), said for a reviewer."""
    old_enum = a.get("enum") if isinstance(a, dict) else None
    new_enum = b.get("enum") if isinstance(b, dict) else None
    if isinstance(old_enum, list) and isinstance(new_enum, list) and old_enum != new_enum:
        adds = [v for v in new_enum if v not in old_enum]
        drops = [v for v in old_enum if v not in new_enum]
        said = "; ".join(
            part
            for part in (
                f"adds {_names(adds)}" if adds else "",
                f"drops {_names(drops)}" if drops else "",
            )
            if part
        )
        return f"`{name}` values: {said or 'reordered'}"
    if isinstance(old_enum, list) != isinstance(new_enum, list):
        return f"`{name}` {'is now one of listed values' if new_enum else 'takes any value'}"
    return None


def _gate(old: Any, new: Any) -> list[str]:
    if old == new:
        return []
    if not isinstance(new, dict):
        return [f"gate removed (was {old.get('matches')}, risk {old.get('risk')})"] if old else []
    if not isinstance(old, dict):
        return [f"gate added: {new.get('matches')} (risk {new.get('risk', 'high')})"]
    out = []
    for key in ("matches", "risk", "binds", "amount", "currency", "auto_below", "auto_currency"):
        if old.get(key) != new.get(key):
            out.append(f"gate {key}: {old.get(key)!r} → {new.get(key)!r}")
    return out


def _undescribed(value: Any) -> Any:
    """A declaration less every description in it (what a model reads, never what is sent)."""
    if isinstance(value, dict):
        return {k: _undescribed(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_undescribed(v) for v in value]
    return value


def description_only(path: str, old: bytes | None, new: bytes | None) -> bool:
    """Whether two versions of an operation file's declaration differ only in the descriptions
    inside its argument schema: the call it sends is the same, only what a model reads of it
    changed (a diff counts that as described anew, not as a changed call)."""
    a, b = _front(path, old), _front(path, new)
    if not a or not b or a == b:
        return False
    block_a, block_b = dict(_block(a)), dict(_block(b))
    schema_a, schema_b = _schema(block_a), _schema(block_b)
    block_a.pop("schema", None)
    block_b.pop("schema", None)
    rest_a = {k: v for k, v in a.items() if k != "operation"}
    rest_b = {k: v for k, v in b.items() if k != "operation"}
    return (
        block_a == block_b and rest_a == rest_b and _undescribed(schema_a) == _undescribed(schema_b)
    )


def _block(front: Mapping[str, Any]) -> dict[str, Any]:
    block = front.get("operation")
    return block if isinstance(block, dict) else {}


def declaration_changes(path: str, old: bytes | None, new: bytes | None) -> list[str]:
    """What changed between two versions of one operation file's declaration, most telling
    first (where it goes, its arguments, its gate and identity, what is fixed), at most
    MAX_DETAILS sentences and a count of the rest."""
    a, b = _front(path, old), _front(path, new)
    block_a = _block(a)
    block_b = _block(b)
    out: list[str] = []
    if not block_a and block_b:
        out.append("is a tool now")
    elif block_a and not block_b:
        out.append("is no longer a tool")
    for key, said in (("method", "method"), ("url", "sent to")):
        if block_a.get(key) != block_b.get(key) and block_a and block_b:
            out.append(f"{said} {block_b.get(key)} (was {block_a.get(key)})")
    out += _arguments(_schema(block_a), _schema(block_b))
    out += _gate(a.get("approval"), b.get("approval"))
    identity_a = block_a.get("identity", a.get("identity"))
    identity_b = block_b.get("identity", b.get("identity"))
    if identity_a != identity_b:
        out.append(
            f"identity: {_names(identity_a or []) or 'none'} → {_names(identity_b or []) or 'none'}"
        )
    for key, said in (
        ("fixed", "fixed values"),
        ("headers", "fixed headers"),
        ("content_type", "body type"),
        ("style", "query styles"),
        ("header", "header arguments"),
        ("paging", "paging"),
        ("files", "file arguments"),
    ):
        if block_a.get(key) != block_b.get(key) and (block_a or block_b):
            shown = json.dumps(block_b.get(key), ensure_ascii=False, sort_keys=True)
            out.append(f"{said}: {shown if block_b.get(key) is not None else 'none'}")
    if not out and _schema(block_a) != _schema(block_b):  # never a bare "declaration"
        out.append("its arguments' schema changed (a constraint, a format or a nested field)")
    if len(out) > MAX_DETAILS:
        out = [*out[:MAX_DETAILS], f"and {len(out) - MAX_DETAILS} more"]
    return out
