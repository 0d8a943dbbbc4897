"""What each provider accepts in a tool's schema, and the transformation that gets a schema there.

- `anthropic`, `openai`, `mcp`: JSON Schema as written (references already expanded); arrays
  always carry `items`.
- `openai-strict`: every object closed (`additionalProperties: false`) with every property
  required; an optional property becomes nullable (the runtime reads null as "left out");
  keywords strict mode refuses are dropped.
- `gemini`: the OpenAPI-subset Gemini takes: no `additionalProperties`, no type lists (a
  nullable type becomes `nullable: true`), `const` as a one-value enum, no `default`, no
  exclusive bounds, string formats only `date-time` and `enum`.

Each transformation says what it changed, per tool, so nothing is silently lost.
"""

from __future__ import annotations

import copy
from typing import Any

from skillpress.errors import Refused

__all__ = ["PROFILES", "TOOLS_AT_MOST", "TooManyTools", "adapt", "check_tool_count"]

PROFILES = ("anthropic", "openai", "mcp", "openai-strict", "gemini")
# the tools a provider takes in one request, where it documents a limit (OpenAI's function
# calling: at most 128 functions)
TOOLS_AT_MOST = {"openai": 128, "openai-strict": 128}


class TooManyTools(Refused):
    """More tools than the provider takes in one request: a list it would refuse whole. The
    message says how many, and how to choose (`how`: the face's own way of naming tools)."""

    def __init__(self, provider: str, count: int, how: str) -> None:
        self.provider, self.count, self.limit = provider, count, TOOLS_AT_MOST[provider]
        super().__init__(
            f"{provider} takes at most {self.limit} tools in one request, and these are"
            f" {count}: {how} (the skill's body and category files list them)"
        )


def check_tool_count(provider: str, count: int, how: str) -> None:
    """TooManyTools where `count` tools are more than `provider` takes in one request."""
    limit = TOOLS_AT_MOST.get(provider)
    if limit is not None and count > limit:
        raise TooManyTools(provider, count, how)


_STRICT_DROP = (
    "minLength",
    "maxLength",
    "uniqueItems",
    "default",
    "patternProperties",
    "minProperties",
    "maxProperties",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "title",
)
_STRICT_FORMATS = {
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
}
_GEMINI_DROP = (
    "additionalProperties",
    "default",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "title",
    "uniqueItems",
    "patternProperties",
    "multipleOf",
    "$schema",
)


def _items(node: dict[str, Any], path: str, notes: list[str]) -> None:
    if node.get("type") == "array" and "items" not in node:
        node["items"] = {}
        notes.append(f"{path}: an array without items now says items: {{}}")


def _strict(node: Any, path: str, notes: list[str]) -> Any:
    if not isinstance(node, dict):
        return node
    for key in _STRICT_DROP:
        if key in node:
            node.pop(key)
            notes.append(f"{path}: dropped {key} (strict mode refuses it)")
    if isinstance(node.get("format"), str) and node["format"] not in _STRICT_FORMATS:
        notes.append(f"{path}: dropped format {node.pop('format')}")
    _items(node, path, notes)
    props = node.get("properties")
    typ = node.get("type")
    if (
        typ == "object"
        or (isinstance(typ, list) and "object" in typ)
        or isinstance(props, dict)
        or "additionalProperties" in node
    ):
        props = props if isinstance(props, dict) else {}
        required = set(node.get("required", []))
        for name, sub in props.items():
            sub = _strict(sub, f"{path}.{name}", notes)
            if name not in required:
                sub = _nullable(sub)
                notes.append(
                    f"{path}.{name}: optional, so required and nullable (null means left out)"
                )
            props[name] = sub
        node["properties"] = props
        node["required"] = list(props)
        if (
            isinstance(node.get("additionalProperties"), dict)
            or node.get("additionalProperties") is True
        ):
            notes.append(
                f"{path}: a map of free keys cannot be said in strict mode; closed (additionalProperties: false)"
            )
        elif node.get("additionalProperties") is not False:
            notes.append(f"{path}: closed (additionalProperties: false)")
        node["additionalProperties"] = False
    for key in ("items",):
        if isinstance(node.get(key), dict):
            node[key] = _strict(node[key], f"{path}[]", notes)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            node[key] = [_strict(s, f"{path}|{i}", notes) for i, s in enumerate(node[key])]
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
        notes.append(f"{path}: oneOf written as anyOf")
    return node


def _nullable(sub: Any) -> Any:
    if not isinstance(sub, dict):
        return sub
    typ = sub.get("type")
    if isinstance(typ, str):
        return {**sub, "type": [typ, "null"]} if typ != "null" else sub
    if isinstance(typ, list):
        return sub if "null" in typ else {**sub, "type": [*typ, "null"]}
    return {"anyOf": [sub, {"type": "null"}]}


def _gemini(node: Any, path: str, notes: list[str]) -> Any:
    if not isinstance(node, dict):
        return node
    for key in _GEMINI_DROP:
        if key in node:
            node.pop(key)
            if key != "additionalProperties":
                notes.append(f"{path}: dropped {key}")
    if "const" in node:
        node["enum"] = [node.pop("const")]
        notes.append(f"{path}: const written as a one-value enum")
    typ = node.get("type")
    if isinstance(typ, list):
        rest = [t for t in typ if t != "null"]
        node["type"] = rest[0] if rest else "string"
        if "null" in typ:
            node["nullable"] = True
        if len(rest) > 1:
            notes.append(f"{path}: type {typ} narrowed to {rest[0]}")
    if isinstance(node.get("format"), str) and node["format"] not in ("date-time", "enum"):
        notes.append(f"{path}: dropped format {node.pop('format')}")
    if "enum" in node and node.get("type") not in (None, "string"):
        node["enum"] = [str(v) for v in node["enum"]]
        node["type"] = "string"
        notes.append(f"{path}: enum values written as strings")
    _items(node, path, notes)
    if isinstance(node.get("properties"), dict):
        node["properties"] = {
            k: _gemini(v, f"{path}.{k}", notes) for k, v in node["properties"].items()
        }
    if isinstance(node.get("items"), dict):
        node["items"] = _gemini(node["items"], f"{path}[]", notes)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            node["anyOf" if key != "allOf" else key] = [
                _gemini(s, f"{path}|{i}", notes) for i, s in enumerate(node.pop(key))
            ]
    return node


def _plain(node: Any, path: str, notes: list[str]) -> Any:
    if isinstance(node, dict):
        _items(node, path, notes)
        for key, value in list(node.items()):
            if key in ("properties",) and isinstance(value, dict):
                node[key] = {k: _plain(v, f"{path}.{k}", notes) for k, v in value.items()}
            elif isinstance(value, dict):
                node[key] = _plain(value, f"{path}.{key}", notes)
            elif isinstance(value, list):
                node[key] = [_plain(v, f"{path}.{key}", notes) for v in value]
    return node


def adapt(schema: dict[str, Any], profile: str) -> tuple[dict[str, Any], list[str]]:
    """(the schema as `profile` accepts it, what was changed)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: one of {', '.join(PROFILES)}")
    notes: list[str] = []
    node = copy.deepcopy(schema)
    if profile == "openai-strict":
        out = _strict(node, "$", notes)
    elif profile == "gemini":
        out = _gemini(node, "$", notes)
    else:
        out = _plain(node, "$", notes)
    return out, notes
