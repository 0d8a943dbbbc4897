"""Hypothesis strategies for the values a JSON Schema (2020-12, as our tool schemas are) admits.

hypothesis-jsonschema reaches into Hypothesis internals that current releases renamed, so the
suite carries this small generator instead. It covers what tool schemas use (types and type
lists, enum/const, formats, bounds, patterns, arrays, objects, anyOf/oneOf/allOf); every value
it yields is then checked by the schema's own validator, so a gap here can only narrow the
values tried, never let an invalid one through.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from hypothesis import strategies as st
from jsonschema import Draft202012Validator

SAFE_TEXT = st.characters(codec="utf-8", exclude_categories=("Cs",))
ASCII_TEXT = st.characters(min_codepoint=0x20, max_codepoint=0x7E)

_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "date": st.dates().map(lambda d: d.isoformat()),
    "date-time": st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)).map(
        lambda d: d.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    ),
    "time": st.times().map(lambda t: t.replace(microsecond=0).isoformat() + "Z"),
    "email": st.from_regex(r"[a-z]{1,8}@[a-z]{1,8}\.(com|org|test)", fullmatch=True),
    "uuid": st.uuids().map(str),
    "uri": st.from_regex(r"https://[a-z]{1,10}\.test/[a-z0-9]{0,8}", fullmatch=True),
    "url": st.from_regex(r"https://[a-z]{1,10}\.test/[a-z0-9]{0,8}", fullmatch=True),
    "uri-reference": st.from_regex(r"/[a-z0-9]{0,8}", fullmatch=True),
    "hostname": st.from_regex(r"[a-z]{1,10}\.test", fullmatch=True),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
    "byte": st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()),
}


def _string(schema: dict[str, Any], alphabet: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    lo = int(schema.get("minLength", 0))
    hi = int(schema.get("maxLength", 10**6))
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        base = _FORMATS[fmt]
    elif isinstance(schema.get("pattern"), str):
        try:
            re.compile(schema["pattern"])
            base = st.from_regex(schema["pattern"], fullmatch=True, alphabet=alphabet)
        except re.error:
            base = st.text(alphabet, min_size=lo, max_size=hi)
    else:
        return st.text(alphabet, min_size=lo, max_size=min(hi, lo + 16))
    return base.filter(lambda s: lo <= len(s) <= hi)


def _number(schema: dict[str, Any], integer: bool) -> st.SearchStrategy[Any]:
    lo = schema.get("minimum")
    hi = schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), (int, float)):
        lo = schema["exclusiveMinimum"] + (1 if integer else 1e-6)
    if isinstance(schema.get("exclusiveMaximum"), (int, float)):
        hi = schema["exclusiveMaximum"] - (1 if integer else 1e-6)
    if integer:
        if schema.get("format") == "int32":
            lo = max(lo, -(2**31)) if lo is not None else -(2**31)
            hi = min(hi, 2**31 - 1) if hi is not None else 2**31 - 1
        strat: st.SearchStrategy[Any] = st.integers(
            min_value=int(lo) if lo is not None else -(10**6),
            max_value=int(hi) if hi is not None else 10**6,
        )
    else:
        strat = st.floats(
            min_value=lo if lo is not None else -1e6,
            max_value=hi if hi is not None else 1e6,
            allow_nan=False,
            allow_infinity=False,
        )
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and step > 0:
        strat = strat.map(lambda v: type(step)(round(v / step) * step))
    return strat


def all_of_merged(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `allOf` branches merged into it (their properties and required
    together): a schema to make values of, checked by the whole one afterwards."""
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    for sub in schema["allOf"]:
        if isinstance(sub, dict):
            props = {**merged.get("properties", {}), **sub.get("properties", {})}
            required = list(dict.fromkeys(merged.get("required", []) + sub.get("required", [])))
            merged = {**merged, **sub, "properties": props, "required": required}
    return merged


def from_schema(
    schema: Any, alphabet: st.SearchStrategy[str] = SAFE_TEXT, depth: int = 0
) -> st.SearchStrategy[Any]:
    """Values of `schema` (not yet validated: use `valid_values` for the checked stream)."""
    if schema is True or schema is None or schema == {}:
        return st.one_of(
            st.none(), st.booleans(), st.integers(-100, 100), st.text(alphabet, max_size=8)
        )
    if not isinstance(schema, dict):
        return st.nothing()
    props = schema.get("properties")
    if isinstance(props, dict) and {"path", "content_base64"} <= set(props):
        # a file argument, as a model with no file system of the server's gives it: its content
        return st.fixed_dictionaries(
            {
                "content_base64": st.binary(min_size=1, max_size=24).map(
                    lambda b: base64.b64encode(b).decode()
                )
            },
            optional={"filename": st.from_regex(r"[a-z]{1,8}\.(txt|bin|png)", fullmatch=True)},
        )
    if schema.get("contentEncoding") == "base64" and schema.get("type") == "string":
        return st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode())
    if "const" in schema:
        return st.just(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            rest = {k: v for k, v in schema.items() if k != key}
            return st.one_of(
                [
                    from_schema({**rest, **sub} if isinstance(sub, dict) else sub, alphabet, depth)
                    for sub in schema[key]
                ]
            )
    if isinstance(schema.get("allOf"), list):
        return from_schema(all_of_merged(schema), alphabet, depth)
    typ = schema.get("type")
    if isinstance(typ, list):
        return st.one_of([from_schema({**schema, "type": t}, alphabet, depth) for t in typ])
    if typ is None:
        typ = "object" if "properties" in schema else "array" if "items" in schema else None
        if typ is None:
            return from_schema({}, alphabet, depth)
    if typ == "string":
        return _string(schema, alphabet)
    if typ in ("integer", "number"):
        return _number(schema, typ == "integer")
    if typ == "boolean":
        return st.booleans()
    if typ == "null":
        return st.none()
    if typ == "array":
        lo = int(schema.get("minItems", 0))
        hi = min(int(schema.get("maxItems", lo + 3)), lo + 3)
        items = from_schema(schema.get("items", {}), alphabet, depth + 1)
        return st.lists(
            items,
            min_size=lo,
            max_size=hi,
            unique_by=(lambda v: repr(v)) if schema.get("uniqueItems") else None,
        )
    if typ == "object":
        props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        required = [r for r in schema.get("required", []) if r in props]
        optional = [p for p in props if p not in required] if depth < 4 else []
        fixed = st.fixed_dictionaries(
            {name: from_schema(props[name], alphabet, depth + 1) for name in required},
            optional={name: from_schema(props[name], alphabet, depth + 1) for name in optional},
        )
        return fixed
    return st.nothing()


def valid_values(
    schema: dict[str, Any], alphabet: st.SearchStrategy[str] = SAFE_TEXT
) -> st.SearchStrategy[Any]:
    """Values of `schema` that its validator (with format checks) accepts."""
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return from_schema(schema, alphabet).filter(validator.is_valid)
