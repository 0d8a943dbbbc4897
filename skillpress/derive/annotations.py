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
from dataclasses import dataclass, field, replace
from typing import Any

from skillpress.derive.annotation_shapes import (
    KINDS,
    Annotation,
    AnnotationRefused,
    auto_currency_missing,
    check_shape,
    operation_target,
)
from skillpress.derive.model import Operation
from skillpress.format.declaration import APPROVAL_KEYS, RISKS, path_matches
from skillpress.format.declaration import FORM_BODY as FORM

__all__ = [
    "KINDS",
    "Annotation",
    "AnnotationRefused",
    "Applied",
    "apply_annotations",
    "auto_currency_missing",
    "check_shape",
    "operation_target",
]


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
    credential: Annotation | None = None  # the skill's credential, as a person set it


def _sent_fields(op: Operation) -> list[str]:
    if op.tool is None:
        return [p.name for p in op.params if p.location in ("path", "query")]
    return [*op.tool.path_params, *op.tool.query, *op.tool.header, *op.tool.body_fields]


def _bindable(op: Operation) -> list[str]:
    """What a gate on `op` binds unless it names fewer: every argument its call sends."""
    if op.tool is None:
        return [p.name for p in op.params if p.location == "path"]
    return [a for a in _sent_fields(op) if a not in op.tool.fixed]


def _laxness(a: Annotation) -> tuple[float, int, str]:
    """How much a gate lets through on its own: none without `auto_below`, more the higher it is;
    a lower risk is laxer; the id settles a tie (never an accident of order)."""
    below = a.body.get("auto_below")
    risk = str(a.body.get("risk", "high"))
    at = RISKS.index(risk) if risk in RISKS else len(RISKS)
    return (float(below) if isinstance(below, (int, float)) else -1.0, -at, a.id)


def _one_gate(a: Annotation, held: Annotation, name: str, strict: bool, out: Applied) -> bool:
    """One gate per operation: a second is refused where it is added (`strict`); two already
    in force (from an earlier release) keep the stricter, said in the warnings. True when `a`
    replaces `held`."""
    if strict:
        kept = _the_one_stored(a, held)
        raise AnnotationRefused(
            f"{name} is gated already (approval {kept.id}); two gates on one operation would"
            " leave which one holds to chance: retire that one first, then add this one"
        )
    stricter, laxer = sorted((a, held), key=_laxness)
    out.warnings.append(
        f"approvals {held.id} and {a.id} both gate {name}: the stricter, {stricter.id}, holds;"
        f" {laxer.id} is superseded (retire it)"
    )
    if stricter is held:
        out.applied.append(a.id)
    return stricter is a


def _the_one_stored(a: Annotation, b: Annotation) -> Annotation:
    """Of two annotations that clash where one is being added (its id `(new)`, sorted first),
    the one already stored: the one a refusal names."""
    return b if a.id == "(new)" else a


def _one_credential(a: Annotation, out: Applied, strict: bool) -> None:
    """One credential per skill: a second is refused where it is added (`strict`); two already
    in force keep the first by id, said in the warnings (never a silent order)."""
    held = out.credential
    if held is None:
        out.credential = a
        out.applied.append(a.id)
        return
    if strict:
        kept = _the_one_stored(a, held)
        raise AnnotationRefused(
            f"the skill's credential is set already (credential {kept.id}): retire that one"
            " first, then add this one"
        )
    out.warnings.append(
        f"credentials {held.id} and {a.id} both set the skill's credential: {held.id} holds;"
        f" {a.id} is superseded (retire it)"
    )


def _approval(a: Annotation, op: Operation, strict: bool, out: Applied) -> dict[str, Any] | None:
    body = a.body
    method, path = body["matches"].split()
    problem = None
    if method.upper() != op.method or not path_matches(path, op.path):
        problem = f"approval {a.id}: matches {body['matches']!r}, but {op.name} is {op.method} {op.path}; a gate must match its operation"
    bindable = _bindable(op)
    binds = [b for b in body.get("binds") or bindable if isinstance(b, str)]
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
    gates: dict[str, Annotation] = {}  # operation → the approval rule that gates it
    hidden: set[str] = set()
    for a in sorted(annotations, key=lambda x: x.id):
        check_shape(a.kind, a.target, a.body)
        if a.kind == "skill_note":
            out.skill_notes.append(a.body["text"].strip())
            out.applied.append(a.id)
            continue
        if a.kind == "credential":
            _one_credential(a, out, strict)
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
            if op.name in gates and not _one_gate(a, gates[op.name], op.name, strict, out):
                continue
            add.approval = _approval(a, op, strict, out)
            gates[op.name] = a
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
    from skillpress.derive.categories import Category

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
