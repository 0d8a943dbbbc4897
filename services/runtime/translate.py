"""A model's tool call → exactly the HTTP request its operation declares, or a refusal it can act on.

Pure: nothing is sent here. A call missing a required argument, carrying one the operation does
not take, or with a value of the wrong type is refused before a request exists. Path parameters
are encoded as whole segments and can never change the path; the URL is checked against the
skill's hosts and the operation's path prefix after it is built.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from jsonschema.exceptions import ValidationError, best_match

from services.derive.frontmatter import NO_BODY, PATH_TEMPLATE, Declaration
from services.derive.schema import type_label
from services.runtime.skill import Tool

__all__ = [
    "CallRefused",
    "PreparedRequest",
    "build_request",
    "describe_arguments",
    "idempotency_key",
    "static_prefix",
]

# RFC 6570 simple expansion: everything but the unreserved characters is percent-encoded, so a
# comma cannot split a value into a list and a slash, ? or # cannot reach the path or query.
_SEGMENT_SAFE = "-._~"
_QUERY_SAFE = "-._~"
_MAX_MESSAGE = 400


class CallRefused(ValueError):
    """The call was not sent; the message says what to change."""

    def __init__(self, operation: str, reason: str) -> None:
        self.operation = operation
        self.reason = reason
        super().__init__(f"{operation}: {reason}")


@dataclass(frozen=True)
class PreparedRequest:
    """One HTTP request, built and checked, not yet sent (no credential attached)."""

    operation: str
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None

    def as_dict(self, extra_headers: dict[str, str] | None = None) -> dict[str, Any]:
        headers = dict(self.headers) | (extra_headers or {})
        body: Any = None
        if self.body is not None:  # JSON as its value; a form as the text sent
            is_json = "json" in dict(self.headers).get("Content-Type", "application/json")
            body = json.loads(self.body) if is_json else self.body.decode("ascii")
        return {"method": self.method, "url": self.url, "headers": headers, "body": body}


def describe_arguments(tool: Tool) -> str:
    """`a (string, required), b (integer)`: what a model needs to correct a call."""
    props = tool.schema.get("properties", {})
    required = set(tool.declaration.required)
    parts = [
        f"{n} ({type_label(s)}{', required' if n in required else ''})" for n, s in props.items()
    ]
    return ", ".join(parts) if parts else "no arguments"


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    typ = schema.get("type")
    return typ is None or typ == "null" or (isinstance(typ, list) and "null" in typ)


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _check(tool: Tool, args: Any) -> dict[str, Any]:
    op = tool.operation
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise CallRefused(
            op,
            f"arguments must be a JSON object, not {type(args).__name__}; it takes {describe_arguments(tool)}",
        )
    props = tool.schema.get("properties", {})
    required = set(tool.declaration.required)
    # null for an optional argument is "left out" (strict providers make every argument required and nullable)
    args = {
        k: v
        for k, v in args.items()
        if not (v is None and k not in required and not _allows_null(props.get(k)))
    }
    unknown = [k for k in args if k not in props]
    if unknown:
        raise CallRefused(
            op,
            _short(
                f"does not take {', '.join(map(repr, unknown))}; it takes {describe_arguments(tool)}"
            ),
        )
    missing = [r for r in tool.declaration.required if r not in args]
    if missing:
        need = ", ".join(f"{m} ({type_label(props.get(m))})" for m in missing)
        raise CallRefused(
            op,
            _short(
                f"missing required argument{'s' if len(missing) > 1 else ''} {need}; nothing was sent"
            ),
        )
    error: ValidationError | None = best_match(tool.validator.iter_errors(args))
    if error is not None:
        where = "".join(
            f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
            for i, p in enumerate(error.absolute_path)
        )
        raise CallRefused(
            op, _short(f"argument {where or '(all)'}: {error.message}; nothing was sent")
        )
    return args


def _scalar(value: Any) -> str:
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


def _segment(op: str, name: str, value: Any) -> str:
    if isinstance(value, (list, dict)):
        raise CallRefused(
            op,
            f"argument {name} is a path segment and must be a single value, not a {type(value).__name__}",
        )
    text = _scalar(value)
    if text in ("", ".", ".."):
        raise CallRefused(op, f"argument {name} is a path segment and cannot be {text!r}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        raise CallRefused(
            op, f"argument {name} is a path segment and cannot contain control characters"
        )
    try:
        return quote(text, safe=_SEGMENT_SAFE, errors="strict")
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
    return [f"{_q(op, key)}={_q(op, _scalar(value))}"]


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
            joined = _DELIMITERS[style].join(_q(op, _scalar(v)) for v in value)
            return [f"{key}={joined}"]
        return [f"{key}={_q(op, _scalar(v))}" for v in value]
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items() if v is not None]
        if style in _DELIMITERS:  # explode false: name=k1,v1,k2,v2
            flat = [_q(op, s) for k, v in items for s in (k, _scalar(v))]
            return [f"{key}={_DELIMITERS[style].join(flat)}"]
        # OpenAPI's default for an object: style form, exploded into its properties
        return [f"{_q(op, k)}={_q(op, _scalar(v))}" for k, v in items]
    return [f"{key}={_q(op, _scalar(value))}"]


def _encode_query(op: str, decl: Declaration, args: dict[str, Any]) -> str:
    return "&".join(
        pair
        for name in decl.query
        if name in args
        for pair in styled_pairs(op, decl.wire_name(name), args[name], decl.style_of(name))
    )


def static_prefix(url_template: str) -> str:
    """The part of the URL's path before its first parameter: a built URL always starts with it."""
    path = urlsplit(url_template).path
    cut = path.find("{")
    return path if cut < 0 else path[:cut]


def _assert_contained(op: str, decl: Declaration, url: str, hosts: frozenset[str]) -> None:
    built = urlsplit(url)
    template = urlsplit(decl.url)
    if (
        built.scheme != template.scheme
        or built.netloc.lower() != template.netloc.lower()
        or built.netloc.lower() not in hosts
    ):
        raise CallRefused(
            op, f"the request would go to {built.netloc}, which is not one of the skill's hosts"
        )
    if not built.path.startswith(static_prefix(decl.url)) or built.path.count(
        "/"
    ) != template.path.count("/"):
        raise CallRefused(op, "the request's path would leave the operation's path")


def idempotency_key(decl: Declaration, args: dict[str, Any]) -> str | None:
    """sha256 over the method, the URL template and the identity fields' values, or None without identity."""
    if not decl.identity:
        return None
    values = {name: args.get(name) for name in decl.identity}
    canonical = json.dumps(
        [decl.method, decl.url, values], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _header_value(op: str, name: str, value: Any) -> str:
    """An argument as a header's value, OpenAPI's `simple` style: a list joined by commas, an
    object as key,value pairs; one line of visible text, never a way to add another header."""
    if isinstance(value, list):
        text = ",".join(_scalar(v) for v in value)
    elif isinstance(value, dict):
        text = ",".join(s for k, v in value.items() for s in (str(k), _scalar(v)))
    else:
        text = _scalar(value)
    if any(c in text for c in "\r\n\x00") or any(ord(c) > 0xFF for c in text):
        raise CallRefused(
            op,
            f"argument {name} is a header and must be one line of Latin-1 text (no line breaks)",
        )
    return text


def _json_body(op: str, value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
    except (ValueError, UnicodeEncodeError) as exc:
        raise CallRefused(op, f"the body cannot be written as JSON: {exc}") from None


def build_request(tool: Tool, args: Any, hosts: frozenset[str]) -> PreparedRequest:
    """Translate a call into its request, or raise CallRefused before anything exists to send."""
    decl = tool.declaration
    op = tool.operation
    if not decl.origin:
        raise CallRefused(
            op,
            f"the skill declares no host: its URL is the path {decl.url}; give it a base URL (skillpress call --base-url, or derive with --base-url)",
        )
    args = {
        **_check(tool, args),
        **decl.fixed_values,
    }  # what the skill fixes is sent whatever the model says
    head = urlsplit(decl.url)
    path = PATH_TEMPLATE.sub(lambda m: _segment(op, m.group(1), args[m.group(1)]), head.path)
    url = f"{head.scheme}://{head.netloc}{path}"
    query = _encode_query(op, decl, args)
    if query:
        url += "?" + query
    _assert_contained(op, decl, url, hosts)
    headers: list[tuple[str, str]] = []
    body: bytes | None = None
    if decl.method not in NO_BODY and decl.body:
        fields = {name: args[name] for name in decl.body if name in args}
        if decl.is_form:
            if decl.body_arg is not None:  # the form's fields, under their own argument
                whole = fields.get(decl.body_arg)
                fields = dict(whole) if isinstance(whole, dict) else {}
            if fields or decl.method in ("POST", "PUT", "PATCH"):
                body = "&".join(
                    pair
                    for name, value in fields.items()
                    for pair in styled_pairs(op, name, value, decl.style_of(name))
                ).encode("ascii")
                headers.append(("Content-Type", decl.content_type))
        elif decl.body_arg is not None:
            if decl.body_arg in fields:
                body = _json_body(op, fields[decl.body_arg])
                headers.append(("Content-Type", decl.content_type))
        elif fields or decl.method in ("POST", "PUT", "PATCH"):
            body = _json_body(op, fields)
            headers.append(("Content-Type", decl.content_type))
    headers.extend(decl.headers)
    for name in decl.header:
        if name in args and args[name] is not None:
            headers.append((decl.wire_name(name), _header_value(op, name, args[name])))
    key = idempotency_key(decl, args)
    if key:
        headers.append(("Idempotency-Key", key))
    return PreparedRequest(op, decl.method, url, tuple(headers), body)
