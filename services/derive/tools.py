"""Declare an operation as a tool: one JSON Schema object of path, query and body fields."""

from __future__ import annotations

import re
from typing import Any

from skillpress.services.derive.errors import SchemaTooLarge
from skillpress.services.derive.expand import (
    MAX_TOOL_SCHEMA_BYTES,
    REDUCTIONS,
    ExpandedSizes,
    reduce_to_budget,
)
from skillpress.services.derive.frontmatter import (
    FIELD_NAME,
    FILE_ARGUMENT,
    HEADER_NAME,
    HEADER_VALUE_PATTERN,
    MEDIA_TYPE,
    METHODS,
    MULTIPART_BODY,
    RUNTIME_HEADERS,
    path_template_names,
)
from skillpress.services.derive.model import Operation, ToolDecl
from skillpress.services.derive.text import INVISIBLE, visible

__all__ = ["declare_tool"]


_SCALARS = ("string", "integer", "number", "boolean")


def _scalar_alternatives(schema: dict[str, Any]) -> bool:
    """`anyOf`/`oneOf` of scalar schemas only (an id or a slug): a path segment can carry it as is."""
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if (
            isinstance(alts, list)
            and alts
            and all(isinstance(a, dict) and a.get("type") in _SCALARS for a in alts)
        ):
            return True
    return False


def _is_plain_object(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if any(k in schema for k in ("oneOf", "anyOf", "not", "$ref", "prefixItems", "items")):
        return False
    typ = schema.get("type")
    if typ not in (None, "object") and typ != ["object", "null"]:
        return False
    return isinstance(schema.get("properties"), dict) and bool(schema["properties"])


_FORM = "application/x-www-form-urlencoded"
_PLAIN_JSON = ("application/json", "*/*", "application/*")
_NO_BODY = ("GET", "HEAD")


def _styled(schema: Any) -> bool:
    """Whether a style changes how the value is written: a list or an object (or untyped)."""
    if not isinstance(schema, dict):
        return True
    typ = schema.get("type")
    kinds = typ if isinstance(typ, list) else [typ]
    return typ is None or "array" in kinds or "object" in kinds


def _is_binary(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and schema.get("format") == "binary"
        and schema.get("type") in (None, "string")
    )


def _as_file(schema: Any) -> Any | None:
    """The argument a binary value becomes (a file, or a list of files), or None when it is not
    binary: a model cannot write bytes into JSON, so it names a file or gives base64 content."""
    if _is_binary(schema):
        said = schema.get("description")
        return {**FILE_ARGUMENT, "description": said} if said else dict(FILE_ARGUMENT)
    if (
        isinstance(schema, dict)
        and schema.get("type") == "array"
        and _is_binary(schema.get("items"))
    ):
        return {k: v for k, v in schema.items() if k != "items"} | {"items": dict(FILE_ARGUMENT)}
    return None


def _raw_body(media: str, schema: Any) -> tuple[Any, bool] | None:
    """A body that is neither JSON nor a form: (the one argument's schema, whether it is a file),
    or None when it cannot be written (an XML document of fields, say)."""
    if not MEDIA_TYPE.match(media):
        return None
    textual = media.startswith("text/") or media.endswith(("+xml", "/xml", "/csv", "/yaml"))
    if schema is None or schema == {} or _is_binary(schema):
        if textual and not _is_binary(schema):
            return {"type": "string", "description": f"the body, as {media} text"}, False
        return _as_file(schema) or dict(FILE_ARGUMENT), True
    if isinstance(schema, dict) and schema.get("type") == "string":
        return schema, False
    return None


def _skeleton(sub: Any) -> dict[str, Any]:
    """An argument left undetailed to fit the budget: its type where it has a plain one, and a
    pointer to the operation's file, which describes it whole."""
    out: dict[str, Any] = {}
    typ = sub.get("type") if isinstance(sub, dict) else None
    if isinstance(typ, str) and typ in (*_SCALARS, "array", "object"):
        out["type"] = typ
    if isinstance(sub, dict) and isinstance(sub.get("enum"), list) and len(sub["enum"]) <= 20:
        out["enum"] = sub["enum"]
    out["description"] = "not detailed here: this operation's file describes it"
    return out


def _fitted(
    schema: dict[str, Any],
    types: dict[str, Any],
    sizes: ExpandedSizes,
    body_arg: str | None,
    body_fields: list[str],
    body: Any,
) -> tuple[dict[str, Any], str, str | None] | None:
    """The last reductions, so that no operation is left out for its size: the optional
    arguments undetailed (their types kept, the file describes them), then the body as one
    argument whose fields the file lists. (schema, what was reduced, the body's argument when the
    body became one), or None when even that does not fit."""
    required = set(schema.get("required", []))
    props = schema["properties"]
    mild = sizes.reduced(*REDUCTIONS[0][:2], 120)
    # the largest optional arguments undetailed first, until the rest fits with its descriptions
    optional = sorted(
        (k for k in props if k not in required),
        key=lambda k: (-mild.size({"type": "object", "properties": {k: props[k]}}), k),
    )
    lean = {**schema, "properties": dict(props)}
    for n, name in enumerate(optional, 1):
        lean["properties"][name] = _skeleton(props[name])
        if mild.fits(lean):
            said = f"{REDUCTIONS[0][2]}; {n} optional argument{'s' if n > 1 else ''} not detailed"
            return mild.expand(lean), said, None
    try:
        out, said = reduce_to_budget(lean, types, sizes, strongest=True)
        return out, f"{said}; optional arguments not detailed", None
    except SchemaTooLarge:
        pass
    if body_arg is not None or not body_fields or body is None:
        return None
    kept = {k: v for k, v in lean["properties"].items() if k not in body_fields}
    arg = _whole_body_name(kept)
    kept[arg] = {
        "type": "object",
        "description": "the request body, an object of the fields this operation's file lists",
    }
    whole = {
        **schema,
        "properties": kept,
        "required": [r for r in schema.get("required", []) if r in kept]
        + ([arg] if any(f in required for f in body_fields) else []),
    }
    if not whole["required"]:
        whole.pop("required")
    try:
        out, said = reduce_to_budget(whole, types, sizes, strongest=True)
    except SchemaTooLarge:
        return None
    return out, f"{said}; the body is one argument, `{arg}`, its fields in this file", arg


def _whole_body_name(taken: dict[str, Any]) -> str:
    for name in ("body", "request_body", "body_"):
        if name not in taken:
            return name
    return "body__"


def _invisible_name(op: Operation) -> str | None:
    """A path parameter or body field of `op` whose name holds an invisible character (a query
    or header one is offered under a clean name instead, `sent_as` keeping the original)."""
    names = list(path_template_names(op.path))
    schema = op.body.schema if op.body is not None else None
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        names += [str(n) for n in schema["properties"]]
    return next((n for n in names if INVISIBLE.search(n)), None)


def declare_tool(
    op: Operation, types: dict[str, Any], sizes: ExpandedSizes | None = None
) -> tuple[ToolDecl | None, str | None]:
    """The operation's tool declaration, or None and the reason no call can be declared for it.

    Path and query parameters are arguments; a JSON or form body's fields are arguments too, unless
    the body is not an object of fields (an array, alternatives, a free-form object) or its fields
    clash with a parameter's name: then the whole body is one argument (`body`)."""
    if op.method not in METHODS:
        return None, f"{op.method} is not a method skillpress sends"
    hidden = _invisible_name(op)
    if hidden is not None:
        return None, (
            f"its argument {hidden!r} holds an invisible character (zero-width or a"
            " direction control): it would read as another name"
        )
    body = op.body
    body_props: dict[str, Any] = {}
    body_required: list[str] = []
    whole_body: dict[str, Any] | None = None  # the body's schema, when it is one argument
    content_type = "application/json"
    form = False
    files: list[str] = []
    raw_file = False  # the whole body is a file
    if body is not None:
        media = (body.content_type or "").split(";", 1)[0].strip().lower()
        form = media == _FORM
        multipart = media == MULTIPART_BODY
        if not body.is_json and not form and not multipart:
            raw = _raw_body(media, body.schema)
            if raw is None:
                return (
                    None,
                    f"its request body is {body.content_type or 'of no declared type'} with"
                    " fields skillpress does not write in that type",
                )
            whole_body, raw_file = raw
            content_type = media
        elif body.is_json and media not in _PLAIN_JSON:
            content_type = media  # application/merge-patch+json and the like: JSON, its own type
        if form:
            content_type = _FORM
        if multipart:
            content_type = MULTIPART_BODY
        schema = body.schema
        if whole_body is not None:
            pass  # a raw body: one argument, decided above
        elif multipart and _is_binary(schema):
            # one file with no part named (Jira's attachments): sent as the usual part, `file`
            body_props, files = {"file": _as_file(schema)}, ["file"]
            body_required = ["file"]
        elif multipart:
            if not _is_plain_object(schema):
                return None, "its multipart body is not an object of fields"
            body_props = {}
            for k, v in schema["properties"].items():
                if k in op.credential_fields:
                    continue
                as_file = _as_file(v)
                body_props[k] = as_file if as_file is not None else v
                if as_file is not None:
                    files.append(k)
            body_required = [r for r in schema.get("required", []) if r in body_props]
        elif _is_plain_object(schema):
            body_props = {
                k: v for k, v in schema["properties"].items() if k not in op.credential_fields
            }
            body_required = [r for r in schema.get("required", []) if r in body_props]
        elif schema is None or schema == {} or schema == {"type": "object"}:
            if not form and op.method not in _NO_BODY:
                whole_body = {"type": "object"}
        elif (
            isinstance(schema, dict)
            and schema.get("type") == "object"
            and not schema.get("properties")
        ):
            if not form and op.method not in _NO_BODY:
                whole_body = schema  # a free-form object (a patch document, a map)
        elif form:
            return None, "its form body is not an object of fields"
        else:
            whole_body = schema
        if op.method in _NO_BODY and (body_props or whole_body is not None):
            return None, f"it is a {op.method} that declares a body, which HTTP does not send"
    props: dict[str, Any] = {}
    required: list[str] = []
    path_names = path_template_names(op.path)
    query: list[str] = []
    styles: dict[str, str] = {}
    sent_as: dict[str, str] = {}
    for name in path_names:
        param = next((p for p in op.params if p.location == "path" and p.name == name), None)
        sub = (
            dict(param.schema)
            if param and isinstance(param.schema, dict)
            else {"type": "string", "minLength": 1}
        )
        if param and param.description and "description" not in sub:
            sub["description"] = param.description
        if sub.get("type") not in _SCALARS and not _scalar_alternatives(sub):
            sub = {k: v for k, v in sub.items() if k in ("description",)} | {
                "type": "string",
                "minLength": 1,
            }
        props[name] = sub
        required.append(name)
    for p in op.params:
        if p.location != "query" or p.name in op.credential_fields:
            continue
        arg = p.name
        if arg in props:  # named like a path parameter: offered under another name, sent as its own
            arg = next(
                n for n in (f"{p.name}_query", f"query_{p.name}", f"{p.name}__q") if n not in props
            )
            sent_as[arg] = p.name
        elif not FIELD_NAME.match(
            arg
        ):  # `ip address`, `{field_name}`: an argument name a model can use
            base = re.sub(r"[^A-Za-z0-9_.\-\[\]]+", "_", visible(arg)).strip("_") or "param"
            arg = next(n for n in (base, f"{base}_q", f"{base}__q") if n not in props)
            sent_as[arg] = p.name
        sub = p.schema if isinstance(p.schema, dict) else {}
        if p.description and "description" not in sub:
            sub = {**sub, "description": p.description}
        props[arg] = sub
        query.append(arg)
        if p.style != "form" and _styled(sub):
            styles[arg] = p.style
        if p.required:
            required.append(arg)
    header: list[str] = []
    for p in op.params:  # a header the API reads from the caller (not the credential): an argument
        if (
            p.location != "header"
            or p.name in op.credential_fields
            or p.name.lower() in RUNTIME_HEADERS
            or not HEADER_NAME.match(p.name)
        ):
            continue
        arg = p.name
        if arg in props:
            arg = next(n for n in (f"{p.name}_header", f"header_{p.name}") if n not in props)
            sent_as[arg] = p.name
        sub = p.schema if isinstance(p.schema, dict) else {}
        if p.description and "description" not in sub:
            sub = {**sub, "description": p.description}
        typ = sub.get("type")
        kinds: list[Any] = typ if isinstance(typ, list) else [typ]
        if "string" in kinds and not {"pattern", "enum"} & set(sub):
            sub = {**sub, "pattern": HEADER_VALUE_PATTERN}  # one line of header text
        props[arg] = sub
        header.append(arg)
        if p.required:
            required.append(arg)
    form_styles: dict[str, str] = {}
    if files and any(name in props for name in body_props):
        return None, "its multipart fields are named like its parameters"
    if whole_body is None and any(name in props for name in body_props):
        # a field named like a parameter: the body goes whole, under its own argument
        whole_body = body.schema if body is not None else None
        if form and body is not None:
            form_styles = {
                k: v for k, v in body.styles.items() if v != "form" and _styled(body_props.get(k))
            }
        body_props, body_required = {}, []
    body_arg = None
    if whole_body is not None and body is not None:
        body_arg = _whole_body_name(props)
        sub = dict(whole_body)
        if body.description and (raw_file or "description" not in sub):
            sub["description"] = body.description
        props[body_arg] = sub
        if body.required or raw_file:
            required.append(body_arg)
        if raw_file:
            files.append(body_arg)
    for name, sub in body_props.items():
        props[name] = sub
        if name in body_required:
            required.append(name)
        style = body.styles.get(name) if body is not None else None
        if form and style and style != "form" and _styled(sub):
            styles[name] = style
    fixed: dict[str, Any] = {}
    for key, value in op.literal_query:  # written into the path by the spec: sent on every call
        if key not in props and key not in fixed:
            query.append(key)
            fixed[key] = value
    styles.update(form_styles)
    schema_out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema_out["required"] = required
    schema_out["additionalProperties"] = False
    reduced = None
    sizes = sizes or ExpandedSizes(types)
    if not sizes.fits(schema_out):
        try:  # reduced, and said so, before anything is left out
            schema_out, reduced = reduce_to_budget(schema_out, types, sizes)
        except SchemaTooLarge:
            fitted = _fitted(
                schema_out,
                types,
                sizes,
                body_arg,
                [] if files else list(body_props),  # a multipart body's files are arguments
                body,
            )
            if fitted is None:
                return (
                    None,
                    f"its expanded argument schema is over the {MAX_TOOL_SCHEMA_BYTES // 1024} KB"
                    " tool budget even with its body as one argument",
                )
            schema_out, reduced, whole = fitted
            if whole is not None:  # the body is one argument now, its fields in the file
                body_arg, body_props = whole, {}
    return ToolDecl(
        schema=schema_out,
        query=query,
        path_params=path_names,
        body_fields=[body_arg] if body_arg else list(body_props),
        content_type=content_type,
        styles=styles,
        body_arg=body_arg,
        reduced=reduced,
        sent_as=sent_as,
        fixed=fixed,
        header=header,
        files=files,
    ), None
