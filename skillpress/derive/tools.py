"""Declare an operation as a tool: one JSON Schema object of path, query and body fields."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from skillpress.derive.model import Operation, ToolDecl
from skillpress.derive.tool_params import (
    Args,
    cookie_args,
    header_args,
    path_args,
    query_args,
    styled,
)
from skillpress.format.declaration import (
    FIELD_NAME,
    FILE_ARGUMENT,
    MEDIA_PARAM,
    MEDIA_TYPE,
    METHODS,
    MULTIPART_BODY,
    PATH_TEMPLATE,
    path_template_names,
)
from skillpress.format.errors import SchemaTooLarge
from skillpress.format.expand import (
    MAX_TOOL_SCHEMA_BYTES,
    REDUCTIONS,
    ExpandedSizes,
    reduce_to_budget,
    shallow_schema,
)
from skillpress.format.text import INVISIBLE, visible

__all__ = ["declare_tool"]


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
    if not textual and isinstance(schema, dict) and schema.get("format") == "byte":
        schema = {**schema, "format": "binary"}  # a raw body's bytes, whichever the spec says
    if schema is None or schema == {} or _is_binary(schema):
        if textual and not _is_binary(schema):
            return {"type": "string", "description": f"the body, as {media} text"}, False
        return _as_file(schema) or dict(FILE_ARGUMENT), True
    if isinstance(schema, dict) and schema.get("type") == "string":
        return schema, False
    return None


def _skeleton(sub: Any, types: dict[str, Any], values: bool = False) -> dict[str, Any]:
    """An argument left undetailed to fit the budget: its type and bounds, and the fields it
    requires (through shared types' references, a few levels down), and a pointer to the
    operation's file, which describes it whole."""
    out = shallow_schema(sub, types)
    # an argument's own values, when they are few bytes, are kept however many (EPA's 34
    # pollutant groups): a value outside them is refused by the API
    enum = sub.get("enum") if isinstance(sub, dict) and values else None
    if "enum" not in out and isinstance(enum, list) and len(json.dumps(enum)) <= _ENUM_KEPT:
        out["enum"] = enum
    out["description"] = "not detailed here: this operation's file describes it"
    return out


_ENUM_KEPT = 2048  # bytes of an undetailed argument's enum kept


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
    # their values kept where that fits (EPA's 34 pollutant groups), else without
    for values in (True, False):
        lean = {**schema, "properties": dict(props)}
        for n, name in enumerate(optional, 1):
            lean["properties"][name] = _skeleton(props[name], types, values)
            if mild.fits(lean):
                said = f"{REDUCTIONS[0][2]}; {n} optional argument{'s' if n > 1 else ''}"
                return mild.expand(lean), f"{said} not detailed", None
    try:
        out, said = reduce_to_budget(lean, types, sizes, strongest=True)
        return out, f"{said}; optional arguments not detailed", None
    except SchemaTooLarge:
        pass
    if body_arg is not None or not body_fields or body is None:
        return None
    kept = {k: v for k, v in lean["properties"].items() if k not in body_fields}
    arg = _whole_body_name(kept)
    # the fields it requires kept, with their types, a few levels down: the one argument still
    # says what a body must hold (MediaConvert's preset: `name` and `settings`)
    fields = {"type": "object", "properties": {f: props[f] for f in body_fields if f in props}}
    needed = [f for f in body_fields if f in required and f in props]
    kept[arg] = {
        **shallow_schema(fields | ({"required": needed} if needed else {}), types),
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


@dataclass
class _Body:
    """What a request body makes of a tool: its fields as arguments (`props`, `required`), or
    the whole body as one argument (`whole`), written in `content_type`; which arguments are
    files, and whether the whole body is one."""

    props: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    whole: dict[str, Any] | None = None
    content_type: str = "application/json"
    form: bool = False
    files: list[str] = field(default_factory=list)
    raw_file: bool = False
    sent_as: dict[str, str] = field(default_factory=dict)  # a part's argument → its own name
    multipart: bool = False

    def rename(self, old: str, new: str) -> None:
        """The field `old` offered as the argument `new`, sent under its own name."""
        self.props = {new if k == old else k: v for k, v in self.props.items()}
        self.required = [new if r == old else r for r in self.required]
        self.files = [new if f == old else f for f in self.files]
        self.sent_as[new] = self.sent_as.pop(old, old)


def _fields_body(op: Operation, schema: Any, multipart: bool) -> _Body | str | None:
    """A JSON, form or multipart body's fields as arguments; None when it is not an object of
    fields (then it may go whole), or the reason it cannot be sent."""
    if multipart and _is_binary(schema):
        # one file with no part named (Jira's attachments): sent as the usual part, `file`
        return _Body({"file": _as_file(schema)}, ["file"], files=["file"], multipart=True)
    if multipart:
        if not _is_plain_object(schema):
            return "its multipart body is not an object of fields"
        body = _Body(multipart=True)
        for k, v in schema["properties"].items():
            if k in op.credential_fields:
                continue
            as_file = _as_file(v)
            body.props[k] = as_file if as_file is not None else v
            if as_file is not None:
                body.files.append(k)
        body.props |= {k: {"type": "string", **v} for k, v in _undeclared(schema, op).items()}
        body.required = [r for r in schema.get("required", []) if r in body.props]
        for k in list(body.props):  # `Upload Yaml/Yml File`: a part name no argument can be
            if not FIELD_NAME.match(k):
                base = re.sub(r"[^A-Za-z0-9_.\-]+", "_", visible(k)).strip("_") or "part"
                body.rename(k, next(n for n in (base, f"{base}_part") if n not in body.props))
        return body
    if _is_plain_object(schema):
        props = {k: v for k, v in schema["properties"].items() if k not in op.credential_fields}
        props |= _undeclared(schema, op)
        return _Body(props, [r for r in schema.get("required", []) if r in props])
    return None


def _undeclared(schema: dict[str, Any], op: Operation) -> dict[str, Any]:
    """The fields a body requires but declares no schema for (Figma's webhook update requires
    `team_id`, absent from its properties): arguments of any value, or no call could be valid."""
    if schema.get("additionalProperties") is False:
        return {}  # required and forbidden: the translator already dropped it
    return {
        r: {"description": "Required by the API; the spec declares no type for it."}
        for r in schema.get("required", [])
        if isinstance(r, str) and r not in schema["properties"] and r not in op.credential_fields
    }


def _body_of(op: Operation) -> _Body | str:
    """The request body's shape as arguments, or the reason no call can carry it."""
    body = op.body
    if body is None:
        return _Body()
    media = (body.content_type or "").split(";", 1)[0].strip().lower()
    form, multipart = media == _FORM, media == MULTIPART_BODY
    if not body.is_json and not form and not multipart:
        raw = _raw_body(media, body.schema)
        if raw is None:
            return (
                f"its request body is {body.content_type or 'of no declared type'} with"
                " fields skillpress does not write in that type"
            )
        shape: _Body | str = _Body(whole=raw[0], content_type=media, raw_file=raw[1])
    else:
        shape = _structured_body(op, media, form, multipart)
    if isinstance(shape, str):
        return shape
    if op.method in _NO_BODY and (shape.props or shape.whole is not None):
        return f"it is a {op.method} that declares a body, which HTTP does not send"
    return shape


def _structured_body(op: Operation, media: str, form: bool, multipart: bool) -> _Body | str:
    """A JSON, form or multipart body's shape: its fields, or the whole body as one argument
    (none for a free-form object a bodiless method or a form cannot carry)."""
    body = op.body
    assert body is not None
    content_type = _FORM if form else MULTIPART_BODY if multipart else "application/json"
    if body.is_json and media not in _PLAIN_JSON:
        content_type = media  # application/merge-patch+json and the like: JSON, its own type
    if body.is_json and media != "*/*" and ";" in (body.content_type or ""):
        # its parameters as declared (Azure Batch's `odata=minimalmetadata`, `charset=utf-8`)
        _, _, params = (body.content_type or "").strip().partition(";")
        if all(MEDIA_PARAM.fullmatch(p.strip(" \t")) for p in params.split(";")):
            content_type = f"{content_type};{params}"  # written as declared: a judge compares
    schema = body.schema
    found = _fields_body(op, schema, multipart)
    if isinstance(found, str):
        return found
    if found is not None:
        shape = found
    elif schema is None or schema == {} or schema == {"type": "object"}:
        bodyless = form or op.method in _NO_BODY
        shape = _Body(whole=None if bodyless else {"type": "object"})
    elif (
        isinstance(schema, dict) and schema.get("type") == "object" and not schema.get("properties")
    ):
        # a free-form object (a patch document, a map)
        shape = _Body(whole=None if form or op.method in _NO_BODY else schema)
    elif form:
        return "its form body is not an object of fields"
    else:
        shape = _Body(whole=schema)
    shape.content_type, shape.form = content_type, form
    return shape


def _body_args(op: Operation, shape: _Body, args: Args) -> str | None:
    """The body's arguments: its fields, or (a field named like a parameter, or a body that is
    not an object of fields) the whole body under one argument, whose name this returns."""
    body = op.body
    form_styles: dict[str, str] = {}
    if shape.whole is None and any(name in args.props for name in shape.props):
        # a field named like a parameter: the body goes whole, under its own argument
        shape.whole = body.schema if body is not None else None
        if shape.form and body is not None:
            form_styles = {
                k: v for k, v in body.styles.items() if v != "form" and styled(shape.props.get(k))
            }
        shape.props, shape.required = {}, []
    body_arg = None
    if shape.whole is not None and body is not None:
        body_arg = _whole_body_name(args.props)
        sub = dict(shape.whole)
        if body.description and (shape.raw_file or "description" not in sub):
            sub["description"] = body.description
        args.props[body_arg] = sub
        if body.required or shape.raw_file:
            args.required.append(body_arg)
        if shape.raw_file:
            shape.files.append(body_arg)
    for name, sub in shape.props.items():
        args.props[name] = sub
        if name in shape.required:
            args.required.append(name)
        style = body.styles.get(name) if body is not None else None
        if shape.form and style and style != "form" and styled(sub):
            args.styles[name] = style
    _literal_query(op, args)
    args.styles.update(form_styles)
    return body_arg


def _literal_query(op: Operation, args: Args) -> None:
    """The pairs the spec wrote into the path (`/?Action=List`), fixed arguments sent on every
    call."""
    for key, value in op.literal_query:
        if not key.strip():  # `?=3`: no name to send it under
            continue
        arg = key
        if not FIELD_NAME.match(key):  # `b c`: fixed under a name that loads, sent as written
            base = re.sub(r"[^A-Za-z0-9_.\-]+", "_", visible(key)).strip("_") or "fixed"
            arg = next(n for n in (base, f"{base}_q", f"{base}__q") if n not in args.props)
            args.sent_as[arg] = key
        if arg not in args.props and arg not in args.fixed:
            args.query.append(arg)
            args.fixed[arg] = value


def _named_twice(op: Operation, base_url: str | None) -> str | None:
    """A parameter the request's path (the server's path, then the operation's) names twice."""
    named = PATH_TEMPLATE.findall(urlsplit(op.server_url or base_url or "").path + op.path)
    return next((n for n in named if named.count(n) > 1), None)


def _uncallable(op: Operation, base_url: str | None) -> str | None:
    """Why no request can be sent for the operation, whatever its arguments; None if one can."""
    if op.method not in METHODS:
        return f"{op.method} is not a method skillpress sends"
    hidden = _invisible_name(op)
    if hidden is not None:
        return (
            f"its argument {hidden!r} holds an invisible character (zero-width or a"
            " direction control): it would read as another name"
        )
    if op.stand_in_server is not None:
        return (
            f"its server {op.stand_in_server} stands in for a host of yours other than the"
            " API's, which no base URL given for the API names"
        )
    twice = _named_twice(op, base_url)
    if twice is not None:  # a request names each path parameter once (what the runtime loads)
        return f"its path names the parameter {{{twice}}} twice"
    return None


def declare_tool(
    op: Operation,
    types: dict[str, Any],
    sizes: ExpandedSizes | None = None,
    base_url: str | None = None,
) -> tuple[ToolDecl | None, str | None]:
    """The operation's tool declaration, or None and the reason no call can be declared for it.

    Path and query parameters are arguments; a JSON or form body's fields are arguments too, unless
    the body is not an object of fields (an array, alternatives, a free-form object) or its fields
    clash with a parameter's name: then the whole body is one argument (`body`)."""
    uncallable = _uncallable(op, base_url)
    if uncallable is not None:
        return None, uncallable
    shape = _body_of(op)
    if isinstance(shape, str):
        return None, shape
    args = Args()
    path_names = path_args(op, args, types, urlsplit(op.server_url or base_url or "").path)
    query_args(op, args)
    header_args(op, args)
    cookie_args(op, args)
    if shape.multipart:  # a part named like a parameter: offered under another name
        for name in [n for n in shape.props if n in args.props]:
            taken = {*args.props, *shape.props}
            shape.rename(name, next(n for n in (f"{name}_part", f"part_{name}") if n not in taken))
    body_arg = _body_args(op, shape, args)
    schema_out: dict[str, Any] = {"type": "object", "properties": args.props}
    if args.required:
        schema_out["required"] = args.required
    schema_out["additionalProperties"] = False
    reduced = None
    sizes = sizes or ExpandedSizes(types)
    body_props = shape.props
    if not sizes.fits(schema_out):
        try:  # reduced, and said so, before anything is left out
            schema_out, reduced = reduce_to_budget(schema_out, types, sizes)
        except SchemaTooLarge:
            fitted = _fitted(
                schema_out,
                types,
                sizes,
                body_arg,
                [] if shape.files else list(body_props),  # a multipart body's files are arguments
                op.body,
            )
            if fitted is None or (shape.multipart and fitted[2] is not None):
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
        query=args.query,
        path_params=path_names,
        body_fields=[body_arg] if body_arg else list(body_props),
        content_type=shape.content_type,
        styles=args.styles,
        body_arg=body_arg,
        reduced=reduced,
        sent_as={**args.sent_as, **shape.sent_as},
        fixed=args.fixed,
        header=args.header,
        cookie=args.cookie,
        files=shape.files,
    ), None
