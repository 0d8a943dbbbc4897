"""Argument names every provider takes, and the way back: pure.

Anthropic refuses a tool whose schema has a property name outside `^[a-zA-Z0-9_.-]{1,64}$` (at
any depth), and one such tool fails the whole tools request; GitHub Enterprise Cloud has a
66-character field, other APIs have `Upload Yaml/Yml File` or `$filter`. Every provider shape is
given names that hold that rule (`provider_names`), each renamed property saying in its
description the name the API reads, and a model's arguments are read back through the same
renaming (`original_names`) before anything else sees them, so gates, identities and the request
see the API's own names. The renaming is a pure function of the schema: same schema, same names.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["NAME_RULE", "original_names", "provider_names", "rename_cost", "renames"]

NAME_RULE = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
_MAX = 64
_DEPTH = 64


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]


def _safe(name: str) -> str:
    """A name that holds the rule, read from `name`: other characters as `_`, and a long name
    cut with a digest of the whole so two long names stay two."""
    out = re.sub(r"[^a-zA-Z0-9_.-]+", "_", name).strip("_") or "field"
    if len(out) > _MAX:
        out = f"{out[: _MAX - 9].rstrip('_')}_{_digest(name)}"
    return out


def rename_cost(key: str) -> int:
    """At most the bytes renaming one property adds to a schema's JSON: `Sent as `key`.` in
    its description (a description key of its own where it had none), a name a digest longer."""
    if NAME_RULE.match(key):
        return 0
    return len(json.dumps(f"Sent as `{key}`. ", ensure_ascii=False).encode()) + 24


def renames(keys: list[str]) -> dict[str, str]:
    """The names a level's properties are offered under: each key → its new name, only for the
    keys that do not hold the rule (a new name never one another key already has)."""
    taken = {k for k in keys if NAME_RULE.match(k)}
    out: dict[str, str] = {}
    for key in keys:
        if key in taken:
            continue
        new = _safe(key)
        if new in taken:
            new = f"{new[: _MAX - 9]}_{_digest(key)}"
        taken.add(new)
        out[key] = new
    return out


def provider_names(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`schema` with every property name holding the rule, and what was renamed (in words)."""
    notes: list[str] = []
    out = copy.deepcopy(schema)
    _rename(out, "", notes, 0)
    return out, notes


# keywords whose value is a schema, a list of schemas, or a map of names to schemas
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAPS = ("$defs", "definitions", "patternProperties", "dependentSchemas")


def _rename(node: Any, path: str, notes: list[str], depth: int) -> None:
    if depth > _DEPTH or not isinstance(node, dict):
        return
    props = node.get("properties")
    if isinstance(props, dict):
        changed = renames([k for k in props if isinstance(k, str)])
        if changed:
            fresh: dict[Any, Any] = {}
            for key, sub in props.items():
                new = changed.get(key, key)
                if new != key:
                    said = sub.get("description") if isinstance(sub, dict) else None
                    head = f"Sent as `{key}`."
                    if isinstance(sub, dict):
                        sub = {**sub, "description": f"{head} {said}" if said else head}
                    notes.append(f"{path}.{key}: offered as {new} (a provider refuses the name)")
                fresh[new] = sub
            node["properties"] = props = fresh
            if isinstance(node.get("required"), list):
                node["required"] = [changed.get(r, r) for r in node["required"]]
        for key, sub in props.items():
            _rename(sub, f"{path}.{key}", notes, depth + 1)
    for key in _ONE:
        _rename(node.get(key), f"{path}.{key}", notes, depth + 1)
    for key in _MANY:
        subs = node.get(key)
        for i, sub in enumerate(subs if isinstance(subs, list) else []):
            _rename(sub, f"{path}.{key}[{i}]", notes, depth + 1)
    for key in _MAPS:
        subs = node.get(key)
        for name, sub in (subs if isinstance(subs, dict) else {}).items():
            _rename(sub, f"{path}.{key}.{name}", notes, depth + 1)


def original_names(schema: Mapping[str, Any], value: Any) -> Any:
    """A model's arguments with every renamed property under the name the API reads; a name
    that already is one is kept (a caller that never saw the renaming is read as it is)."""
    return _back(schema, value, schema, 0)


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(16):
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return schema
        schema = node
    return schema


def _back(schema: Any, value: Any, root: Mapping[str, Any], depth: int) -> Any:
    schema = _resolve(schema, root)
    if depth > _DEPTH or not isinstance(schema, dict):
        return value
    branches = [
        b
        for key in ("allOf", "anyOf", "oneOf")
        for b in schema.get(key) or []
        if isinstance(b, dict)
    ]
    for branch in branches:
        value = _back(branch, value, root, depth + 1)
    if isinstance(value, list):
        items = schema.get("items")
        return [_back(items, v, root, depth + 1) for v in value] if items else value
    if not isinstance(value, dict):
        return value
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    back = {new: old for old, new in renames([k for k in props if isinstance(k, str)]).items()}
    extra = schema.get("additionalProperties")
    out: dict[Any, Any] = {}
    for key, sub in value.items():
        name = key if key in props else back.get(key, key)
        if name in props:
            out[name] = _back(props[name], sub, root, depth + 1)
        elif isinstance(extra, dict):
            out[name] = _back(extra, sub, root, depth + 1)
        else:
            out[name] = sub
    return out
