"""One valid set of arguments per tool schema, the same every run: what the judge sends.

A canonical value is built first (the first enum value, the lowest bound, a fixed example per
format, every top-level property given, nested optional ones to one level), checked by the
schema's own validator; where it fails (a pattern, a oneOf two branches match, unique items),
Hypothesis finds one from `schema_strategy` with its randomness fixed. None where neither can.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, NoSuchExample, Unsatisfiable
from jsonschema import Draft202012Validator

from tests.runtime.schema_strategy import ASCII_TEXT, all_of_merged, from_schema

ANY_TEXT = st.characters(codec="utf-8")

_FORMATS: dict[str, str] = {
    "date": "2024-01-02",
    "date-time": "2024-01-02T03:04:05Z",
    "time": "03:04:05Z",
    "email": "judge@example.com",
    "uuid": "0f8fad5b-d9cb-469f-a165-70867728950e",
    "uri": "https://example.com/judge",
    "url": "https://example.com/judge",
    "uri-reference": "/judge",
    "hostname": "judge.example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "aGVsbG8=",
    "binary": "hello",
}

_FIND = settings(
    derandomize=True,
    database=None,
    max_examples=300,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@cache
def _from_pattern(pattern: str, lo: int, hi: int) -> str | None:
    # printable ASCII first; a pattern that names other characters (a literal newline) from
    # all of them
    for alphabet in (ASCII_TEXT, ANY_TEXT):
        try:
            re.compile(pattern)
            return find(
                st.from_regex(pattern, fullmatch=True, alphabet=alphabet),
                lambda s: lo <= len(s) <= hi,
                settings=_FIND,
            )
        except InvalidArgument:
            continue
        except re.error:
            return None
        except (NoSuchExample, Unsatisfiable):
            return _stretched(pattern, lo, hi, alphabet)
    return None


def _stretched(pattern: str, lo: int, hi: int, alphabet: Any) -> str | None:
    """A short match of `pattern` repeated to `lo` characters, where that still matches (AWS's
    `[0-9a-f]+` of exactly 64: a random match is seldom that long)."""
    try:
        short = find(
            st.from_regex(pattern, fullmatch=True, alphabet=alphabet), bool, settings=_FIND
        )
    except (InvalidArgument, NoSuchExample, Unsatisfiable):
        return None
    text = (short * (lo // len(short) + 1))[: max(lo, len(short))]
    return text if lo <= len(text) <= hi and _matches(pattern, text) else None


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _string(schema: dict[str, Any]) -> str | None:
    lo = int(schema.get("minLength", 0))
    hi = int(schema.get("maxLength", 10**6))
    fmt = schema.get("format")
    if isinstance(schema.get("pattern"), str):
        # a format's stand-in where the pattern admits it (a base64 header: `byte` and the
        # header-value pattern), else one the pattern makes
        known = _FORMATS.get(fmt) if isinstance(fmt, str) else None
        if known is not None and lo <= len(known) <= hi and _matches(schema["pattern"], known):
            return known
        return _from_pattern(schema["pattern"], lo, hi)
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    text = "judge"
    if len(text) < lo:
        text = (text * (lo // len(text) + 1))[:lo]
    return text[: max(hi, 0)]


def _number(schema: dict[str, Any], integer: bool) -> float | int:
    lo = schema.get("minimum")
    hi = schema.get("maximum")
    ex_lo, ex_hi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    step = schema.get("multipleOf")
    value: float = 1 if integer else 1.5
    if isinstance(lo, (int, float)):
        value = max(value, lo)
    if isinstance(ex_lo, (int, float)) and value <= ex_lo:
        value = ex_lo + (1 if integer else 0.5)
    if isinstance(hi, (int, float)):
        value = min(value, hi)
    if isinstance(ex_hi, (int, float)) and value >= ex_hi:
        value = ex_hi - (1 if integer else 0.5)
    if isinstance(step, (int, float)) and step > 0:
        value = math.ceil(value / step) * step
    return int(value) if integer else value


def _beside(rest: dict[str, Any], branch: Any) -> dict[str, Any]:
    """A branch of a oneOf/anyOf read with the schema around it: the properties and required
    names of both (ShipEngine's body is a oneOf beside the `rate_options` it also requires)."""
    if not isinstance(branch, dict):
        return rest
    merged = {**rest, **branch}
    for key in ("properties",):
        if isinstance(rest.get(key), dict) and isinstance(branch.get(key), dict):
            merged[key] = {**rest[key], **branch[key]}
    if isinstance(rest.get("required"), list) and isinstance(branch.get("required"), list):
        merged["required"] = list(dict.fromkeys([*rest["required"], *branch["required"]]))
    return merged


def canonical(schema: Any, depth: int = 0) -> Any:
    # size: one value per JSON Schema keyword family, read in one pass
    if not isinstance(schema, dict) or not schema:
        return "judge"
    props = schema.get("properties")
    if isinstance(props, dict) and {"path", "content_base64"} <= set(props):
        return {"content_base64": "aGVsbG8=", "filename": "judge.txt"}
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return next((v for v in schema["enum"] if v is not None), schema["enum"][0])
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            rest = {k: v for k, v in schema.items() if k != key}
            whole = _validator(schema)
            for sub in schema[key]:
                value = canonical(_beside(rest, sub), depth)
                if whole.is_valid(value):
                    return value
            return canonical(_beside(rest, schema[key][0]), depth)
    if isinstance(schema.get("allOf"), list):
        return canonical(all_of_merged(schema), depth)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ is None:
        typ = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if typ == "string":
        return _string(schema)
    if typ in ("integer", "number"):
        return _number(schema, typ == "integer")
    if typ == "boolean":
        return True
    if typ == "null":
        return None
    if typ == "array":
        count = max(1, int(schema.get("minItems", 0)))
        item = canonical(schema.get("items", {}), depth + 1)
        return [item] * min(count, int(schema.get("maxItems", count)))
    if typ == "object":
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        out = {}
        for name in schema.get("required", []):
            if name in props:
                out[name] = canonical(props[name], depth + 1)
            elif extra is not False:  # required, described by no property (NDHM's consent URL)
                out[name] = canonical(extra, depth + 1) if isinstance(extra, dict) else "judge"
        for name in props if depth < 2 else ():  # an optional one only where its value holds
            if name not in out and isinstance(props[name], dict):
                value = canonical(props[name], depth + 1)
                if _validator(props[name]).is_valid(value):
                    out[name] = value
        names = schema.get("propertyNames")
        wanted = int(schema.get("minProperties") or 0)
        while len(out) < wanted and isinstance(extra, dict):  # a map (AWS's tags): keys of its own
            key = _string(names) if isinstance(names, dict) else None
            key = f"{key or 'judge'}{len(out)}" if key in out or key is None else key
            out[key] = canonical(extra, depth + 1)
        return out
    return "judge"


def valid_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments `schema` accepts, with every top-level property where that is possible."""
    validator = _validator(schema)
    value = canonical(schema)
    if validator.is_valid(value):
        return value  # type: ignore[no-any-return]
    for alphabet in (ASCII_TEXT, ANY_TEXT):
        try:
            found = find(
                from_schema(schema, alphabet).filter(validator.is_valid),
                lambda v: isinstance(v, dict),
                settings=_FIND,
            )
        except InvalidArgument:  # a pattern that names characters outside the alphabet
            continue
        except (NoSuchExample, Unsatisfiable):
            return None
        return found if isinstance(found, dict) else None
    return None
