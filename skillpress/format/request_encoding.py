"""How an operation block says its request is written: its content type and whole-body
argument, each query or form field's style, the names arguments go by on the wire, and the file
arguments a multipart or raw body takes; each read and checked beside its key, a refusal naming
the file and the field."""

from __future__ import annotations

from typing import Any

from skillpress.format.declaration import (
    FORM_BODY,
    JSON_BODY,
    MEDIA_TYPE,
    MULTIPART_BODY,
    PATH_STYLES,
    STYLES,
    DeclarationError,
)
from skillpress.format.declaration_forms import _names


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
