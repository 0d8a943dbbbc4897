"""Translate OpenAPI's schema dialect into plain JSON Schema (draft 2020-12) for tool arguments.

Named components become shared types referenced as `#/types/Name`; other local references
are followed; `allOf` is merged; `nullable` becomes a type list; what a request does not send
(readOnly fields, examples, XML hints, discriminators, extensions) is left out.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from skillpress.derive.refs import Resolver
from skillpress.derive.schema_kinds import (
    Hierarchies,
    discriminated,
    kind_said,
    narrowed,
    never_one,
)
from skillpress.format.errors import SpecRefused
from skillpress.format.gc_pause import cleared_after
from skillpress.format.text import short_text
from skillpress.format.type_refs import named_ref, reachable

__all__ = ["SchemaTranslator", "MAX_SCHEMA_DEPTH"]

MAX_SCHEMA_DEPTH = 100
_MAX_WORK = 3_000_000
_JSON_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
_COPY = (
    "format",
    "default",
    "const",
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@cleared_after  # every pattern of every API a worker derived was kept here, unbounded
@lru_cache(maxsize=16384)
def _pattern_ok(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


_REGEX_LITERAL = re.compile(r"/(.+)/([a-z]*)", re.S)


def _as_pattern(pattern: Any) -> str | None:
    """A schema's pattern as JSON Schema reads it. One written as a JavaScript literal
    (Sinao's `/^.*[a-z]+.*$/i`) matches no value as written, the slashes being characters: its
    inside is the pattern, and one whose flags change what it matches (`i`, `m`, `s`) is left
    out, which JSON Schema has no way to say."""
    if not isinstance(pattern, str):
        return None
    m = _REGEX_LITERAL.fullmatch(pattern)
    if m is None or not (m[2] or m[1].startswith("^") or m[1].endswith("$")):
        return pattern
    return None if set(m[2]) & set("ims") else m[1]


class SchemaTranslator:
    """Translates the schemas of one document; keeps the named types it met on the way."""

    def __init__(self, resolver: Resolver, *, swagger2: bool) -> None:
        self.resolver = resolver
        self.swagger2 = swagger2
        self.types: dict[str, Any] = {}
        self._pending: list[tuple[str, str]] = []
        self._names = self._assign_names(resolver.doc, swagger2)
        self._deps: dict[str, frozenset[str]] = {}
        self._refs: dict[str, list[str]] = {}  # the types each type refers to directly
        self._work = 0
        self._read_only_of: dict[str, frozenset[str]] = {}  # by reference: `_read_only_names`
        self._hierarchies = Hierarchies(resolver, self._names)

    @staticmethod
    def _assign_names(doc: dict[str, Any], swagger2: bool) -> dict[str, str]:
        if swagger2:
            keys = [("#/definitions/", k) for k in (doc.get("definitions") or {})]
        else:
            comps = (doc.get("components") or {}).get("schemas") or {}
            keys = [("#/components/schemas/", k) for k in comps]
        names: dict[str, str] = {}
        taken: set[str] = set()
        for prefix, key in sorted(keys, key=lambda p: p[1]):
            base = _SAFE_NAME.sub("_", str(key)).strip("_")[:80] or "Type"
            name, n = base, 2
            while name.lower() in taken:
                name, n = f"{base}_{n}", n + 1
            taken.add(name.lower())
            names[prefix + _escape(str(key))] = name
        return names

    # -- public ---------------------------------------------------------------------------------

    def type_name(self, ref: str) -> str | None:
        """The shared type name for a named-component reference, or None for other refs."""
        key = named_ref(ref)
        if key is None:
            return None
        return self._names.get(ref)

    def translate(self, schema: Any, where: str, *, inline_top: bool = False) -> Any:
        """Translate one schema; with `inline_top` a top-level reference is expanded in place."""
        out = self._tr(schema, where, 0, (), inline_top)
        self._drain()
        return out

    def deps(self, name: str) -> frozenset[str]:
        """Every type name reachable from type `name` (itself included); asked for once every
        type is translated (the bodies are final)."""
        return reachable(name, self.types, self._refs, self._deps)

    # -- internals ------------------------------------------------------------------------------

    def _drain(self) -> None:
        while self._pending:
            name, ref = self._pending.pop()
            target = self.resolver.pointer(ref, ref)
            made = self._tr(target, ref, 0, (ref,), False)
            self.types[name] = kind_said(made, self._hierarchies.kind_of(ref))

    def _read_only(self, sub: Any, where: str) -> bool:
        """Whether a property is readOnly, said beside it, by the schema its `$ref` names
        (Airflow's `state`, a readOnly DagState) or by a part of its allOf: never sent, so
        never an argument."""
        if not isinstance(sub, dict):
            return False
        if sub.get("readOnly") is True:
            return True
        if isinstance(sub.get("$ref"), str):
            try:
                target = self.resolver.deref(sub, where)
            except SpecRefused:
                return False
            return isinstance(target, dict) and target.get("readOnly") is True
        parts = sub.get("allOf")  # DigitalOcean's `allOf: [{$ref: …}, {readOnly: true}]`
        if isinstance(parts, list):
            return any(
                isinstance(part, dict) and "allOf" not in part and self._read_only(part, where)
                for part in parts
            )
        return False

    def _ref(self, ref: str, where: str, depth: int, stack: tuple[str, ...], inline: bool) -> Any:
        name = self.type_name(ref) if not inline else None
        if name is not None:
            if name not in self.types:
                self.types[name] = {"type": "object"}  # placeholder until drained
                self._pending.append((name, ref))
            return {"$ref": f"#/types/{name}"}
        if ref in stack:
            return {"type": "object", "description": "(recursive: the same shape again)"}
        target = self.resolver.pointer(ref, where)
        return self._tr(target, ref, depth + 1, stack + (ref,), False)

    def _tr(self, s: Any, where: str, depth: int, stack: tuple[str, ...], inline: bool) -> Any:
        self._work += 1
        if self._work > _MAX_WORK:
            raise SpecRefused(
                f"schemas expand past {_MAX_WORK:,} nodes (at {where}); refusing the document"
            )
        if depth > MAX_SCHEMA_DEPTH:
            raise SpecRefused(f"schema at {where} nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(s, bool):
            return s
        if not isinstance(s, dict):
            return {}
        if "$ref" in s:
            ref = s["$ref"]
            if not isinstance(ref, str):
                raise SpecRefused(f"$ref at {where} is not a string")
            kinds = [] if inline else self._hierarchies.subtypes(ref)
            if len(kinds) > 1:  # a value is one of the kinds that extend it, named by its kind
                out = {"oneOf": [self._ref(sub, where, depth, stack, False) for sub, _ in kinds]}
            else:
                out = self._ref(ref, where, depth, stack, inline)
            if s.get("nullable") is True or s.get("x-nullable") is True:
                out = {"anyOf": [out, {"type": "null"}]}
            return out
        if "allOf" in s and isinstance(s["allOf"], list):
            return self._merge_all_of(s, where, depth, stack)
        return self._plain(s, where, depth, stack)

    def _merge_all_of(
        self, s: dict[str, Any], where: str, depth: int, stack: tuple[str, ...]
    ) -> Any:
        merged: dict[str, Any] = {}
        props: dict[str, Any] = {}
        required: list[str] = []
        parts = [
            self._tr(m, f"{where}/allOf/{i}", depth + 1, stack, True)
            for i, m in enumerate(s["allOf"])
        ]
        rest = {k: v for k, v in s.items() if k != "allOf"}
        if rest:
            parts.append(self._plain(rest, where, depth + 1, stack))
        for part in parts:
            if not isinstance(part, dict):
                continue
            for key, value in part.items():
                if key == "properties" and isinstance(value, dict):
                    props.update(narrowed(props, value))
                elif key == "required" and isinstance(value, list):
                    required.extend(r for r in value if r not in required)
                elif key == "description":
                    merged.setdefault("description", value)
                elif key not in merged:
                    merged[key] = value
        if props:
            merged["properties"] = props
            merged.setdefault("type", "object")
        if required:
            # a name only a readOnly property answers is never sent; one no part describes is
            # still required (Codat's bank transaction lines require a `date` no part names)
            gone = frozenset().union(
                *(
                    self._read_only_names(m, f"{where}/allOf/{i}", 0)
                    for i, m in enumerate(s["allOf"])
                ),
                self._read_only_names(rest, where, 0),
            )
            closed = merged.get("additionalProperties") is False
            kept = [
                r
                for r in required
                if r in props
                or (r not in gone and not (closed and not merged.get("patternProperties")))
            ]
            if kept:
                merged["required"] = kept
        return merged

    def _read_only_names(self, member: Any, where: str, depth: int) -> frozenset[str]:
        """The properties an allOf member (through its `$ref`s and own allOf) leaves out as
        readOnly; each reference's answer worked out once."""
        if not isinstance(member, dict) or depth > MAX_SCHEMA_DEPTH:
            return frozenset()
        ref = member.get("$ref")
        if isinstance(ref, str):
            if ref not in self._read_only_of:
                self._read_only_of[ref] = frozenset()  # a reference that comes round adds none
                try:
                    target = self.resolver.deref(member, where)
                except SpecRefused:
                    return frozenset()
                self._read_only_of[ref] = self._read_only_names(target, ref, depth + 1)
            return self._read_only_of[ref]
        out: set[str] = set()
        props = member.get("properties")
        if isinstance(props, dict):
            out.update(str(n) for n, sub in props.items() if self._read_only(sub, where))
        parts = member.get("allOf")
        if isinstance(parts, list):
            for i, part in enumerate(parts):
                out |= self._read_only_names(part, f"{where}/allOf/{i}", depth + 1)
        return frozenset(out)

    def _plain(self, s: dict[str, Any], where: str, depth: int, stack: tuple[str, ...]) -> Any:
        # size: one case per OpenAPI schema keyword translated to JSON Schema
        out: dict[str, Any] = {}
        typ = s.get("type")
        nullable = bool(s.get("nullable") or s.get("x-nullable"))
        if isinstance(typ, str):
            if typ == "file":
                out["type"] = "string"
                out["format"] = "binary"
            elif typ in _JSON_TYPES:
                out["type"] = typ
                if (  # OpenAPI 3.1's file: raw bytes of a media type, not text
                    typ == "string"
                    and isinstance(s.get("contentMediaType"), str)
                    and not s.get("contentEncoding")
                    and "format" not in s
                ):
                    out["format"] = "binary"
        elif isinstance(typ, list):
            kept = [t for t in typ if isinstance(t, str) and t in _JSON_TYPES]
            if kept:
                out["type"] = kept if len(kept) > 1 else kept[0]
        desc = s.get("description") or s.get("title")
        if isinstance(desc, str) and desc.strip():
            out["description"] = short_text(desc)
        for key in _COPY:
            if key in s and key not in out:
                value = s[key]
                if key == "format" and not isinstance(value, str):
                    continue
                if key in ("minimum", "maximum", "multipleOf") and (
                    isinstance(value, bool) or not isinstance(value, (int, float))
                ):
                    continue
                if key in (
                    "minLength",
                    "maxLength",
                    "minItems",
                    "maxItems",
                    "minProperties",
                    "maxProperties",
                ) and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                    continue
                if key == "uniqueItems" and not isinstance(value, bool):
                    continue
                if key == "multipleOf" and value <= 0:
                    continue
                out[key] = value
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            value = s.get(key)
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value is True and bound in out:
                out[key] = out.pop(bound)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = value
        pattern = _as_pattern(s.get("pattern"))
        if pattern is not None and _pattern_ok(pattern):
            out["pattern"] = pattern
        enum = s.get("enum")
        if isinstance(enum, list) and enum:
            values = _enum_of_type(enum, out.get("type"))
            if values:
                if nullable and None not in values:
                    values.append(None)
                out["enum"] = values
        items = s.get("items")
        if isinstance(items, list):
            out["prefixItems"] = [
                self._tr(i, f"{where}/items/{n}", depth + 1, stack, False)
                for n, i in enumerate(items)
            ]
        elif items is not None:
            out["items"] = self._tr(items, f"{where}/items", depth + 1, stack, False)
        elif out.get("type") == "array":
            out["items"] = {}
        _enum_of_items(out, enum)
        if isinstance(s.get("prefixItems"), list):
            out["prefixItems"] = [
                self._tr(i, f"{where}/prefixItems/{n}", depth + 1, stack, False)
                for n, i in enumerate(s["prefixItems"])
            ]
        props = s.get("properties")
        if isinstance(props, dict):
            tprops: dict[str, Any] = {}
            for name, sub in props.items():
                if self._read_only(sub, where):
                    continue
                tprops[str(name)] = self._tr(
                    sub, f"{where}/properties/{name}", depth + 1, stack, False
                )
            out["properties"] = tprops
            if "type" not in out:
                out["type"] = "object"
        req = s.get("required")
        if isinstance(req, list):
            names = [r for r in req if isinstance(r, str)]
            if isinstance(props, dict):
                names = [r for r in names if r in out.get("properties", {}) or r not in props]
                if s.get("additionalProperties") is False and not s.get("patternProperties"):
                    # a required field the object may not have: no value could be valid (a spec
                    # slip, as Jira's screen schemes require `defaultScreen` beside `default`)
                    names = [r for r in names if r in props]
            if names:
                out["required"] = list(dict.fromkeys(names))
        addl = s.get("additionalProperties")
        if addl is False and not props and (s.get("anyOf") or s.get("oneOf")):
            pass  # closed, its fields in its branches (linqr's ContactData): none would be valid
        elif isinstance(addl, bool):
            out["additionalProperties"] = addl
        elif isinstance(addl, dict):
            out["additionalProperties"] = self._tr(
                addl, f"{where}/additionalProperties", depth + 1, stack, False
            )
        pprops = s.get("patternProperties")
        if isinstance(pprops, dict):
            kept_pp = {
                p: self._tr(v, f"{where}/patternProperties", depth + 1, stack, False)
                for p, v in pprops.items()
                if isinstance(p, str) and _pattern_ok(p)
            }
            if kept_pp:
                out["patternProperties"] = kept_pp
        for key in ("oneOf", "anyOf"):
            alts = s.get(key)
            if isinstance(alts, list) and alts:
                branches = [
                    self._tr(a, f"{where}/{key}/{n}", depth + 1, stack, False)
                    for n, a in enumerate(alts)
                ]
                if key == "oneOf" and "anyOf" not in s and never_one(branches, alts, self.resolver):
                    key = "anyOf"  # exactly one can never hold: any one will do
                out[key] = discriminated(branches, s.get("discriminator"), alts, self.resolver)
        if isinstance(s.get("not"), (dict, bool)):
            out["not"] = self._tr(s["not"], f"{where}/not", depth + 1, stack, False)
        if nullable:
            t = out.get("type")
            if isinstance(t, str):
                out["type"] = [t, "null"]
            elif isinstance(t, list):
                if "null" not in t:
                    out["type"] = [*t, "null"]
            elif "oneOf" in out or "anyOf" in out:
                key = "anyOf" if "anyOf" in out else "oneOf"
                if {"type": "null"} not in out[key]:
                    out[key] = [*out[key], {"type": "null"}]
        return out


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _enum_of_items(out: dict[str, Any], enum: Any) -> None:
    """An array whose spec gives it an enum of single values (Swagger 2's converted query lists:
    `type: array, enum: [live, promotions]`, which no list can equal) offers them as its items'
    values, what the spec means."""
    items = out.get("items")
    if out.get("type") != "array" or not isinstance(items, dict) or "enum" in items:
        return
    if not isinstance(enum, list) or not all(isinstance(v, (str, int, float)) for v in enum):
        return
    values = _enum_of_type(enum, items.get("type"))
    if values:
        out["items"] = {**items, "enum": values}


_CODE_NAMED = re.compile(r"(-?\d+) \([^()]*\)$")


def _enum_of_type(values: list[Any], kind: Any) -> list[Any]:
    """An enum's values as values of its schema's one `type`: a spec's `type: string` with
    `enum: [true, false]` (no string is one of them, so no call could be made) offers "true" and
    "false"; a value of no reading of the type is left out, and an enum left with none is
    dropped (the type alone then says what is taken)."""
    if not isinstance(kind, str):
        return list(values)
    out: list[Any] = []
    for v in values:
        if v is None:
            out.append(v)
        elif kind == "string" and isinstance(v, (bool, int, float)):
            out.append(json.dumps(v))
        elif kind == "boolean" and v in ("true", "false"):
            out.append(v == "true")
        elif kind in ("integer", "number") and isinstance(v, str):
            coded = _CODE_NAMED.match(v)  # "1 (Public)": the code, named (visualstudio)
            try:
                number = float(v) if kind == "number" else int(coded[1] if coded else v)
            except ValueError:
                continue
            out.append(number)
        elif _of(kind, v):
            out.append(v)
    unique: list[Any] = []
    for v in out:
        if not any(v == u and type(v) is type(u) for u in unique):
            unique.append(v)
    return unique if any(v is not None for v in unique) else []


def _of(kind: str, value: Any) -> bool:
    return {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "null": value is None,
    }.get(kind, True)
