"""An argument's value as the wire writes it where its operation puts it: a whole path segment
(RFC 6570: a value can never change the path), a query pair in its style, a header or a cookie
value."""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import quote

from skillpress.format.declaration import (
    HEADER_TEXT,
)
from skillpress.runtime.calling.request import CallRefused

# RFC 6570 simple expansion: everything but the unreserved characters is percent-encoded, so a
# comma cannot split a value into a list and a slash, ? or # cannot reach the path or query.
_SEGMENT_SAFE = "-._~"
_QUERY_SAFE = "-._~"


def scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and not math.isinf(value):
        return str(int(value)) if abs(value) < 1e16 else json.dumps(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _segment_value(op: str, name: str, value: Any, alone: bool) -> str:
    """One value of a path parameter, percent-encoded (a comma or a dot in it too)."""
    if isinstance(value, (list, dict)):
        raise CallRefused(
            op,
            f"argument {name} is a path segment and must be a single value, not a {type(value).__name__}",
        )
    text = scalar_text(value)
    if text == "" or (alone and text in (".", "..")):
        raise CallRefused(op, f"argument {name} is a path segment and cannot be {text!r}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        raise CallRefused(
            op, f"argument {name} is a path segment and cannot contain control characters"
        )
    try:
        return quote(text, safe=_SEGMENT_SAFE, errors="strict")
    except UnicodeEncodeError:
        raise CallRefused(op, f"argument {name} is not valid Unicode text") from None


def path_segment(op: str, name: str, value: Any, style: str = "simple") -> str:
    """A path parameter as its style writes it (frontmatter.PATH_STYLES): the value, a list's
    values joined by commas; `.` before it (label); `;name=` before it (matrix)."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise CallRefused(op, f"argument {name} is a path segment and cannot be an empty list")
    alone = style == "simple" and len(values) == 1
    each = [_segment_value(op, name, v, alone) for v in values]
    if style == "label":
        return "." + ",".join(each)
    if style == "label_explode":
        return "." + ".".join(each)
    key = quote(name, safe=_SEGMENT_SAFE)
    if style == "matrix":
        return f";{key}=" + ",".join(each)
    if style == "matrix_explode":
        return "".join(f";{key}={v}" for v in each)
    return ",".join(each)


def same_name(name: str) -> str:
    return name


def cookie_value(op: str, name: str, value: Any) -> str:
    """An argument as a cookie's value: percent-encoded (no `;`, `,`, space or quote is left
    to end it early), a list's values joined by commas (OpenAPI's cookie style, not exploded)."""
    values = value if isinstance(value, list) else [value]
    try:
        return ",".join(quote(scalar_text(v), safe="-._~!#$&'()*+/:<=>?@[]^`{|}") for v in values)
    except UnicodeEncodeError:
        raise CallRefused(op, f"argument {name} is not valid Unicode text") from None


_DELIMITERS = {"csv": ",", "ssv": "%20", "tsv": "%09", "pipes": "%7C"}


def _q(op: str, text: str) -> str:
    try:
        return quote(text, safe=_QUERY_SAFE)
    except UnicodeEncodeError:
        raise CallRefused(op, "an argument is not valid Unicode text") from None


def _deep(op: str, key: str, value: Any) -> list[str]:
    """`name[key]=value`, nested objects and lists (`name[0]=value`) in brackets."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _deep(op, f"{key}[{k}]", v)]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _deep(op, f"{key}[{i}]", v)]
    if value is None:
        return []
    return [f"{_q(op, key)}={_q(op, scalar_text(value))}"]


def styled_pairs(op: str, name: str, value: Any, style: str) -> list[str]:
    """One argument as encoded `key=value` pairs of a query string or a form body, written as its
    style says (OpenAPI style/explode, Swagger 2.0 collectionFormat; frontmatter.STYLES)."""
    if value is None:
        return []
    if style == "deepObject" and isinstance(value, (dict, list)):
        return _deep(op, name, value)
    key = _q(op, name)
    if style == "json":  # the whole value as JSON text, under its own name
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return [f"{key}={_q(op, text)}"]
    if isinstance(value, list):
        if style in _DELIMITERS:
            joined = _DELIMITERS[style].join(_q(op, scalar_text(v)) for v in value)
            return [f"{key}={joined}"]
        return [f"{key}={_q(op, scalar_text(v))}" for v in value]
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items() if v is not None]
        if style in _DELIMITERS:  # explode false: name=k1,v1,k2,v2
            flat = [_q(op, s) for k, v in items for s in (k, scalar_text(v))]
            return [f"{key}={_DELIMITERS[style].join(flat)}"]
        # OpenAPI's default for an object: style form, exploded into its properties
        return [f"{_q(op, k)}={_q(op, scalar_text(v))}" for k, v in items]
    return [f"{key}={_q(op, scalar_text(value))}"]


def header_value(op: str, name: str, value: Any) -> str:
    """An argument as a header's value, OpenAPI's `simple` style: a list joined by commas, an
    object as key,value pairs; one line of visible text, never a way to add another header."""
    if isinstance(value, list):
        text = ",".join(scalar_text(v) for v in value)
    elif isinstance(value, dict):
        text = ",".join(s for k, v in value.items() for s in (str(k), scalar_text(v)))
    else:
        text = scalar_text(value)
    if not HEADER_TEXT.match(text):
        raise CallRefused(
            op,
            f"argument {name} is a header and must be one line of Latin-1 text (no line breaks"
            " or control characters)",
        )
    sent = text.strip(" \t")  # a field value's surrounding blanks are not part of it (RFC 9110)
    if text and not sent:
        raise CallRefused(op, f"argument {name} is a header and cannot be only blanks")
    return sent
