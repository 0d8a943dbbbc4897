"""An operation file's arguments as the derivation renders them: each parameter's line (its type,
constraints and description, within the file's level of detail), the ones that are not the
model's to give, and the body's fields and shape."""

from __future__ import annotations

import json
import re
from typing import Any

from skillpress.derive.model import Operation, Param
from skillpress.format.declaration import HEADER_NAME, RUNTIME_HEADERS, path_template_names
from skillpress.format.text import (
    full_text,
    one_line,
    short_text,
    spec_line,
)
from skillpress.format.type_refs import type_label


def _through_ref(schema: Any, level: dict[str, Any]) -> Any:
    """A reference to a shared type that is a plain value (an enum type, say) read as that type,
    so its values are listed where the argument is, not just its name."""
    types = level.get("types")
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not types or not isinstance(ref, str) or not ref.startswith("#/types/"):
        return schema
    target = types.get(ref[8:])
    if not isinstance(target, dict) or isinstance(target.get("properties"), dict):
        return schema
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}


def _enum_value(value: Any) -> str:
    """An enum value as it is sent: as it reads when it reads the same on one line, else quoted
    exactly (`" no"` is not `no`)."""
    if value is None:
        return "null"
    if isinstance(value, str) and spec_line(value) == value and "`" not in value:
        return f"`{value}`"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _constraints(schema: Any, level: dict[str, Any]) -> str:
    schema = _through_ref(schema, level)
    if not isinstance(schema, dict):
        return ""
    bits: list[str] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and level["enum"]:
        shown = ", ".join(_enum_value(v) for v in enum[: level["enum"]])
        more = f", … ({len(enum)} values)" if len(enum) > level["enum"] else ""
        bits.append(f"one of {shown}{more}")
    for key, word in (
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
    ):
        if key in schema:
            bits.append(f"{word} {schema[key]}")
    # as stated: a bound the spec does not set is not invented (non-empty goes without saying)
    low, high = schema.get("minLength"), schema.get("maxLength")
    if high is not None:
        bits.append(f"length {low}–{high}" if low and low > 1 else f"length ≤ {high}")
    elif isinstance(low, int) and low > 1:
        bits.append(f"length ≥ {low}")
    low, high = schema.get("minItems"), schema.get("maxItems")
    if high is not None:
        bits.append(f"{low}–{high} items" if low else f"at most {high} items")
    elif low:
        bits.append(f"at least {low} items")
    if isinstance(schema.get("pattern"), str) and len(schema["pattern"]) <= 80:
        bits.append(f"pattern `{schema['pattern']}`")
    if (
        "default" in schema
        and isinstance(schema["default"], (str, int, float, bool))
        and len(str(schema["default"])) <= 40
    ):
        bits.append(f"default `{json.dumps(schema['default'])}`")
    return "; ".join(bits)


def described(text: str, level: dict[str, Any], limit: int, whole: int = 1500) -> str:
    """A description as the level allows: whole (its lines indented to stay inside a list
    item) or its first paragraph, shortened."""
    if not text or not level["desc"]:
        return ""
    if level.get("full"):
        return re.sub(r"\n(?=.)", "\n  ", full_text(text, whole))
    return short_text(text, limit)


def _param_line(
    name: str,
    schema: Any,
    required: bool,
    where: str,
    desc: str,
    level: dict[str, Any],
    example: Any = None,
) -> str:
    label = type_label(schema)
    shown = one_line(name).replace("`", "'")  # a field's name from the spec, on its line
    text = f"- `{shown}` ({label}, {'required' if required else 'optional'}{', ' + where if where else ''})"
    d = described(desc, level, level["desc"])
    c = _constraints(schema, level)
    if d:
        text += f" — {d}"
    if c:
        text += f" [{c}]"
    if example is not None and level["desc"]:
        shown = json.dumps(example, ensure_ascii=False, default=str)
        if len(shown) <= 120:
            text += f" (the spec's example: `{shown}`)"
    return text


def _is_argument(op: Operation, p: Param) -> bool:
    """A parameter the tool takes as an argument (or a caller of the API sends): not the
    credential, not a cookie whose name no Cookie header can carry, not a header only the
    runtime writes."""
    if p.name in op.credential_fields:
        return False
    if p.location == "cookie":
        return bool(HEADER_NAME.match(p.name))
    return p.location != "header" or p.name.lower() not in RUNTIME_HEADERS


def params_section(
    op: Operation, level: dict[str, Any], credential_header: str | None = None
) -> list[str]:
    lines: list[str] = []
    sent = [
        p
        for p in op.params
        if p.location in ("path", "query", "header", "cookie") and _is_argument(op, p)
    ]
    required = [p for p in sent if p.required]
    optional = [p for p in sent if not p.required]
    # a parameter with a constraint or an example is worth its own line, described or not
    described = [
        p
        for p in optional
        if p.description or p.example is not None or _constraints(p.schema, level)
    ]
    undescribed = [p for p in optional if p not in described]
    declared_path = {p.name for p in op.params if p.location == "path"}
    implicit = [n for n in path_template_names(op.path) if n not in declared_path]
    if required or described or implicit or undescribed:
        lines += ["", "## Parameters"]
    for name in implicit:
        lines.append(_param_line(name, {"type": "string"}, True, "path", "", level))
    for p in required:
        lines.append(
            _param_line(
                p.name,
                p.schema,
                True,
                p.location,
                p.long_description or _desc(p),
                level,
                p.example,
            )
        )
    lines += _optional_lines(described, undescribed, level)
    lines += _not_arguments(op, level, credential_header)
    return _mark_fixed(op, lines)


def _optional_lines(
    described: list[Param], undescribed: list[Param], level: dict[str, Any]
) -> list[str]:
    """The optional parameters: a line each where the level shows them and they say something,
    the rest named on one line."""
    lines = []
    if level["optional"]:
        for p in described:
            lines.append(
                _param_line(
                    p.name, p.schema, False, p.location, p.long_description, level, p.example
                )
            )
    if undescribed or (described and not level["optional"]):
        rest = undescribed + ([] if level["optional"] else described)
        names = ", ".join(f"`{p.name}` ({type_label(p.schema)})" for p in rest[:20]) + (
            ", …" if len(rest) > 20 else ""
        )
        lines.append(f"- Also optional, effect not described: {names}.")
    return lines


def _not_arguments(
    op: Operation, level: dict[str, Any], credential_header: str | None
) -> list[str]:
    """The parameters that are no argument: the credential (attached by the tool, or read by
    the API where it is), and those the tool sets or does not send."""
    lines: list[str] = []
    keyed = bool(op.additions.identity) and op.tool is not None
    hidden = [
        p
        for p in op.params
        if not _is_argument(op, p) and not (keyed and p.name.lower() == "idempotency-key")
    ]
    credentials = [p for p in hidden if p.name in op.credential_fields]
    if credentials:
        lines.append("")
        if credential_header:
            lines.append(
                f"The credential, never an argument: the tool attaches it in the"
                f" `{credential_header}` header, so these are not sent:"
            )
        else:
            lines.append(
                "The credential, never an argument (this skill attaches none: the API reads it here):"
            )
        lines += [
            _param_line(p.name, p.schema, p.required, p.location, p.long_description, level)
            for p in credentials
        ]
    others = [p for p in hidden if p.name not in op.credential_fields]
    if others:
        lines += ["", "Set by the tool or not sent:"]
        lines += [
            _param_line(p.name, p.schema, p.required, p.location, p.long_description, level)
            for p in others
        ]
    return lines


def _mark_fixed(op: Operation, lines: list[str]) -> list[str]:
    """Lines about arguments the skill fixes say so: they are sent, never the model's to give."""
    if op.tool is None or not (op.tool.fixed or op.tool.headers):
        return lines
    out = []
    for line in lines:
        name = line[3:].split("`", 1)[0] if line.startswith("- `") else None
        if name is not None and name in op.tool.fixed:
            line = f"- `{name}` — fixed by this skill: always {json.dumps(op.tool.fixed[name], ensure_ascii=False)} (not an argument)"
        elif name is not None and name in op.tool.headers:
            line = f"- `{name}` (header) — sent by the tool on every call: {json.dumps(op.tool.headers[name], ensure_ascii=False)}"
        out.append(line)
    return out


def _desc(p: Param) -> str:
    if isinstance(p.schema, dict):
        d = p.schema.get("description")
        if isinstance(d, str):
            return d
    return ""


def fields_text(
    schema: Any, level: dict[str, Any], docs: dict[str, str] | None = None
) -> list[str]:
    """A body's fields, one line each (`docs`: a field's whole description, where the schema
    carries only its first paragraph)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    docs = docs or {}
    props: dict[str, Any] = schema["properties"]
    req = [r for r in schema.get("required", []) if r in props]
    opt = [k for k in props if k not in req]
    lines: list[str] = []
    cap = max(level["fields"], 0)

    def desc(name: str) -> str:
        short = _schema_desc(props[name])
        return docs.get(name, short) if short else ""

    for name in req:
        lines.append(_param_line(name, props[name], True, "", desc(name), level))
    for name in opt[:cap]:
        lines.append(_param_line(name, props[name], False, "", desc(name), level))
    if len(opt) > cap:
        names = ", ".join(f"`{n}`" for n in opt[cap : cap + 30]) + (
            ", …" if len(opt) > cap + 30 else ""
        )
        lines.append(f"- {len(opt) - cap} more optional fields: {names}.")
    return lines


def _schema_desc(schema: Any) -> str:
    return (
        schema.get("description", "")
        if isinstance(schema, dict) and isinstance(schema.get("description"), str)
        else ""
    )


def body_section(op: Operation, level: dict[str, Any]) -> list[str]:
    body = op.body
    if body is None:
        return []
    lines = ["", "## Request body"]
    head = f"{body.content_type or 'unspecified type'}"
    if body.required:
        head += ", required"
    if body.description and level["desc"]:
        head += f" — {described(body.long_description or body.description, level, level['desc'])}"
    lines.append(head)
    if body.other_types:
        lines.append("Also accepted: " + ", ".join(f"`{t}`" for t in body.other_types[:6]) + ".")
    if op.tool is not None and op.tool.files:
        named = ", ".join(f"`{f}`" for f in op.tool.files)
        lines.append(
            f'Files ({named}): give each as `{{"path": "report.pdf"}}` (a file under the folder'
            ' the caller allows, read and sent by the tool) or `{"content_base64": "…"}`;'
            " `filename` and `content_type` are optional."
        )
        if op.tool.files == ["file"] and not _has_field(body.schema, "file"):
            lines.append("The spec names no part: the file is sent as the part `file`.")
    if op.tool is not None and op.tool.body_arg:
        what = (
            "its fields" if op.tool.content_type.endswith("form-urlencoded") else "the whole body"
        )
        lines.append(f"The argument `{op.tool.body_arg}` is {what}.")
        if isinstance(body.schema, dict) and not isinstance(body.schema.get("properties"), dict):
            lines += shape_lines(body.schema)
    elif op.tool is not None:
        if op.tool.body_fields:
            lines.append("Its fields are the tool's arguments beside the parameters:")
    elif isinstance(body.schema, dict) and not isinstance(body.schema.get("properties"), dict):
        lines.append(f"Shape: {type_label(body.schema)}.")
    lines += _mark_fixed(op, fields_text(body.schema, level, body.field_docs))
    lines += spec_example("The spec's example of this body:", body.example, level)
    return lines


def _has_field(schema: Any, name: str) -> bool:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(props, dict) and name in props


def shape_lines(schema: Any) -> list[str]:
    """A body that is not an object of fields: its type, or each of its alternatives."""
    if isinstance(schema, dict):
        for key, word in (("oneOf", "exactly one"), ("anyOf", "any")):
            options = schema.get(key)
            if isinstance(options, list) and len(options) == 1:
                return [f"Shape: {_one_form(options[0])}."]
            if isinstance(options, list) and options:
                lines = [f"Shape: {word} of these {len(options)} forms:"]
                lines += [f"- {_one_form(o)}" for o in options[:12]]
                return lines
    return [f"Shape: {type_label(schema)}."]


def _one_form(schema: Any) -> str:
    label = type_label(schema)
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        required = set(schema.get("required") or [])
        fields = [
            f"`{k}` ({type_label(v)}{', required' if k in required else ''})"
            for k, v in list(schema["properties"].items())[:10]
        ]
        more = ", …" if len(schema["properties"]) > 10 else ""
        return f"{label} with " + ", ".join(fields) + more
    if isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        inner = schema["items"]
        if isinstance(inner.get("properties"), dict):
            return f"array of: {_one_form(inner)}"
    return label


def spec_example(label: str, value: Any, level: dict[str, Any]) -> list[str]:
    """The spec's own example, labelled as the spec's (never an invented call), while it fits."""
    if value is None or not level["desc"]:
        return []
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    limit = 3000 if level.get("full") else 800
    if len(text) > limit:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
        if len(text) > limit:
            return []
    return ["", label, "```json", text, "```"]
