"""Declare an operation as a tool: one JSON Schema object of path, query and body fields."""

from __future__ import annotations

from typing import Any

from services.derive.errors import SchemaTooLarge
from services.derive.expand import MAX_TOOL_SCHEMA_BYTES, expand_types
from services.derive.frontmatter import path_template_names
from services.derive.model import Operation, ToolDecl

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


def declare_tool(op: Operation, types: dict[str, Any]) -> tuple[ToolDecl | None, str | None]:
    """The operation's tool declaration, or None and the reason it stays prose for fetch_url."""
    body = op.body
    body_props: dict[str, Any] = {}
    body_required: list[str] = []
    if body is not None:
        if not body.is_json:
            return (
                None,
                f"its request body is {body.content_type or 'of no declared type'}, not JSON",
            )
        schema = body.schema
        if schema is None or schema == {} or schema == {"type": "object"}:
            body_props = {}
        elif not _is_plain_object(schema):
            return None, "its request body is not a plain JSON object"
        else:
            body_props = dict(schema["properties"])
            body_required = [r for r in schema.get("required", []) if r in body_props]
    props: dict[str, Any] = {}
    required: list[str] = []
    path_names = path_template_names(op.path)
    query: list[str] = []
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
        if p.location != "query":
            continue
        if p.name in props:
            return None, f"its query parameter {p.name!r} has the same name as a path parameter"
        sub = p.schema if isinstance(p.schema, dict) else {}
        if p.description and "description" not in sub:
            sub = {**sub, "description": p.description}
        props[p.name] = sub
        query.append(p.name)
        if p.required:
            required.append(p.name)
    for name, sub in body_props.items():
        if name in props:
            return None, f"its body field {name!r} has the same name as a parameter"
        props[name] = sub
        if name in body_required:
            required.append(name)
    schema_out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema_out["required"] = required
    schema_out["additionalProperties"] = False
    try:
        expand_types(schema_out, types)
    except SchemaTooLarge:
        return (
            None,
            f"its expanded argument schema is over the {MAX_TOOL_SCHEMA_BYTES // 1024} KB tool budget",
        )
    return ToolDecl(
        schema=schema_out, query=query, path_params=path_names, body_fields=list(body_props)
    ), None
