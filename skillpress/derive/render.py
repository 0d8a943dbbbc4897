"""Render the files of a skill package: the body, category files and operation files."""
# size: every file a package holds, rendered at each level of detail until it fits one read

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skillpress.derive.auth import auth_hint
from skillpress.derive.categories import Category
from skillpress.derive.declare import declaration_block
from skillpress.derive.model import Operation, Param, Response, Webhook
from skillpress.derive.servers import join_url
from skillpress.format.declaration import HEADER_NAME, RUNTIME_HEADERS, path_template_names
from skillpress.format.text import (
    INVISIBLE,
    first_sentence,
    full_text,
    one_line,
    short_text,
    spec_line,
    without_urls,
)
from skillpress.format.type_refs import type_label
from skillpress.format.wording import CALL_BY_NAME

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILE_LINES",
    "fits_one_read",
    "render_operation",
    "render_category",
    "render_body",
    "op_line",
    "render_section",
    "render_webhook",
    "webhook_lines",
]

MAX_FILE_BYTES = 32 * 1024
MAX_FILE_LINES = 2000
_LEVELS = (
    # descriptions whole (Markdown kept) first; shortened only when the file would not fit a read
    {"desc": 300, "full": True, "fields": 25, "errors": 8, "enum": 12, "optional": True},
    {"desc": 300, "fields": 25, "errors": 8, "enum": 12, "optional": True},
    {"desc": 140, "fields": 12, "errors": 5, "enum": 6, "optional": True},
    {"desc": 80, "fields": 6, "errors": 3, "enum": 4, "optional": False},
    {"desc": 0, "fields": 0, "errors": 0, "enum": 0, "optional": False},
)


def fits_one_read(text: str) -> bool:
    return len(text.encode()) <= MAX_FILE_BYTES and text.count("\n") + 1 <= MAX_FILE_LINES


def _additions_section(op: Operation) -> list[str]:
    add = op.additions
    lines: list[str] = []
    if add.approval is not None:
        binds = add.approval.get("binds") or []
        bound = f", bound to the values of {', '.join(f'`{b}`' for b in binds)}" if binds else ""
        lines += [
            "",
            f"Gated: a person approves each call before it is sent (risk {add.approval.get('risk', 'high')}{bound}).",
        ]
    if add.identity and op.tool is not None:
        fields = ", ".join(f"`{f}`" for f in add.identity)
        lines += [
            "",
            f"The tool sends an `Idempotency-Key` header derived from {fields}: the same call retried is done once.",
        ]
    if add.prefer:
        lines += ["", f"Prefer `{add.prefer}` instead: a person who knows this API says so."]
    if op.tool is not None and op.tool.headers:
        sent = ", ".join(f"`{k}: {v}`" for k, v in sorted(op.tool.headers.items()))
        lines += ["", f"The tool sends on every call: {sent}."]
    if add.notes:
        lines += ["", "## Notes"]
        for note in add.notes:
            lines += ["", note]
    return lines


def _examples_section(op: Operation) -> list[str]:
    if not op.additions.examples:
        return []
    lines = ["", "## Examples", "Observed calls that worked:"]
    for ex in op.additions.examples:
        lines.append(
            f"- `{json.dumps(ex['arguments'], ensure_ascii=False, sort_keys=True)}` (turn {ex['turn']})"
        )
    return lines


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


def _described(text: str, level: dict[str, Any], limit: int, whole: int = 1500) -> str:
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
    d = _described(desc, level, level["desc"])
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


def _params_section(
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


def _fields_text(
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


def _body_section(op: Operation, level: dict[str, Any]) -> list[str]:
    body = op.body
    if body is None:
        return []
    lines = ["", "## Request body"]
    head = f"{body.content_type or 'unspecified type'}"
    if body.required:
        head += ", required"
    if body.description and level["desc"]:
        head += f" — {_described(body.long_description or body.description, level, level['desc'])}"
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
            lines += _shape_lines(body.schema)
    elif op.tool is not None:
        if op.tool.body_fields:
            lines.append("Its fields are the tool's arguments beside the parameters:")
    elif isinstance(body.schema, dict) and not isinstance(body.schema.get("properties"), dict):
        lines.append(f"Shape: {type_label(body.schema)}.")
    lines += _mark_fixed(op, _fields_text(body.schema, level, body.field_docs))
    lines += _spec_example("The spec's example of this body:", body.example, level)
    return lines


def _has_field(schema: Any, name: str) -> bool:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(props, dict) and name in props


def _shape_lines(schema: Any) -> list[str]:
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


def _spec_example(label: str, value: Any, level: dict[str, Any]) -> list[str]:
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


def _call_section(op: Operation, url: str) -> list[str]:
    lines = [
        "",
        "## The call",
        "Not a tool: skillpress cannot send this request, so there is nothing to load or call here."
        f" Whoever has an HTTP client can: `{op.method} {url}`",
    ]
    if "{" in op.path:
        lines.append("Fill each `{name}` in the URL with the path parameter, percent-encoded.")
    if any(p.location == "query" for p in op.params):
        lines.append("Put query parameters in the query string.")
    if op.body is not None:
        lines.append(
            f"Send the body as `{op.body.content_type or 'application/octet-stream'}` with that Content-Type header."
        )
    if op.not_tool_reason:
        lines.append(f"(No tool because {op.not_tool_reason}.)")
    return lines


def _responses_section(op: Operation, level: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    success = [r for r in op.responses if r.status.startswith("2")]
    redirects = [r for r in op.responses if r.status.startswith("3")]
    errors = [r for r in op.responses if not r.status.startswith(("2", "3"))]
    if success:
        lines += _success_lines(op, success, level)
    for r in redirects[:3]:
        lines.append(
            f"Redirect {r.status}"
            + (f" — {short_text(r.description, 80)}" if r.description else "")
            + " (not followed: the Location header says where)."
        )
    if errors and level["errors"]:
        lines += ["", "## Errors"]
        for r in errors[: level["errors"]]:
            lines.append(
                f"- {r.status}"
                + (
                    f" — {_described(r.long_description or r.description, level, min(level['desc'], 160) or 60, 600)}"
                    if r.description
                    else ""
                )
            )
    return lines


def _success_lines(op: Operation, success: list[Response], level: dict[str, Any]) -> list[str]:
    """The `## Response` section: the first success answer's shape (its fields up to the level's
    cap), how the read pages, and the other success answers by status."""
    r = success[0]
    lines = ["", "## Response"]
    head = f"{r.status}" + (
        f" — {short_text(r.description, level['desc'] or 60)}" if r.description else ""
    )
    lines.append(head)
    if r.status in ("204", "205"):
        pass  # no content, by definition
    elif r.shape_note == "any" and not r.shape:
        lines.append("The body's shape is not declared.")
    elif r.shape_note:
        lines.append(f"Returns {r.shape_note}" + (" with:" if r.shape else "."))
    elif r.shape:
        lines.append("Returns an object with:")
    if r.shape:
        cap = max(level["fields"], 0)
        for name, label in r.shape[:cap]:
            lines.append(f"- `{name}` ({label})")
        if len(r.shape) > cap:
            lines.append(f"- and {len(r.shape) - cap} more fields.")
    paging = op.tool_paging()
    if paging is not None:
        lines.append(paging.line())
    for other in success[1:3]:
        lines.append(
            f"Also {other.status}"
            + (f" — {short_text(other.description, 80)}" if other.description else "")
            + "."
        )
    return lines


def render_operation(
    op: Operation,
    base_url: str | None,
    credential_header: str | None = None,
    types: Mapping[str, Any] | None = None,
) -> str:
    """The operation's file, summarised further (never cut) until it fits one read
    (`credential_header`: where the skill attaches its credential, if it does; `types`: the
    shared types, so an enum type's values are listed where it is used)."""
    url = join_url(op.server_url or base_url, op.path)
    for level in _LEVELS:
        text = _render_operation(op, url, {**level, "types": types}, credential_header)
        if fits_one_read(text):
            return text
    return text


def _render_operation(
    op: Operation, url: str, level: dict[str, Any], credential_header: str | None
) -> str:
    parts: list[str] = []
    front = declaration_block(op, url)
    parts.append(f"# {op.name}\n")
    what = spec_line(op.summary or first_sentence(op.description)) or _humanize(op.name)
    parts.append(what.rstrip(".") + ".")
    if level.get("full"):
        desc = full_text(op.description, 6000)
    else:
        desc = short_text(op.description, level["desc"] * 2) if level["desc"] else ""
    said = what.rstrip(".…")
    if desc.startswith(said):  # the description opens with the summary: the rest is news
        desc = desc[len(said) :].lstrip(".").strip()
    if desc and len(desc) > 3:
        parts.append(f"\n{desc}")
    if op.deprecated:
        parts.append("\nDeprecated: prefer another operation where one exists.")
    if not level.get("full"):
        parts.append("\nDescriptions here are shortened to fit one read; the spec's are longer.")
    if op.tool is not None:
        parts.append(
            f"\nTool: `{op.tool_name}` (call it by that name; the request is built for you)."
        )
        if op.tool.reduced:
            parts.append(
                f"Its argument schema is shortened to fit the tool budget ({op.tool.reduced});"
                " this file describes every field."
            )
    lines = "\n".join(parts).split("\n")
    lines += _additions_section(op)
    if op.tool is None:
        lines += _call_section(op, url)
    lines += _params_section(op, level, credential_header)
    lines += _body_section(op, level)
    lines += _responses_section(op, level)
    lines += _examples_section(op)
    prose = "\n".join(lines).rstrip() + "\n"
    if INVISIBLE.search(prose):  # a name or path that holds one: shown as its escape, never hidden
        prose = INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", prose)
    return (front + "\n" if front else "") + prose


def render_webhook(hook: Webhook) -> str:
    """An event's file: what the API sends to a URL of yours, and its payload (never a tool)."""
    text = ""
    for level in _LEVELS:
        lines = [f"# {spec_line(hook.name)[:200]}", ""]
        what = hook.summary or first_sentence(hook.description)
        if what:
            lines += [what.rstrip(".") + ".", ""]
        desc = full_text(hook.description, 6000) if level.get("full") else ""
        if desc and not desc.startswith(what.rstrip(".…")):
            lines += [desc, ""]
        lines.append(
            f"An event this API sends: a `{hook.method}` to a URL you registered with it (a"
            " webhook). It is not a tool: nothing here sends it, and no call answers it."
        )
        body = hook.body
        if body is not None:
            lines += ["", "## Payload", body.content_type or "unspecified type"]
            if isinstance(body.schema, dict) and not isinstance(
                body.schema.get("properties"), dict
            ):
                lines += _shape_lines(body.schema)
            lines += _fields_text(body.schema, level, body.field_docs)
            lines += _spec_example("The spec's example of this payload:", body.example, level)
        text = "\n".join(lines).rstrip() + "\n"
        if fits_one_read(text):
            return text
    return text


def webhook_lines(hooks: list[Webhook], cap: int = 30) -> list[str]:
    """The body's list of the events the API sends (at most `cap`, then how many more)."""
    if not hooks:
        return []
    lines = [
        "## Events it sends (webhooks, not tools)",
        "It calls a URL of yours with these; each one's payload is in its file, beside this one.",
    ]
    for hook in hooks[:cap]:
        what = first_sentence(without_urls(hook.summary or hook.description), 100).rstrip(".")
        lines.append(
            f"- `{spec_line(hook.name)[:200]}` ({hook.method})"
            + (f" — {what}." if what else ".")
            + f" File: {hook.file}"
        )
    if len(hooks) > cap:
        lines.append(f"- and {len(hooks) - cap} more: " + ", ".join(h.file for h in hooks[cap:]))
    return lines


def _count(n: int) -> str:
    return f"{n} operation" if n == 1 else f"{n} operations"


def _humanize(name: str) -> str:
    return name.replace("_", " ").capitalize()


def op_line(op: Operation) -> str:
    """An operation's line in a listing: its name, what it does, and marks (never its address:
    the listing says once where operation files are)."""
    what = op.summary or first_sentence(op.description, 120) or _humanize(op.name)
    what = first_sentence(without_urls(what), 120).rstrip(".") or _humanize(op.name)
    marks = []
    if op.tool is None:
        marks.append("not callable here")
    if op.deprecated:
        marks.append("deprecated")
    mark = f" ({', '.join(marks)})" if marks else ""
    prefer = f" Prefer `{op.additions.prefer}`." if op.additions.prefer else ""
    return f"- `{op.name}` — {what}.{mark}{prefer}"


def render_category(cat: Category, lines_of: Mapping[str, str] | None = None) -> str:
    """A category's file: its operations one line each (`lines_of`: those lines, by name)."""
    lines = [f"# {spec_line(cat.title)}", ""]
    if cat.description:
        lines += [spec_line(short_text(cat.description, 400)), ""]
    if cat.notes:
        lines += ["## Notes", ""] + [f"{n}\n" for n in cat.notes]
    lines.append(
        f"{_count(len(cat.ops))}. Read an operation's file (<name>.md, beside this one) before calling it."
    )
    lines.append("")
    lines += [lines_of[op.name] if lines_of else op_line(op) for op in cat.ops]
    return "\n".join(lines) + "\n"


def render_section(section: Category, members: list[Category]) -> str:
    """A file of the second level: the categories of one section, for an API whose categories
    do not fit the body even one line each."""
    lines = [f"# {spec_line(section.title)}", ""]
    lines.append(
        f"{_count(sum(len(c.ops) for c in members))} in {len(members)} categories."
        " Read a category's file (<category>.md, beside this one) to see its operations."
    )
    lines.append("")
    lines += [_category_line(cat, 3, 100) for cat in members]
    return "\n".join(lines) + "\n"


def tool_share(tools: int, total: int) -> str:
    if total == 0 or tools == 0:
        return "none"
    if tools == total:
        return "all"
    if tools * 2 >= total:
        return "most"
    return "some"


# how a body lists its categories, tightest last: (examples, description characters); None: a
# paragraph of names and counts
_BODY_LEVELS: tuple[tuple[int, int] | None, ...] = ((3, 100), (2, 80), (1, 60), (0, 0), None)


def render_body(
    meta: dict[str, Any],
    ops: list[Operation],
    categories: list[Category] | None,
    budget: int | None = None,
    sections: list[tuple[Category, list[Category]]] | None = None,
    lines_of: Mapping[str, str] | None = None,
) -> str:
    """The manifest: the operations, or their categories, or (past what the body holds even a
    name each) sections of categories. A list that would pass `budget` bytes is written tighter.
    `lines_of`: the operations' listing lines, by name, when they are made already."""
    head = _body_head(meta, ops)
    events = meta.get("events") or []
    tail = ("\n" + "\n".join(events) + "\n") if events else ""
    if sections:
        lines = [
            "## Sections",
            "Read a section's file (<section>.md, beside this one) to see its categories.",
            *(
                f"- `{sec.name}` — {_count(len(sec.ops))} in {len(members)} categories: {sec.title}."
                for sec, members in sections
            ),
        ]
        return head + "\n".join(lines) + "\n" + tail
    if not categories:
        listed = (lines_of[op.name] if lines_of else op_line(op) for op in ops)
        return head + "\n".join(["## Operations", *listed]) + "\n" + tail
    text = ""
    for level in _BODY_LEVELS:
        lines = [
            "## Categories",
            "Read a category's file (<category>.md, beside this one) to see its operations.",
        ]
        if level is None:
            lines += _name_paragraph(categories)
        else:
            lines += [_category_line(cat, *level) for cat in categories]
        text = head + "\n".join(lines) + "\n" + tail
        if budget is None or len(text.encode()) <= budget:
            return text
    return text


def _body_head(meta: dict[str, Any], ops: list[Operation]) -> str:
    total = len(ops)
    tools = sum(1 for op in ops if op.tool is not None)
    share = tool_share(tools, total)
    lines = [f"# {spec_line(meta['title'])}", ""]
    intro = without_urls(short_text(meta.get("description") or "", 400))
    if intro:
        lines += [intro, ""]
    share_text = {
        "all": f"All of them are tools: {CALL_BY_NAME}",
        "most": f"Most of them ({tools}) are tools: {CALL_BY_NAME}",
        "some": f"Some of them ({tools}) are tools: {CALL_BY_NAME}",
        "none": "None of them is a tool: skillpress cannot send their requests, and each file spells its request out for an HTTP client of your own.",
    }[share]
    lines.append(f"{_count(total)}. {share_text}")
    if share in ("most", "some"):
        lines.append(
            "An operation marked (not callable here) is not a tool: skillpress cannot send it; its file"
            " spells out the request for an HTTP client of your own."
        )
    lines.append("Read an operation's file (<name>.md, beside this one) before you first call it.")
    auth = meta.get("auth") or {}
    if auth.get("header"):
        hint = auth_hint(auth)
        lines.append(f"The credential is attached for you ({hint}); never send one in an argument.")
    if auth.get("operations_unservable"):
        kinds = ", ".join(auth.get("unservable_kinds") or []) or "other schemes"
        lines.append(
            f"{auth['operations_unservable']} operations need authentication this skill cannot attach ({kinds})."
        )
    lines.append("")
    notes = meta.get("skill_notes") or []
    if notes:
        lines.append("## Conventions")
        lines += [f"- {n}" for n in notes]
        lines.append("")
    return "\n".join(lines) + "\n"


def _name_paragraph(categories: list[Category]) -> list[str]:
    """Every category as `name` (count), wrapped: the tightest listing that still names each."""
    lines: list[str] = []
    line = ""
    for cat in categories:
        item = f"`{cat.name}` ({len(cat.ops)})"
        if line and len(line) + len(item) + 2 > 100:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {item}" if line else item
    if line:
        lines.append(line + ".")
    return lines


def _category_line(cat: Category, examples: int, chars: int) -> str:
    desc = first_sentence(without_urls(cat.description), chars) if cat.description and chars else ""
    tail = f" {desc.rstrip('.')}." if desc else ""
    if cat.parent is not None and cat.title != cat.name:
        tail = f" {cat.title}.{tail}"
    names = ", ".join(op.name for op in cat.ops[:examples])
    return f"- `{cat.name}` — {_count(len(cat.ops))}.{tail}" + (
        f" For example {names}." if names else ""
    )
