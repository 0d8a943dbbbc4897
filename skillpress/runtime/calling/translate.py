"""A model's tool call → exactly the HTTP request its operation declares, or a refusal it can act on.

Pure: nothing is sent here. A call missing a required argument, carrying one the operation does
not take, or with a value of the wrong type is refused before a request exists. Path parameters
are encoded as whole segments and can never change the path; the URL is checked against the
skill's hosts and the operation's path prefix after it is built.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

from jsonschema.exceptions import ValidationError, best_match

from skillpress.format.declaration import (
    HEADER_TEXT,
    NO_BODY,
    PATH_STYLES,
    PATH_TEMPLATE,
    Declaration,
)
from skillpress.format.type_refs import type_label
from skillpress.runtime.calling.bodies import request_body
from skillpress.runtime.calling.request import CallRefused, FileReader, PreparedRequest
from skillpress.runtime.calling.wire import cookie_value, header_value, path_segment, styled_pairs
from skillpress.runtime.package.model import Tool

__all__ = [
    "build_request",
    "describe_arguments",
    "idempotency_key",
    "static_prefix",
]

_MAX_MESSAGE = 400


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
        lambda m: path_segment(
            op, m.group(1), args[m.group(1)], path_styles.get(m.group(1), "simple")
        ),
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
        body, content_type, shown = request_body(op, decl, fields, files)
        if content_type is not None:
            headers.append(("Content-Type", content_type))
    headers.extend(decl.headers)
    for name in decl.header:
        if name in args and args[name] is not None:
            headers.append((decl.wire_name(name), header_value(op, name, args[name])))
    cookies = [
        f"{decl.wire_name(name)}={cookie_value(op, name, args[name])}"
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
