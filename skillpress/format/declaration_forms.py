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
    NO_BODY,
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
        wrong = _misfit(fixed[name], seen.get(name, "string"), name in lists["list"])
        if wrong is not None:
            raise DeclarationError(file, "operation.fixed", f"{name}: {wrong}")
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


_KINDS: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "string": (str, int, float, bool),  # an untyped field is sent as text: any scalar is its text
}


def _misfit(value: Any, kind: str, listed: bool) -> str | None:
    """Why a fixed `value` is not what its field is declared (`integer: [limit]` fixed to
    `five`), or None: the same check an operator's fixed annotation passes."""
    values = value if listed and isinstance(value, list) else [value]
    if listed and not isinstance(value, list):
        return f"{value!r} is not a list, and the field is listed in `list`"
    for one in values:
        wanted = _KINDS[kind]
        if not isinstance(one, wanted) or (
            kind != "boolean" and kind != "string" and isinstance(one, bool)
        ):
            article = "an" if kind[0] in "aeiou" else "a"
            return f"{one!r} is not {article} {kind}, as the field is declared"
    return None


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
