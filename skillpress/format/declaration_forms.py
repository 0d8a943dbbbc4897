"""The forms an operation block's arguments are written in, each read and checked beside its
key: one JSON Schema (`schema`) or the flat lists a person writes (`body`, `query`, …), the
paging it declares, the files it sends, the names it sends its arguments under, and how each
argument is written (styles, encodings)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from skillpress.format.declaration import (
    FIELD_NAME,
    FLAT_KEYS,
    FORM_BODY,
    JSON_BODY,
    MEDIA_TYPE,
    MULTIPART_BODY,
    NO_BODY,
    PATH_STYLES,
    STYLES,
    DeclarationError,
)
from skillpress.format.keys import unknown_keys
from skillpress.format.paging import KINDS as PAGING_KINDS
from skillpress.format.paging import Paging


def _names(file: str, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise DeclarationError(
            file, where, f"must be a list of field names, not {type(value).__name__}"
        )
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not FIELD_NAME.match(item):
            raise DeclarationError(file, where, f"{item!r} is not a field name")
        if item in out:
            raise DeclarationError(file, where, f"names {item!r} twice")
        out.append(item)
    return tuple(out)


class _Sent(NamedTuple):
    """The arguments' schema and where each argument goes (the rest of the path's own)."""

    schema: dict[str, Any]
    query: tuple[str, ...]
    header: tuple[str, ...]
    cookie: tuple[str, ...]
    body: tuple[str, ...]


def _schema_form(
    file: str, op: dict[str, Any], method: str, path_params: tuple[str, ...], fixed: dict[str, Any]
) -> _Sent:
    # size: the schema form's keys, each checked where it is read
    raw = op["schema"]
    if isinstance(raw, str):
        try:
            schema = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DeclarationError(
                file, "operation.schema", f"is not valid JSON ({exc.msg} at line {exc.lineno})"
            ) from None
    else:
        schema = raw
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise DeclarationError(
            file,
            "operation.schema",
            'must be one JSON Schema object: {"type": "object", "properties": {...}}',
        )
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(isinstance(k, str) for k in props):
        raise DeclarationError(
            file, "operation.schema", "properties must be a mapping of field names to schemas"
        )
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise DeclarationError(file, "operation.schema", "required must be a list of field names")
    for name in required:
        if name not in props:
            raise DeclarationError(
                file, "operation.schema", f"required names {name!r}, which is not in properties"
            )
    for name in fixed:
        if name in props:
            raise DeclarationError(
                file,
                "operation.fixed",
                f"{name!r} is fixed, so it cannot also be an argument in schema.properties",
            )
    for name in path_params:
        if name in fixed:
            continue
        if name not in props:
            raise DeclarationError(
                file,
                "operation.schema",
                f"path parameter {{{name}}} of the URL is not in properties",
            )
        if name not in required:
            raise DeclarationError(
                file, "operation.schema", f"path parameter {name!r} must be required"
            )
        sub = props[name]
        items = sub.get("items") if isinstance(sub, dict) else None
        scalar_items = isinstance(items, dict) and (
            items.get("type") in ("string", "integer", "number", "boolean") or "$ref" in items
        )
        if isinstance(sub, dict) and (
            sub.get("type") == "object" or (sub.get("type") == "array" and not scalar_items)
        ):
            raise DeclarationError(
                file,
                "operation.schema",
                f"path parameter {name!r} must be a string, number or boolean (or a list of them)",
            )
    query = _names(file, "operation.query", op.get("query"))
    for name in query:
        if name in path_params:
            raise DeclarationError(
                file, "operation.query", f"{name!r} is a path parameter of the URL"
            )
        if name not in props and name not in fixed:
            raise DeclarationError(
                file,
                "operation.query",
                f"names {name!r}, which is not sent: it is not in schema.properties",
            )
    header = _names(file, "operation.header", op.get("header"))
    for name in header:
        if name in path_params or name in query:
            where = "a path parameter of the URL" if name in path_params else "also in `query`"
            raise DeclarationError(file, "operation.header", f"{name!r} is {where}")
        if name not in props and name not in fixed:
            raise DeclarationError(
                file,
                "operation.header",
                f"names {name!r}, which is not sent: it is not in schema.properties",
            )
    cookie = _names(file, "operation.cookie", op.get("cookie"))
    for name in cookie:
        if name in path_params or name in query or name in header:
            where = "a path parameter of the URL" if name in path_params else "also elsewhere"
            raise DeclarationError(file, "operation.cookie", f"{name!r} is {where}")
        if name not in props and name not in fixed:
            raise DeclarationError(
                file,
                "operation.cookie",
                f"names {name!r}, which is not sent: it is not in schema.properties",
            )
    outside = (*path_params, *query, *header, *cookie)
    body = tuple(n for n in [*props, *fixed] if n not in outside)
    if method in NO_BODY and body:
        raise DeclarationError(
            file,
            "operation.schema",
            f"a {method} has no body, but {', '.join(map(repr, body))} would be sent as one; list them in `query`",
        )
    return _Sent(schema, query, header, cookie, body)


def _flat_form(
    file: str, op: dict[str, Any], method: str, path_params: tuple[str, ...], fixed: dict[str, Any]
) -> _Sent:
    # size: the flat form's lists, each checked where it is read
    lists = {key: _names(file, f"operation.{key}", op.get(key)) for key in FLAT_KEYS}
    for name in lists["path"]:
        if name not in path_params:
            raise DeclarationError(
                file,
                "operation.path",
                f"path parameter {name!r} is not in the URL; write it as a segment, /{{{name}}}",
            )
    body, query, header = lists["body"], lists["query"], lists["header"]
    cookie = lists["cookie"]
    if method in NO_BODY and body:
        raise DeclarationError(
            file,
            "operation.body",
            f"a {method} has no body; list {', '.join(map(repr, body))} in `query`",
        )
    for key, names, others in (
        ("query", query, body),
        ("header", header, (*body, *query)),
        ("cookie", cookie, (*body, *query, *header)),
    ):
        for name in names:
            if name in others:
                also = "body" if name in body else "query" if name in query else "header"
                raise DeclarationError(
                    file,
                    f"operation.{key}",
                    f"{name!r} is also in `{also}`; a name lives in one place",
                )
    for name in (*body, *query, *header, *cookie):
        if name in path_params:
            where = (
                "operation.body"
                if name in body
                else "operation.query"
                if name in query
                else "operation.header"
                if name in header
                else "operation.cookie"
            )
            raise DeclarationError(file, where, f"{name!r} is a path parameter of the URL")
    sent = set(path_params) | set(body) | set(query) | set(header) | set(cookie)
    for key in ("optional", "integer", "number", "boolean", "list"):
        for name in lists[key]:
            if name not in sent:
                raise DeclarationError(
                    file,
                    f"operation.{key}",
                    f"names {name!r}, which is not sent (not in the URL, `body`, `query`, `header` or `cookie`)",
                )
    for name in lists["optional"]:
        if name in path_params:
            raise DeclarationError(
                file, "operation.optional", f"path parameter {name!r} is always required"
            )
    for key in ("integer", "number", "boolean", "list"):
        for name in lists[key]:
            if name in path_params:
                raise DeclarationError(
                    file, f"operation.{key}", f"path parameter {name!r} is always a string"
                )
    typed = [(k, n) for k in ("integer", "number", "boolean") for n in lists[k]]
    seen: dict[str, str] = {}
    for key, name in typed:
        if name in seen:
            raise DeclarationError(
                file, f"operation.{key}", f"{name!r} is already typed {seen[name]}"
            )
        seen[name] = key
    for name in fixed:
        if name not in sent:
            raise DeclarationError(
                file,
                "operation.fixed",
                f"names {name!r}, which is not sent (not in the URL, `body`, `query`, `header` or `cookie`)",
            )
    props: dict[str, Any] = {}
    for name in (*path_params, *query, *header, *cookie, *body):
        if name in fixed:
            continue
        sub: dict[str, Any] = {"type": seen.get(name, "string")}
        if name in lists["list"]:
            sub = {"type": "array", "items": sub}
        props[name] = sub
    required = [n for n in props if n not in lists["optional"]]
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return _Sent(schema, query, header, cookie, body)


PAGING_KEYS = ("kind", "param", "field", "items", "size", "more", "key", "page", "page_size")


def _paging(file: str, raw: Any, method: str, query: tuple[str, ...]) -> Paging | None:
    """`paging:`, checked: a known kind, arguments the operation sends in its query, and paths
    of names in the answer."""
    if raw is None:
        return None
    where = "operation.paging"
    if not isinstance(raw, dict):
        raise DeclarationError(file, where, "must be a mapping with `kind` and its fields")
    unknown = unknown_keys(raw, PAGING_KEYS)
    if unknown:
        raise DeclarationError(file, where, unknown)
    if method != "GET":
        raise DeclarationError(
            file, where, "only a GET pages: another method's next call is a write"
        )
    kind = raw.get("kind")
    if kind not in PAGING_KINDS:
        raise DeclarationError(
            file, f"{where}.kind", f"{kind!r} is not one of {', '.join(PAGING_KINDS)}"
        )
    needs = {
        "after_last": ("param", "more", "items"),
        "cursor": ("param", "field"),
        "next_url": ("field",),
        "link": (),
        "offset": ("param", "items"),
        "page": ("param", "items"),
    }[kind]
    for key in needs:
        if raw.get(key) is None:
            raise DeclarationError(file, where, f"a {kind} paging needs `{key}`")
    if kind != "offset" and raw.get("page") is not None:
        raise DeclarationError(file, f"{where}.page", "only an offset paging also counts pages")
    for key in ("param", "size", "page", "page_size"):
        value = raw.get(key)
        if value is not None and value not in query:
            raise DeclarationError(
                file, f"{where}.{key}", f"names {value!r}, which is not a query argument"
            )

    def path(key: str, empty: bool) -> tuple[str, ...] | None:
        value = raw.get(key)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or (not value and not empty)
            or len(value) > 8
            or not all(isinstance(v, str) and 0 < len(v) <= 200 for v in value)
        ):
            raise DeclarationError(
                file, f"{where}.{key}", "must be a list of field names (the path in the answer)"
            )
        return tuple(value)

    key = raw.get("key", "id")
    if not isinstance(key, str) or not key:
        raise DeclarationError(file, f"{where}.key", f"{key!r} is not a field name")
    return Paging(
        kind,
        raw.get("param"),
        path("field", False) or (),
        path("items", True),
        raw.get("size"),
        path("more", False) or (),
        key,
        raw.get("page"),
        raw.get("page_size"),
    )


def _is_file_schema(sub: Any) -> bool:
    props = sub.get("properties") if isinstance(sub, dict) else None
    return isinstance(props, dict) and "content_base64" in props and "path" in props


def _files(
    file: str, raw: dict[str, Any], schema: dict[str, Any], body: tuple[str, ...], content: Any
) -> tuple[str, ...]:
    """The arguments whose value is a file: multipart parts, or a raw body, each a FILE_ARGUMENT
    (or a list of them, for a part sent once per file)."""
    names = _names(file, "operation.files", raw.get("files"))
    media = str(content).split(";", 1)[0].strip().lower()
    props = schema.get("properties") or {}
    for name in names:
        if name not in body or name not in props:
            raise DeclarationError(
                file, "operation.files", f"names {name!r}, which is not sent in the body"
            )
        if media in (JSON_BODY, FORM_BODY) or media.endswith("+json"):
            raise DeclarationError(
                file,
                "operation.files",
                f"a {media} body carries no file: send it as {MULTIPART_BODY} or as a raw body",
            )
        sub = props[name]
        items = sub.get("items") if isinstance(sub, dict) and sub.get("type") == "array" else None
        if not (_is_file_schema(sub) or _is_file_schema(items)):
            raise DeclarationError(
                file,
                "operation.files",
                f"{name!r} is a file, so its schema is a file's: path or content_base64",
            )
    return names


def _sent_as(
    file: str, raw: dict[str, Any], query: tuple[str, ...], header: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    """Arguments the API reads under another name (a query parameter named like a path
    parameter, a header or a part whose name no argument can have)."""
    given = raw.get("sent_as", {})
    if not isinstance(given, dict):
        raise DeclarationError(
            file, "operation.sent_as", "must map query arguments to the names sent"
        )
    for arg, name in given.items():
        if arg not in query and arg not in header:
            raise DeclarationError(
                file,
                "operation.sent_as",
                f"names {arg!r}, which is not a query, header, cookie or body argument",
            )
        if (
            not isinstance(name, str)
            or not name
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name)
        ):
            raise DeclarationError(file, "operation.sent_as", f"{name!r} is not a parameter name")
    return tuple(sorted(given.items()))


def _styles(
    file: str,
    raw: dict[str, Any],
    media: str,
    query: tuple[str, ...],
    body: tuple[str, ...],
    path_params: tuple[str, ...],
) -> tuple[tuple[str, str], ...]:
    """`style:`, checked: a path parameter's one of PATH_STYLES, a query parameter's or a form
    field's one of STYLES."""
    body_arg_given = raw.get("body_arg") is not None  # a form body's fields are inside it
    styles = raw.get("style", {})
    if not isinstance(styles, dict):
        raise DeclarationError(file, "operation.style", "must map argument names to styles")
    for name, style in styles.items():
        if name in path_params and (style in PATH_STYLES or media != FORM_BODY):
            if style not in PATH_STYLES:
                raise DeclarationError(
                    file,
                    "operation.style",
                    f"{name!r} is a path parameter: its style is one of {', '.join(PATH_STYLES)},"
                    f" not {style!r}",
                )
            continue
        if style not in STYLES:
            raise DeclarationError(
                file, "operation.style", f"{style!r} is not one of {', '.join(STYLES)}"
            )
        in_form = media == FORM_BODY and (name in body or body_arg_given)
        if name not in query and not in_form:
            raise DeclarationError(
                file,
                "operation.style",
                f"names {name!r}, which is not a query parameter or a form body field",
            )
    return tuple(sorted(styles.items()))


def _encoding(
    file: str,
    raw: dict[str, Any],
    schema: dict[str, Any],
    query: tuple[str, ...],
    body: tuple[str, ...],
    path_params: tuple[str, ...] = (),
) -> tuple[str, tuple[tuple[str, str], ...], str | None]:
    """How the request is written: the body's media type, the styles, the whole-body argument."""
    content_type = raw.get("content_type", JSON_BODY)
    media = content_type.split(";", 1)[0].strip().lower() if isinstance(content_type, str) else ""
    structured = media in (JSON_BODY, FORM_BODY, MULTIPART_BODY) or media.endswith("+json")
    if not structured and not (MEDIA_TYPE.match(media) and raw.get("body_arg") is not None):
        raise DeclarationError(
            file,
            "operation.content_type",
            f"{content_type!r} is not one skillpress writes: {JSON_BODY}, a */*+json type,"
            f" {FORM_BODY}, {MULTIPART_BODY}, or any other media type as one whole-body argument"
            " (`body_arg`)",
        )
    if media == MULTIPART_BODY and raw.get("body_arg") is not None:
        raise DeclarationError(
            file, "operation.body_arg", "a multipart body's fields are arguments, not one argument"
        )
    styles = _styles(file, raw, media, query, body, path_params)
    body_arg = raw.get("body_arg")
    if body_arg is not None:
        if not isinstance(body_arg, str) or body_arg not in schema.get("properties", {}):
            raise DeclarationError(
                file, "operation.body_arg", f"{body_arg!r} is not an argument in schema.properties"
            )
        if body != (body_arg,):
            others = ", ".join(repr(b) for b in body if b != body_arg) or "nothing"
            raise DeclarationError(
                file,
                "operation.body_arg",
                f"the body is {body_arg!r} whole, so every other argument must be a path or query"
                f" parameter; {others} would be sent in the body too",
            )
        sub = schema.get("properties", {}).get(body_arg)
        if media == FORM_BODY and not (isinstance(sub, dict) and sub.get("type") == "object"):
            raise DeclarationError(
                file, "operation.body_arg", "a form body's argument is an object of its fields"
            )
    return content_type, styles, body_arg
