"""People's annotations as inputs to the derivation: each kind changes exactly one thing.

An annotation is keyed on what the spec names — the skill, a category by its tag, an operation
by the name the skill shows it under — never on a place in the document, so it survives a
revision that reorders or rewrites everything else. One whose operation is gone is *orphaned*:
kept, reported, never dropped. Checking an annotation (`strict`) refuses what cannot be meant
(a hidden operation with a gate, a gate that matches another operation, an identity naming no
field); deriving later with a changed spec degrades instead and says so.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from skillpress.services.derive.frontmatter import APPROVAL_KEYS, RISKS, path_matches
from skillpress.services.derive.frontmatter import FORM_BODY as FORM
from skillpress.services.derive.model import Operation
from skillpress.services.errors import Refused

__all__ = [
    "KINDS",
    "Annotation",
    "AnnotationRefused",
    "Applied",
    "apply_annotations",
    "check_shape",
    "operation_target",
]

KINDS = (
    "note",
    "prefer",
    "hidden",
    "approval",
    "example",
    "skill_note",
    "identity",
    "fixed",
    "style",
    "category",
    "workflow",
)
_HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


class AnnotationRefused(ValueError, Refused):
    """An annotation that cannot be applied as meant; the message says what to fix."""

    problem = "annotation-refused"


@dataclass(frozen=True)
class Annotation:
    id: str
    kind: str
    target: str  # "skill" | "category:<tag>" | "operation:<name>"
    body: dict[str, Any]

    @property
    def operation(self) -> str | None:
        return operation_target(self.target)


def operation_target(target: str) -> str | None:
    return target.split(":", 1)[1] if target.startswith("operation:") else None


def auto_currency_missing(rule: Mapping[str, Any]) -> str | None:
    """Why an approval rule's `auto_below` could never approve anything: it reads the call's
    currency (`currency`) but names none it is in (`auto_currency`), and an amount in a currency
    the gate did not name is never automatic. None when the rule is whole."""
    if rule.get("auto_below") is None or not rule.get("currency") or rule.get("auto_currency"):
        return None
    return (
        f"auto below {rule['auto_below']:g} reads the currency from {rule['currency']!r} but"
        " names none it is in, so no call would ever be approved automatically: say which"
        " currency the threshold is in (auto_currency, like EUR), or leave currency out"
    )


def check_shape(kind: str, target: str, body: dict[str, Any]) -> None:
    """Refuse what is malformed whatever the spec says (the shape of one annotation)."""
    # size: one branch per annotation kind's shape, each refusal naming its field
    if kind not in KINDS:
        raise AnnotationRefused(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    on_op = target.startswith("operation:") and len(target) > len("operation:")
    if kind in ("skill_note", "category", "workflow"):
        if target != "skill":
            raise AnnotationRefused(
                f"a {kind} annotation is about the whole skill; give no operation"
            )
    elif kind == "note" and target.startswith("category:") and len(target) > len("category:"):
        pass  # a note on a category, by its tag (or name)
    elif not on_op:
        raise AnnotationRefused(f"a {kind} annotation names an operation (--operation NAME)")
    text_kinds = {"note": "text", "skill_note": "text"}
    if kind in text_kinds and (
        not isinstance(body.get("text"), str)
        or not body["text"].strip()
        or len(body["text"]) > 4000
    ):
        raise AnnotationRefused(f"a {kind} needs text (at most 4,000 characters)")
    if kind == "prefer" and (not isinstance(body.get("operation"), str) or not body["operation"]):
        raise AnnotationRefused("prefer names the operation to use instead")
    if kind == "identity":
        fields = body.get("fields")
        if (
            not isinstance(fields, list)
            or not fields
            or not all(isinstance(f, str) and f for f in fields)
        ):
            raise AnnotationRefused(
                "an identity names the fields that make two writes the same; it names no field"
            )
    if kind == "approval":
        matches = body.get("matches")
        if not isinstance(matches, str) or len(matches.split()) != 2:
            raise AnnotationRefused("an approval's matches reads like 'DELETE /invoices/{id}'")
        if body.get("risk", "high") not in RISKS:
            raise AnnotationRefused(f"risk is one of {', '.join(RISKS)}")
        if (why := auto_currency_missing(body)) is not None:
            raise AnnotationRefused(why)
    if kind == "example" and (
        not isinstance(body.get("arguments"), dict)
        or not isinstance(body.get("turn"), str)
        or not body["turn"]
    ):
        raise AnnotationRefused(
            "an example is an observed call: its arguments (a JSON object) and the turn it came from"
        )
    if kind == "category":
        sources = body.get("merge") if "merge" in body else [body.get("rename")]
        to = body.get("to")
        if (
            not isinstance(sources, list)
            or not sources
            or not all(isinstance(x, str) and x for x in sources)
        ):
            raise AnnotationRefused(
                "a category annotation renames one category (rename: old, to: new) or merges several (merge: [a, b], to: c)"
            )
        if not isinstance(to, str) or not re.match(r"^[a-z][a-z0-9_]{1,47}$", to):
            raise AnnotationRefused(
                f"category name {to!r} is not 2-48 lowercase letters, digits and underscores starting with a letter"
            )
    if kind == "workflow":
        flow = body.get("workflow")
        if not isinstance(flow, dict) or not isinstance(flow.get("name"), str) or not flow["name"]:
            raise AnnotationRefused("a workflow annotation carries one workflow (with its name)")
    if kind == "style":
        from skillpress.services.derive.frontmatter import STYLES

        if not isinstance(body.get("name"), str) or not body["name"]:
            raise AnnotationRefused("a style names a query parameter (or form field): NAME=STYLE")
        if body.get("style") not in STYLES:
            raise AnnotationRefused(
                f"style {body.get('style')!r} is not one of {', '.join(STYLES)}"
            )
    if kind == "fixed":
        name = body.get("name")
        where = body.get("in", "argument")
        if not isinstance(name, str) or not name or where not in ("argument", "header"):
            raise AnnotationRefused(
                "fixed names an argument (or a header, with in: header) and its value"
            )
        if "value" not in body:
            raise AnnotationRefused(f"fixed {name}: give the value sent on every call")
        if where == "header" and not _HEADER.match(name):
            raise AnnotationRefused(f"{name!r} is not a header name")


@dataclass
class Applied:
    """What applying annotations did: the orphans, the hidden, the skill's notes, what was said."""

    orphaned: list[str] = field(default_factory=list)  # annotation ids whose operation is gone
    hidden: list[str] = field(default_factory=list)
    skill_notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    category_changes: list[Annotation] = field(default_factory=list)
    workflows: list[dict[str, Any]] = field(default_factory=list)  # written to workflows.yaml
    category_notes: list[Annotation] = field(default_factory=list)
    undeclared: dict[str, str] = field(
        default_factory=dict
    )  # operation → why its call is not declared


def _sent_fields(op: Operation) -> list[str]:
    if op.tool is None:
        return [p.name for p in op.params if p.location in ("path", "query")]
    return [*op.tool.path_params, *op.tool.query, *op.tool.header, *op.tool.body_fields]


def _bindable(op: Operation) -> list[str]:
    """What a gate on `op` binds unless it names fewer: every argument its call sends."""
    if op.tool is None:
        return [p.name for p in op.params if p.location == "path"]
    return [a for a in _sent_fields(op) if a not in op.tool.fixed]


def _approval(a: Annotation, op: Operation, strict: bool, out: Applied) -> dict[str, Any] | None:
    body = a.body
    method, path = body["matches"].split()
    problem = None
    if method.upper() != op.method or not path_matches(path, op.path):
        problem = f"approval {a.id}: matches {body['matches']!r}, but {op.name} is {op.method} {op.path}; a gate must match its operation"
    bindable = _bindable(op)
    binds = [b for b in body.get("binds") or bindable if isinstance(b, str)]
    if problem is None and not bindable:
        problem = f"approval {a.id}: {op.name} sends no argument, so a gate has nothing to bind"
    missing = [b for b in binds if b not in bindable]
    if problem is None and missing:
        problem = f"approval {a.id}: binds {', '.join(missing)}, which {op.name} does not send"
    for key in ("amount", "currency"):
        value = body.get(key)
        if (
            problem is None
            and value is not None
            and (op.tool is None or str(value).split(".")[0] not in op.tool.body_fields)
        ):
            problem = f"approval {a.id}: {key} {value!r} is not a body field of {op.name}"
    if problem is not None:
        if strict:
            raise AnnotationRefused(problem)
        out.warnings.append(
            problem + "; the rule is kept as written and the operation is left undeclared"
        )
        out.undeclared[op.name] = (
            "a person's approval rule does not fit it, so the call is not declared"
        )
        return {k: v for k, v in body.items() if k in APPROVAL_KEYS}
    rule: dict[str, Any] = {
        "matches": f"{method.upper()} {path}",
        "risk": body.get("risk", "high"),
        "binds": binds,
    }
    for key in ("amount", "currency", "auto_below", "auto_currency"):
        if body.get(key) is not None:
            rule[key] = body[key]
    return rule


def _own_copy(op: Operation) -> Operation:
    """`op` with additions and tool of its own, so applying annotations leaves the input as it was."""
    tool = op.tool
    if tool is not None:
        tool = replace(
            tool,
            schema=copy.deepcopy(tool.schema),
            fixed=dict(tool.fixed),
            headers=dict(tool.headers),
            header=list(tool.header),
            sent_as=dict(tool.sent_as),
            styles=dict(tool.styles),
        )
    return replace(op, additions=copy.deepcopy(op.additions), tool=tool)


def _fixed(a: Annotation, op: Operation, strict: bool, out: Applied) -> None:
    name, value = a.body["name"], a.body["value"]
    if a.body.get("in") == "header":
        if op.tool is None:
            out.warnings.append(
                f"fixed {a.id}: {op.name} is not a tool, so there is no call to add header {name} to"
            )
            return
        op.tool.headers[name] = str(value)
        for arg in [h for h in op.tool.header if op.tool.sent_as.get(h, h).lower() == name.lower()]:
            op.tool.header.remove(arg)  # the header the model could set is fixed now
            op.tool.sent_as.pop(arg, None)
            _drop_argument(op, arg)
        return
    props = op.tool.schema.get("properties", {}) if op.tool is not None else {}
    if op.tool is None or name not in props:
        problem = f"fixed {a.id}: {op.name} has no argument {name!r} to fix"
        if strict:
            raise AnnotationRefused(problem)
        out.warnings.append(problem + "; dropped from this version")
        return
    wrong = _misfit(value, props[name])
    if wrong:
        problem = f"fixed {a.id}: {op.name}'s {name!r} {wrong}"
        if strict:
            raise AnnotationRefused(problem)
        out.warnings.append(problem + "; dropped from this version")
        return
    op.tool.fixed[name] = value
    _drop_argument(op, name)


def _style(a: Annotation, op: Operation, strict: bool, out: Applied) -> None:
    """How a query parameter (or a form field) is written, where the spec's own form is not what
    the API reads (a person who knows it says `sort_by` goes as `sort_by[field]=desc`)."""
    name, style = a.body["name"], a.body["style"]
    written = op.tool is not None and (
        name in op.tool.query or (op.tool.content_type == FORM and name in op.tool.body_fields)
    )
    if op.tool is None or not written:
        problem = f"style {a.id}: {op.name} has no query parameter or form field {name!r}"
        if strict:
            raise AnnotationRefused(problem)
        out.warnings.append(problem + "; dropped from this version")
        return
    if style == "form":
        op.tool.styles.pop(name, None)
    else:
        op.tool.styles[name] = style


def _drop_argument(op: Operation, name: str) -> None:
    """`name` is no longer the model's to give: out of the tool's properties and required."""
    assert op.tool is not None
    op.tool.schema.get("properties", {}).pop(name, None)
    required = op.tool.schema.get("required")
    if isinstance(required, list) and name in required:
        required.remove(name)
        if not required:
            op.tool.schema.pop("required")


def _unref(schema: Any) -> Any:
    """The schema with each shared-type reference taken as 'anything' (a fixed value is held to
    what the argument's own schema says; the types it shares are checked when it is sent)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return {}
        return {k: _unref(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_unref(v) for v in schema]
    return schema


def _misfit(value: Any, schema: Any) -> str | None:
    """Why `value` is not one the argument's schema takes, or None."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        check = Draft202012Validator(
            _unref(schema), format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        error = next(iter(check.iter_errors(value)), None)
    except SchemaError:
        return None
    if error is None:
        return None
    return f"takes no {json.dumps(value, ensure_ascii=False)[:80]}: {error.message[:200]}"


def apply_annotations(
    ops: list[Operation], annotations: tuple[Annotation, ...], strict: bool = False
) -> tuple[list[Operation], Applied]:
    """The operations with the annotations applied (hidden ones left out), and what happened."""
    # size: one branch per annotation kind, applied in a fixed order
    out = Applied()
    targeted = {a.operation for a in annotations if a.operation is not None}
    ops = [_own_copy(op) if op.name in targeted else op for op in ops]
    by_name = {op.name: op for op in ops}
    gated: set[str] = set()
    hidden: set[str] = set()
    for a in sorted(annotations, key=lambda x: x.id):
        check_shape(a.kind, a.target, a.body)
        if a.kind == "skill_note":
            out.skill_notes.append(a.body["text"].strip())
            out.applied.append(a.id)
            continue
        if a.kind == "workflow":  # the package carries it; the runtime checks and runs it
            out.workflows.append(a.body["workflow"])
            out.applied.append(a.id)
            continue
        if a.kind == "category":  # applied to the grouping, once it is decided
            out.category_changes.append(a)
            out.applied.append(a.id)
            continue
        if a.target.startswith("category:"):  # placed once the categories are known
            out.category_notes.append(a)
            continue
        name = a.operation
        op = by_name.get(name or "")
        if op is None:
            if strict:
                raise AnnotationRefused(f"{a.kind} {a.id}: the skill has no operation {name!r}")
            out.orphaned.append(a.id)
            continue
        add = op.additions
        if a.kind == "note":
            add.notes.append(a.body["text"].strip())
        elif a.kind == "prefer":
            other = a.body["operation"]
            if other not in by_name or other == op.name:
                problem = f"prefer {a.id}: {op.name} cannot prefer {other!r}: the skill has no such other operation"
                if strict:
                    raise AnnotationRefused(problem)
                out.warnings.append(problem)
                continue
            add.prefer = other
        elif a.kind == "hidden":
            hidden.add(op.name)
        elif a.kind == "approval":
            add.approval = _approval(a, op, strict, out)
            gated.add(op.name)
        elif a.kind == "example":
            add.examples.append({"arguments": a.body["arguments"], "turn": a.body["turn"]})
        elif a.kind == "identity":
            sent = _sent_fields(op)
            kept = [f for f in a.body["fields"] if f in sent]
            gone = [f for f in a.body["fields"] if f not in sent]
            if gone:
                problem = f"identity {a.id}: {op.name} no longer sends {', '.join(gone)}"
                if strict and not kept:
                    raise AnnotationRefused(
                        f"identity {a.id}: names no field {op.name} sends ({', '.join(gone)}); it sends {', '.join(sent) or 'nothing'}"
                    )
                out.warnings.append(
                    problem
                    + (
                        "; left out of its identity"
                        if kept
                        else "; the identity names no field and is left out"
                    )
                )
            add.identity = kept
        elif a.kind == "fixed":
            _fixed(a, op, strict, out)
        elif a.kind == "style":
            _style(a, op, strict, out)
        out.applied.append(a.id)
    both = sorted(hidden & gated)
    if both:
        raise AnnotationRefused(
            f"{both[0]} is both hidden and gated: hiding leaves its file out, and the gate lives in that file."
            " An operation that must not be called is gated, not hidden: retire one of the two"
        )
    out.hidden = sorted(hidden)
    return [
        replace(op, tool=None, tool_name=None, not_tool_reason=out.undeclared[op.name])
        if op.name in out.undeclared and op.tool is not None
        else op
        for op in ops
        if op.name not in hidden
    ], out


def regroup(
    categories: list[Any], changes: list[Annotation], op_names: set[str], warnings: list[str]
) -> list[Any]:
    """Categories renamed or merged as people said, by name, whatever grouped them (tags, a model, paths)."""
    from skillpress.services.derive.categories import Category

    cats: list[Category] = list(categories)
    for a in changes:
        sources = a.body["merge"] if "merge" in a.body else [a.body["rename"]]
        to = a.body["to"]
        found = [c for c in cats if c.name in sources]
        if not found:
            warnings.append(
                f"category {a.id}: no category named {', '.join(sources)} in this grouping; kept for when there is"
            )
            continue
        if to in op_names or any(c.name == to for c in cats if c not in found):
            warnings.append(
                f"category {a.id}: {to!r} is already an operation's or another category's name; not applied"
            )
            continue
        merged = Category(
            to,
            to.replace("_", " ").capitalize()
            if len(found) > 1 or found[0].title == found[0].name
            else found[0].title,
            found[0].description,
            [op for c in found for op in c.ops],
        )
        at = cats.index(found[0])
        cats = [c for c in cats if c not in found]
        cats.insert(at, merged)
    return cats


def place_category_notes(categories: list[Any], notes: list[Annotation], applied: Applied) -> None:
    """Each category note into the category its tag names (by tag, else by name); orphaned if none does."""
    for a in notes:
        key = a.target.split(":", 1)[1]
        cat = next((c for c in categories if c.title == key), None) or next(
            (c for c in categories if c.name == key), None
        )
        if cat is None:
            applied.orphaned.append(a.id)
            continue
        cat.notes.append(a.body["text"].strip())
        applied.applied.append(a.id)
