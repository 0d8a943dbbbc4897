"""Render the files of a skill package: the body, category files and operation files."""

from __future__ import annotations

import json
from typing import Any

from services.derive.categories import Category
from services.derive.frontmatter import declaration_block, path_template_names
from services.derive.model import Operation, Param
from services.derive.schema import type_label
from services.derive.servers import join_url
from services.derive.text import first_sentence, short_text, without_urls

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILE_LINES",
    "fits_one_read",
    "render_operation",
    "render_category",
    "render_body",
    "op_line",
]

MAX_FILE_BYTES = 32 * 1024
MAX_FILE_LINES = 2000
_LEVELS = (
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


def _constraints(schema: Any, level: dict[str, Any]) -> str:
    if not isinstance(schema, dict):
        return ""
    bits: list[str] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and level["enum"]:
        shown = ", ".join(f"`{v}`" if v is not None else "null" for v in enum[: level["enum"]])
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
    if (
        "maxLength" in schema or schema.get("minLength", 0) > 1
    ):  # non-empty (1–∞) goes without saying
        bits.append(f"length {schema.get('minLength', 0)}–{schema.get('maxLength', '∞')}")
    if "maxItems" in schema or "minItems" in schema:
        bits.append(f"{schema.get('minItems', 0)}–{schema.get('maxItems', '∞')} items")
    if isinstance(schema.get("pattern"), str) and len(schema["pattern"]) <= 80:
        bits.append(f"pattern `{schema['pattern']}`")
    if (
        "default" in schema
        and isinstance(schema["default"], (str, int, float, bool))
        and len(str(schema["default"])) <= 40
    ):
        bits.append(f"default `{json.dumps(schema['default'])}`")
    return "; ".join(bits)


def _param_line(
    name: str, schema: Any, required: bool, where: str, desc: str, level: dict[str, Any]
) -> str:
    label = type_label(schema)
    text = f"- `{name}` ({label}, {'required' if required else 'optional'}{', ' + where if where else ''})"
    d = short_text(desc, level["desc"]) if desc and level["desc"] else ""
    c = _constraints(schema, level)
    if d:
        text += f" — {d}"
    if c:
        text += f" [{c}]"
    return text


def _params_section(op: Operation, level: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    sent = [
        p
        for p in op.params
        if p.location in ("path", "query") and p.name not in op.credential_fields
    ]
    required = [p for p in sent if p.required]
    optional = [p for p in sent if not p.required]
    described = [p for p in optional if p.description]
    undescribed = [p for p in optional if not p.description]
    declared_path = {p.name for p in op.params if p.location == "path"}
    implicit = [n for n in path_template_names(op.path) if n not in declared_path]
    if required or described or implicit or undescribed:
        lines += ["", "## Parameters"]
    for name in implicit:
        lines.append(_param_line(name, {"type": "string"}, True, "path", "", level))
    for p in required:
        lines.append(
            _param_line(p.name, p.schema, True, p.location, p.description or _desc(p), level)
        )
    if level["optional"]:
        for p in described:
            lines.append(_param_line(p.name, p.schema, False, p.location, p.description, level))
    if undescribed or (described and not level["optional"]):
        rest = undescribed + ([] if level["optional"] else described)
        names = ", ".join(f"`{p.name}`" for p in rest[:20]) + (", …" if len(rest) > 20 else "")
        lines.append(f"- Also optional, effect not described: {names}.")
    hidden: list[Param] = [
        p for p in op.params if p.location in ("header", "cookie") or p.name in op.credential_fields
    ]
    if hidden:
        lines += [
            "",
            "Headers and cookies the tool does not send (credentials are attached for you):"
            if op.tool
            else "Headers and cookies (credentials are attached for you; never send one yourself):",
        ]
        for p in hidden:
            lines.append(
                _param_line(p.name, p.schema, p.required, p.location, p.description, level)
            )
    return _mark_fixed(op, lines)


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


def _fields_text(schema: Any, level: dict[str, Any]) -> list[str]:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    props: dict[str, Any] = schema["properties"]
    req = [r for r in schema.get("required", []) if r in props]
    opt = [k for k in props if k not in req]
    lines: list[str] = []
    cap = max(level["fields"], 0)
    for name in req:
        lines.append(_param_line(name, props[name], True, "", _schema_desc(props[name]), level))
    for name in opt[:cap]:
        lines.append(_param_line(name, props[name], False, "", _schema_desc(props[name]), level))
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
        head += f" — {short_text(body.description, level['desc'])}"
    lines.append(head)
    if body.other_types:
        lines.append("Also accepted: " + ", ".join(f"`{t}`" for t in body.other_types[:6]) + ".")
    if op.tool is not None and op.tool.body_arg:
        what = (
            "its fields" if op.tool.content_type.endswith("form-urlencoded") else "the whole body"
        )
        lines.append(f"The argument `{op.tool.body_arg}` is {what}.")
        if isinstance(body.schema, dict) and not isinstance(body.schema.get("properties"), dict):
            lines.append(f"Shape: {type_label(body.schema)}.")
    elif op.tool is not None:
        if op.tool.body_fields:
            lines.append("Its fields are the tool's arguments beside the parameters:")
    elif isinstance(body.schema, dict) and not isinstance(body.schema.get("properties"), dict):
        lines.append(f"Shape: {type_label(body.schema)}.")
    lines += _mark_fixed(op, _fields_text(body.schema, level))
    return lines


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
    errors = [r for r in op.responses if not r.status.startswith("2")]
    if success:
        r = success[0]
        lines += ["", "## Response"]
        head = f"{r.status}" + (
            f" — {short_text(r.description, level['desc'] or 60)}" if r.description else ""
        )
        lines.append(head)
        if r.shape_note:
            lines.append(f"Returns {r.shape_note}" + (" with:" if r.shape else "."))
        elif r.shape:
            lines.append("Returns an object with:")
        if r.shape:
            cap = max(level["fields"], 0)
            for name, label in r.shape[:cap]:
                lines.append(f"- `{name}` ({label})")
            if len(r.shape) > cap:
                lines.append(f"- and {len(r.shape) - cap} more fields.")
        for other in success[1:3]:
            lines.append(
                f"Also {other.status}"
                + (f" — {short_text(other.description, 80)}" if other.description else "")
                + "."
            )
    if errors and level["errors"]:
        lines += ["", "## Errors"]
        for r in errors[: level["errors"]]:
            lines.append(
                f"- {r.status}"
                + (
                    f" — {short_text(r.description, min(level['desc'], 160) or 60)}"
                    if r.description
                    else ""
                )
            )
    return lines


def render_operation(op: Operation, base_url: str | None) -> str:
    """The operation's file, summarised further (never cut) until it fits one read."""
    url = join_url(op.server_url or base_url, op.path)
    for level in _LEVELS:
        text = _render_operation(op, url, level)
        if fits_one_read(text):
            return text
    return text


def _render_operation(op: Operation, url: str, level: dict[str, Any]) -> str:
    parts: list[str] = []
    front = declaration_block(op, url)
    if front:
        parts.append(front)
    parts.append(f"# {op.name}\n")
    what = op.summary or first_sentence(op.description) or _humanize(op.name)
    parts.append(what.rstrip(".") + ".")
    desc = short_text(op.description, level["desc"] * 2) if level["desc"] else ""
    if desc and desc.rstrip(".") != what.rstrip(".") and not desc.startswith(what.rstrip(".…")):
        parts.append(f"\n{desc}")
    if op.deprecated:
        parts.append("\nDeprecated: prefer another operation where one exists.")
    if op.tool is not None:
        parts.append(
            f"\nTool: `{op.tool_name}` (load it by this file's name with load_tools; the request is built for you)."
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
    lines += _params_section(op, level)
    lines += _body_section(op, level)
    lines += _responses_section(op, level)
    lines += _examples_section(op)
    return "\n".join(lines).rstrip() + "\n"


def _count(n: int) -> str:
    return f"{n} operation" if n == 1 else f"{n} operations"


def _humanize(name: str) -> str:
    return name.replace("_", " ").capitalize()


def op_line(op: Operation, slug: str) -> str:
    what = op.summary or first_sentence(op.description, 120) or _humanize(op.name)
    what = first_sentence(without_urls(what), 120).rstrip(".") or _humanize(op.name)
    marks = []
    if op.tool is None:
        marks.append("not callable here")
    if op.deprecated:
        marks.append("deprecated")
    mark = f" ({', '.join(marks)})" if marks else ""
    prefer = f" Prefer `{op.additions.prefer}`." if op.additions.prefer else ""
    return f"- `{op.name}` — {what}.{mark}{prefer} Detail: skill/{slug}/{op.name}.md"


def render_category(cat: Category, slug: str, children: list[Category] | None = None) -> str:
    lines = [f"# {cat.title}", ""]
    if cat.description:
        lines += [short_text(cat.description, 400), ""]
    if cat.notes:
        lines += ["## Notes", ""] + [f"{n}\n" for n in cat.notes]
    if children:
        total = sum(len(c.ops) for c in children)
        lines.append(
            f"{_count(total)} in {len(children)} subcategories: read a subcategory's file to see its operations."
        )
        lines.append("")
        for child in children:
            names = ", ".join(op.name for op in child.ops[:3])
            lines.append(
                f"- `{child.name}` — {_count(len(child.ops))}. For example {names}. Detail: skill/{slug}/{child.name}.md"
            )
        return "\n".join(lines) + "\n"
    lines.append(f"{_count(len(cat.ops))}. Read an operation's file before calling it.")
    lines.append("")
    lines += [op_line(op, slug) for op in cat.ops]
    return "\n".join(lines) + "\n"


def tool_share(tools: int, total: int) -> str:
    if total == 0 or tools == 0:
        return "none"
    if tools == total:
        return "all"
    if tools * 2 >= total:
        return "most"
    return "some"


def render_body(
    meta: dict[str, Any],
    ops: list[Operation],
    categories: list[Category] | None,
    budget: int | None = None,
    examples: int = 3,
    desc_chars: int = 100,
) -> str:
    """The manifest. A list of categories that would pass `budget` bytes is written tighter."""
    slug = meta["slug"]
    title = meta["title"]
    total = len(ops)
    tools = sum(1 for op in ops if op.tool is not None)
    share = tool_share(tools, total)
    lines = [f"# {title}", ""]
    intro = without_urls(short_text(meta.get("description") or "", 400))
    if intro:
        lines += [intro, ""]
    share_text = {
        "all": "All of them are tools",
        "most": f"Most of them ({tools}) are tools",
        "some": f"Some of them ({tools}) are tools",
        "none": "None is a tool",
    }[share]
    lines.append(
        f"{_count(total)}. {share_text}: load one by its name with load_tools and call it; the request is built for you."
    )
    if share != "all":
        lines.append(
            "An operation marked (not callable here) is not a tool: skillpress cannot send it; its file"
            " spells out the request for an HTTP client of your own."
        )
    lines.append(f"Read an operation's file before you first call it: skill/{slug}/<name>.md.")
    auth = meta.get("auth") or {}
    if auth.get("header"):
        lines.append(
            f"Credentials are attached for you (header `{auth['header']}`); never send one in an argument."
        )
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
    if categories:
        lines.append("## Categories")
        lines.append(f"Read a category's file to see its operations: skill/{slug}/<category>.md")
        for cat in categories:
            if cat.parent is not None:
                continue
            lines.append(_category_line(cat, categories, examples, desc_chars))
    else:
        lines.append("## Operations")
        lines += [op_line(op, slug) for op in ops]
    text = "\n".join(lines) + "\n"
    if categories and budget is not None and len(text.encode()) > budget and examples > 0:
        # over the budget: fewer examples and shorter descriptions per category, then none
        fewer = {3: (2, 80), 2: (1, 60), 1: (0, 0)}[examples]
        return render_body(meta, ops, categories, budget, *fewer)
    return text


def _category_line(cat: Category, categories: list[Category], examples: int, chars: int) -> str:
    members = cat.ops or [op for c in categories if c.parent == cat.name for op in c.ops]
    desc = first_sentence(without_urls(cat.description), chars) if cat.description and chars else ""
    tail = f" {desc.rstrip('.')}." if desc else ""
    names = ", ".join(op.name for op in members[:examples])
    return f"- `{cat.name}` — {_count(len(members))}.{tail}" + (
        f" For example {names}." if names else ""
    )
