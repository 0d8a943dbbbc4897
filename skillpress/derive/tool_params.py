"""A tool's parameter arguments: path, query, cookie and header parameters, each an argument
under a name a model can use, gathered into `Args` with how each is sent."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from skillpress.derive.model import Operation, Param
from skillpress.format.declaration import (
    FIELD_NAME,
    HEADER_NAME,
    HEADER_VALUE_PATTERN,
    RUNTIME_HEADERS,
    path_template_names,
)
from skillpress.format.text import visible

__all__ = ["SCALARS", "Args", "cookie_args", "header_args", "path_args", "query_args", "styled"]


SCALARS = ("string", "integer", "number", "boolean")


def _scalar_alternatives(schema: dict[str, Any], types: dict[str, Any]) -> bool:
    """`anyOf`/`oneOf` of scalar schemas only (an id or a slug, inline or named: pandascore's
    `VideogameIDOrSlug`, an enum of ids or one of slugs): a path segment can carry it as is."""
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if (
            isinstance(alts, list)
            and alts
            and all(
                isinstance(t := _target(a, types), dict) and t.get("type") in SCALARS for a in alts
            )
        ):
            return True
    return False


def _never_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A path parameter's schema without its `null` alternative (a segment is never null):
    Airflow's `map_index`, `anyOf: [integer, null]`, is an integer."""
    out = dict(schema)
    if isinstance(out.get("type"), list) and "null" in out["type"]:
        kept = [t for t in out["type"] if t != "null"]
        out["type"] = kept[0] if len(kept) == 1 else kept
    for key in ("anyOf", "oneOf"):
        alts = out.get(key)
        if not isinstance(alts, list) or {"type": "null"} not in alts:
            continue
        kept = [a for a in alts if a != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del out[key]
            out = {**kept[0], **out}
        elif kept:
            out[key] = kept
    return out


def _target(schema: Any, types: dict[str, Any]) -> Any:
    """What a schema is once its `#/types/Name` references are followed (a few deep): a path
    parameter's `$ref` to an integer is an integer, with its constraints."""
    for _ in range(8):
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#/types/"):
            return schema
        schema = types.get(ref.removeprefix("#/types/"))
    return schema


def styled(schema: Any) -> bool:
    """Whether a style changes how the value is written: a list or an object (or untyped)."""
    if not isinstance(schema, dict):
        return True
    typ = schema.get("type")
    kinds = typ if isinstance(typ, list) else [typ]
    return typ is None or "array" in kinds or "object" in kinds


@dataclass
class Args:
    """A tool's arguments as they are gathered: their schemas, which are required, which go in
    the query or a header, how each is written, and the wire names they are sent under."""

    props: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    query: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    cookie: list[str] = field(default_factory=list)
    styles: dict[str, str] = field(default_factory=dict)
    sent_as: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)


def path_args(op: Operation, args: Args, types: dict[str, Any], base: str = "") -> list[str]:
    """Each path parameter, a required scalar argument (a schema that is not one, once its
    references are followed: a string); a variable the server URL's path keeps (`base`: the
    spec gives it no default) first, a string argument too."""
    names = list(dict.fromkeys([*path_template_names(base), *path_template_names(op.path)]))
    for name in names:
        param = next((p for p in op.params if p.location == "path" and p.name == name), None)
        sub = (
            dict(param.schema)
            if param and isinstance(param.schema, dict)
            else {"type": "string", "minLength": 1}
        )
        if param and param.description and "description" not in sub:
            sub["description"] = param.description
        sub = _never_null(sub)
        target = _target(sub, types)
        scalar = isinstance(target, dict) and (
            target.get("type") in SCALARS or _scalar_alternatives(target, types)
        )
        items = _target(target.get("items"), types) if isinstance(target, dict) else None
        listed = (
            isinstance(target, dict)
            and target.get("type") == "array"
            and isinstance(items, dict)
            and items.get("type") in SCALARS
        )
        if listed:  # a list of values in one segment (`1,2`; `.1.2` labelled): at least one
            own = {k: v for k, v in sub.items() if k != "$ref"}  # the list itself, inline
            sub = {**target, **own, "minItems": max(1, int(target.get("minItems") or 1))}
        elif not scalar:
            sub = {k: v for k, v in sub.items() if k in ("description",)} | {
                "type": "string",
                "minLength": 1,
            }
        args.props[name] = sub
        args.required.append(name)
        if param and param.style != "simple":
            args.styles[name] = param.style
    return names


def query_args(op: Operation, args: Args) -> None:
    """Each query parameter (not the credential) an argument, under a name a model can use."""
    for p in op.params:
        if p.location != "query" or p.name in op.credential_fields:
            continue
        arg = p.name
        if arg in args.props:  # named like a path parameter: offered under another name
            arg = next(
                n
                for n in (f"{p.name}_query", f"query_{p.name}", f"{p.name}__q")
                if n not in args.props
            )
            args.sent_as[arg] = p.name
        elif not FIELD_NAME.match(arg):  # `ip address`, `{field_name}`: a name a model can use
            base = re.sub(r"[^A-Za-z0-9_.\-\[\]]+", "_", visible(arg)).strip("_") or "param"
            arg = next(n for n in (base, f"{base}_q", f"{base}__q") if n not in args.props)
            args.sent_as[arg] = p.name
        sub = p.schema if isinstance(p.schema, dict) else {}
        if p.description and "description" not in sub:
            sub = {**sub, "description": p.description}
        args.props[arg] = sub
        args.query.append(arg)
        if p.style != "form" and styled(sub):
            args.styles[arg] = p.style
        if p.required:
            args.required.append(arg)


def cookie_args(op: Operation, args: Args) -> None:
    """Each cookie the API reads from the caller (not the credential) an argument, sent as
    `name=value` in the Cookie header (a list as its values joined by commas)."""
    for p in op.params:
        if (
            p.location != "cookie"
            or p.name in op.credential_fields
            or not HEADER_NAME.match(p.name)  # a cookie's name is a token, as a header's is
        ):
            continue
        arg, sub = _placed(p, args, "cookie")
        args.props[arg] = sub
        args.cookie.append(arg)
        if p.required:
            args.required.append(arg)


def _placed(p: Param, args: Args, where: str) -> tuple[str, dict[str, Any]]:
    """A cookie's or a header's argument name (`<name>_<where>` where another argument has its
    name, sent under its own: `sent_as`) and its schema with the parameter's description."""
    arg = p.name
    if arg in args.props:
        arg = next(n for n in (f"{p.name}_{where}", f"{where}_{p.name}") if n not in args.props)
        args.sent_as[arg] = p.name
    sub = p.schema if isinstance(p.schema, dict) else {}
    if p.description and "description" not in sub:
        sub = {**sub, "description": p.description}
    return arg, sub


def header_args(op: Operation, args: Args) -> None:
    """Each header the API reads from the caller (not the credential, not the runtime's own) an
    argument, its value one line of header text."""
    for p in op.params:
        if (
            p.location != "header"
            or p.name in op.credential_fields
            or p.name.lower() in RUNTIME_HEADERS
            or not HEADER_NAME.match(p.name)
        ):
            continue
        arg, sub = _placed(p, args, "header")
        typ = sub.get("type")
        kinds: list[Any] = typ if isinstance(typ, list) else [typ]
        if "string" in kinds and not {"pattern", "enum"} & set(sub):
            sub = {**sub, "pattern": HEADER_VALUE_PATTERN}  # one line of header text
        args.props[arg] = sub
        args.header.append(arg)
        if p.required:
            args.required.append(arg)
