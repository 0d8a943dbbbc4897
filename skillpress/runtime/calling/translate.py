"""A model's tool call → exactly the HTTP request its operation declares, or a refusal it can act on.

Pure: nothing is sent here. A call missing a required argument, carrying one the operation does
not take, or with a value of the wrong type is refused before a request exists. Path parameters
are encoded as whole segments and can never change the path; the URL is checked against the
skill's hosts and the operation's path prefix after it is built.
"""
# size: a tool call to exactly one request: every location and style of an argument in one place

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from jsonschema.exceptions import ValidationError, best_match

from skillpress.errors import Refused
from skillpress.format.declaration import (
    HEADER_TEXT,
    NO_BODY,
    PATH_STYLES,
    PATH_TEMPLATE,
    Declaration,
)
from skillpress.format.type_refs import type_label
from skillpress.runtime.package.model import Tool

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


class CallRefused(ValueError, Refused):
    """The call was not sent; the message says what to change."""

    problem = "call-refused"

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
    # how a body that is not text is shown (a multipart body's parts, a file's size): never sent
    shown: Any = None

    def as_dict(self, extra_headers: dict[str, str] | None = None) -> dict[str, Any]:
        headers = dict(self.headers) | (extra_headers or {})
        body: Any = None
        if self.shown is not None:
            body = self.shown
        elif self.body is not None:  # JSON as its value; a form as the text sent
            is_json = "json" in dict(self.headers).get("Content-Type", "application/json")
            body = json.loads(self.body) if is_json else self.body.decode("utf-8", "replace")
        return {"method": self.method, "url": self.url, "headers": headers, "body": body}


# reads a local file a call names: (its bytes, its file name), or raises CallRefused's reason as
# ValueError; None where no local file may be read (then only `content_base64` is taken)
FileReader = Callable[[str], tuple[bytes, str]]


@dataclass(frozen=True)
class _File:
    data: bytes
    filename: str
    content_type: str

    def shown(self) -> dict[str, Any]:
        return {"file": self.filename, "bytes": len(self.data), "content_type": self.content_type}


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
    checked: dict[str, Any] = args
    return checked


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


def _segment_value(op: str, name: str, value: Any, alone: bool) -> str:
    """One value of a path parameter, percent-encoded (a comma or a dot in it too)."""
    if isinstance(value, (list, dict)):
        raise CallRefused(
            op,
            f"argument {name} is a path segment and must be a single value, not a {type(value).__name__}",
        )
    text = _scalar(value)
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


def _segment(op: str, name: str, value: Any, style: str = "simple") -> str:
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


def _same(name: str) -> str:
    return name


def _cookie_value(op: str, name: str, value: Any) -> str:
    """An argument as a cookie's value: percent-encoded (no `;`, `,`, space or quote is left
    to end it early), a list's values joined by commas (OpenAPI's cookie style, not exploded)."""
    values = value if isinstance(value, list) else [value]
    try:
        return ",".join(quote(_scalar(v), safe="-._~!#$&'()*+/:<=>?@[]^`{|}") for v in values)
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


def _json_body(op: str, value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
    except (ValueError, UnicodeEncodeError) as exc:
        raise CallRefused(op, f"the body cannot be written as JSON: {exc}") from None


def _file(op: str, name: str, value: Any, reader: FileReader | None) -> _File:
    """A file argument's bytes: the content given (base64), or the local file it names."""
    if not isinstance(value, dict):
        raise CallRefused(op, f"argument {name} is a file: give {{path}} or {{content_base64}}")
    given = [k for k in ("path", "content_base64") if k in value]
    if len(given) != 1:
        raise CallRefused(op, f"argument {name}: give exactly one of path or content_base64")
    if "content_base64" in value:
        try:
            data = base64.b64decode(str(value["content_base64"]), validate=True)
        except (binascii.Error, ValueError):
            raise CallRefused(op, f"argument {name}: content_base64 is not base64") from None
        filename = str(value.get("filename") or name)
    else:
        if reader is None:
            raise CallRefused(
                op,
                f"argument {name}: no local file may be read here; give content_base64 instead",
            )
        try:
            data, own = reader(str(value["path"]))
        except ValueError as exc:
            raise CallRefused(op, f"argument {name}: {exc}") from None
        filename = str(value.get("filename") or own)
    content_type = str(
        value.get("content_type") or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    )
    if any(c in filename + content_type for c in "\r\n\x00"):
        raise CallRefused(op, f"argument {name}: filename and content_type are one line each")
    return _File(data, filename, content_type)


def _part_name(text: str) -> str:
    """A name in a Content-Disposition header, escaped as HTML's form encoding does."""
    return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _multipart(
    op: str, decl: Declaration, fields: dict[str, Any], reader: FileReader | None
) -> tuple[bytes, str, dict[str, Any]]:
    """A multipart/form-data body: (its bytes, its Content-Type, the parts as shown). The boundary
    is made from the content, so the same call is the same bytes."""
    parts: list[tuple[bytes, bytes]] = []  # (the part's headers, its content)
    shown: dict[str, Any] = {}
    for name, value in fields.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if item is None:  # no value: no part, as a form body leaves the pair out
                continue
            disposition = f'form-data; name="{_part_name(decl.wire_name(name))}"'
            if name in decl.files:
                got = _file(op, name, item, reader)
                head = (
                    f"Content-Disposition: {disposition};"
                    f' filename="{_part_name(got.filename)}"\r\n'
                    f"Content-Type: {got.content_type}\r\n"
                )
                parts.append((head.encode("utf-8"), got.data))
                shown.setdefault(name, []).append(got.shown())
            elif isinstance(item, (dict, list)):
                text = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
                head = f"Content-Disposition: {disposition}\r\nContent-Type: application/json\r\n"
                parts.append((head.encode("utf-8"), text.encode("utf-8")))
                shown.setdefault(name, []).append(item)
            else:
                parts.append(
                    (f"Content-Disposition: {disposition}\r\n".encode(), _scalar(item).encode())
                )
                shown.setdefault(name, []).append(item)
    digest = hashlib.sha256(b"".join(h + c for h, c in parts)).hexdigest()
    boundary = f"skillpress-{digest[:32]}"
    while any(boundary.encode() in c for _, c in parts):
        digest = hashlib.sha256(digest.encode()).hexdigest()
        boundary = f"skillpress-{digest[:32]}"
    body = b"".join(
        b"--" + boundary.encode() + b"\r\n" + head + b"\r\n" + content + b"\r\n"
        for head, content in parts
    )
    body += b"--" + boundary.encode() + b"--\r\n"
    flat = {
        k: v[0] if len(v) == 1 and not isinstance(fields[k], list) else v for k, v in shown.items()
    }
    return body, f"multipart/form-data; boundary={boundary}", flat


def _body(
    op: str, decl: Declaration, fields: dict[str, Any], files: FileReader | None
) -> tuple[bytes | None, str | None, Any]:
    """The request's body from the arguments that go in it: (its bytes, its Content-Type, what
    a dry run shows of it); none when nothing is sent."""
    if decl.is_multipart:
        return _multipart(op, decl, fields, files)
    if not decl.is_form and not decl.is_json:  # a raw body: a file, or text
        whole = fields.get(decl.body_arg or "")
        if whole is None:
            return None, None, None
        if decl.body_arg in decl.files:
            got = _file(op, str(decl.body_arg), whole, files)
            return got.data, decl.content_type, got.shown()
        return _scalar(whole).encode("utf-8"), decl.content_type, None
    if decl.is_form:
        wire: Callable[[str], str] = decl.wire_name
        if decl.body_arg is not None:  # the form's fields, under their own argument
            whole = fields.get(decl.body_arg)
            fields = dict(whole) if isinstance(whole, dict) else {}
            wire = _same  # its fields' own names
        if not fields and decl.method not in ("POST", "PUT", "PATCH"):
            return None, None, None
        form = "&".join(
            pair
            for name, value in fields.items()
            for pair in styled_pairs(op, wire(name), value, decl.style_of(name))
        )
        return form.encode("ascii"), decl.content_type, None
    if decl.body_arg is not None:
        if decl.body_arg not in fields:
            return None, None, None
        return _json_body(op, fields[decl.body_arg]), decl.content_type, None
    if fields or decl.method in ("POST", "PUT", "PATCH"):
        wired = {decl.wire_name(k): v for k, v in fields.items()}
        return _json_body(op, wired), decl.content_type, None
    return None, None, None


def build_request(
    tool: Tool, args: Any, hosts: frozenset[str], files: FileReader | None = None
) -> PreparedRequest:
    """Translate a call into its request, or raise CallRefused before anything exists to send.
    `files` reads a local file a file argument names (None: only base64 content is taken)."""
    decl = tool.declaration
    op = tool.operation
    if not decl.origin:
        raise CallRefused(
            op,
            f"the skill declares no host: its URL is the path {decl.url}, and a call cannot"
            " name one; whoever serves or calls this skill gives it a base URL (--base-url)",
        )
    args, given_key = contract_args(tool, args)
    args = {
        **_check(tool, args),
        **decl.fixed_values,
    }  # what the skill fixes is sent whatever the model says
    head = urlsplit(decl.url)
    path_styles = {k: v for k, v in decl.styles if v in PATH_STYLES}  # (a form field's own)
    path = PATH_TEMPLATE.sub(
        lambda m: _segment(op, m.group(1), args[m.group(1)], path_styles.get(m.group(1), "simple")),
        head.path,
    )
    if any(seg in (".", "..") for seg in path.split("/")):  # a label's `.` before a `.`
        raise CallRefused(op, "the arguments would make a path segment of dots only")
    url = f"{head.scheme}://{head.netloc}{path}"
    query = _encode_query(op, decl, args)
    if query:
        url += "?" + query
    _assert_contained(op, decl, url, hosts)
    headers: list[tuple[str, str]] = []
    body: bytes | None = None
    shown: Any = None
    if decl.method not in NO_BODY and decl.body:
        fields = {name: args[name] for name in decl.body if name in args}
        body, content_type, shown = _body(op, decl, fields, files)
        if content_type is not None:
            headers.append(("Content-Type", content_type))
    headers.extend(decl.headers)
    for name in decl.header:
        if name in args and args[name] is not None:
            headers.append((decl.wire_name(name), _header_value(op, name, args[name])))
    cookies = [
        f"{decl.wire_name(name)}={_cookie_value(op, name, args[name])}"
        for name in decl.cookie
        if name in args and args[name] is not None
    ]
    if cookies:
        headers.append(("Cookie", "; ".join(cookies)))
    key = given_key or idempotency_key(decl, args)
    if key:
        headers.append(("Idempotency-Key", key))
    return PreparedRequest(op, decl.method, url, tuple(headers), body, shown)


# what an exported tool contract (tools.json) adds to a tool's arguments: an agent elsewhere
# sends them, and a host that calls through this runtime passes them on as they are
CONTRACT_ARGS = ("user_confirmed", "idempotency_key")


def contract_args(tool: Tool, args: Any) -> tuple[Any, str | None]:
    """The arguments without the contract's own (`user_confirmed`, `idempotency_key`, where
    the operation has no argument of that name), and the idempotency key given: refused when
    `user_confirmed` is not true, or a key is given to an operation without identity fields."""
    if not isinstance(args, dict):
        return args, None
    op = tool.operation
    props = tool.schema.get("properties", {})
    rest = dict(args)
    if "user_confirmed" not in props and (
        ("user_confirmed" in rest and rest.pop("user_confirmed") is not True)
        or ("user_confirmed" not in args and tool.confirm)
    ):
        # absent is refused like false where the contract asks for it: a write is never sent
        # on a model's say-so
        raise CallRefused(
            op, "user_confirmed must be true: set it only after the user confirmed this call"
        )
    key: str | None = None
    if "idempotency_key" in rest and "idempotency_key" not in props:
        given = rest.pop("idempotency_key")
        if not tool.declaration.identity:
            raise CallRefused(
                op, "takes no idempotency_key: it has no identity fields, so it is never keyed"
            )
        if (
            not isinstance(given, str)
            or not given.strip()
            or len(given) > 255
            or not HEADER_TEXT.match(given)
        ):
            raise CallRefused(
                op, "idempotency_key must be one line of visible text, at most 255 characters"
            )
        key = given.strip()
    return rest, key
