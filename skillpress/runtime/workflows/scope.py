"""What a workflow's steps may read and where they may go, checked at load: every template and
saved value in scope where a step reads it, an on_failure only forward, no step a run can never
reach, no workflow that calls itself round."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from skillpress.format.declaration import TEMPLATE
from skillpress.runtime.package.model import PackageError, Skill, UnknownOperation
from skillpress.runtime.workflows.model import (
    Step,
    Workflow,
    WorkflowRefused,
)
from skillpress.runtime.workflows.model import walk as walk_steps

__all__ = ["UNREAD", "WORKFLOWS_FILE"]


WORKFLOWS_FILE = "workflows.yaml"
# a parameter's mark that no step reads it and that it is declared so on purpose: an Arazzo
# document's input kept as written (a caller following the document gives it; none of it is sent)
UNREAD = "x-skillpress-unread"


_TEMPLATE = TEMPLATE  # a workflow's `{{name}}`, `{{saved.path}}`


def _nearest(target: str, owner: Skill | None) -> str:
    """ "; did you mean `get_item`?" for a misspelled operation (`get_itme`), or nothing."""
    if owner is None:
        return ""
    prefix, _, bare = target.rpartition(".")
    names = sorted(t.operation for t in owner.tools)
    near = difflib.get_close_matches(bare, names, n=1, cutoff=0.6)
    return f"; did you mean `{prefix + '.' if prefix else ''}{near[0]}`?" if near else ""


def _refuse(where: str, why: str) -> WorkflowRefused:
    return WorkflowRefused(f"{WORKFLOWS_FILE}: {where}: {why}")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _templates_only(value: Any, where: str) -> None:
    """Templates are substitution only: whatever `{{`/`}}` is left once every `{{name.path}}` is
    taken out (an expression, a filter, an unclosed brace) is refused, never sent literally."""
    for text in _strings(value):
        rest = _TEMPLATE.sub("", text)
        if "{{" in rest or "}}" in rest:
            start = rest.find("{{") if "{{" in rest else rest.find("}}")
            bad = rest[start : start + 40]
            raise _refuse(
                where,
                f"{bad!r} is not a template: write {{{{name}}}} or {{{{name.field}}}} (a parameter"
                " or a saved value; nothing is evaluated)",
            )


def _refs(value: Any) -> Iterator[str]:
    """The names a template value refers to (the head of each `{{name.path}}`)."""
    if isinstance(value, str):
        for m in _TEMPLATE.finditer(value):
            yield m.group(1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)


def _unsaved(ref: str, walked: set[str], saved_by: Mapping[str, str]) -> str:
    """Why a step cannot read `ref`: saved on another way of an `if` (`walked` already), by a
    later step, or by no step at all."""
    if ref in walked:
        return (
            f"{{{{{ref}}}}} names a value saved only on one way of an if (by step"
            f" {saved_by[ref]}), and this step is reached without it; save it on every way that"
            " leads here, or read it on that way only"
        )
    why = "a value saved only by a later step" if ref in saved_by else "no parameter or saved value"
    return f"{{{{{ref}}}}} names {why}; declare it or save it first"


def _check_scope(wf: Workflow, skill: Skill, names: set[str]) -> None:
    """Walk the steps in order: every template and condition names a parameter or a value saved
    before it, every save_as is new, every tool is an operation of the skill, every workflow
    step names a workflow of the skill with the parameters it declares."""
    params = set((wf.parameters.get("properties") or {}).keys())
    saved_anywhere: set[str] = set()  # saved by the steps walked so far
    saved_by = {name: s.id for s in walk_steps(wf.steps) for name, _ in _saves(s)}

    def walk(steps: tuple[Step, ...], scope: set[str]) -> None:
        scope = set(scope)
        for s in steps:
            where = f"{wf.name} step {s.id}"
            for ref in _refs(s.args) if s.kind in ("tool", "workflow") else _refs(s.value):
                if ref not in scope:
                    raise _refuse(where, _unsaved(ref, saved_anywhere, saved_by))
            if s.kind == "tool":
                target = s.target or ""
                other = target.split(".", 1)[0] if "." in target else None
                if other is not None and other not in wf.uses:
                    raise _refuse(
                        where,
                        f"{target!r} names skill {other!r}, which the workflow's uses does not list",
                    )
                try:
                    wf.owner(skill, target)
                except (UnknownOperation, PackageError):
                    raise _refuse(
                        where,
                        f"{target!r} is not an operation of {other or skill.slug}"
                        + _nearest(target, wf.others.get(other) if other else skill),
                    ) from None
            if s.kind == "workflow" and s.target not in names:
                raise _refuse(where, f"{s.target!r} is not a workflow of {skill.slug}")
            if s.kind == "if":
                for test in s.tests:
                    if test.head not in scope:
                        raise _refuse(
                            where, f"if {test.path!r}: {test.head!r} is never saved before it"
                        )
                walk(s.then, scope)
                walk(s.otherwise, scope)
            for name, key in _saves(s):
                if name in saved_anywhere or name in params:
                    raise _refuse(where, f"{key} {name!r} is used already; name it anew")
                saved_anywhere.add(name)
                scope.add(name)
        _after_failures(wf.name, steps)

    walk(wf.steps, params)
    if not wf.steps:
        return
    read: set[str] = set()
    for s in walk_steps(wf.steps):
        read.update(_refs(s.args) if s.kind in ("tool", "workflow") else _refs(s.value))
        read.update(t.head for t in s.tests)
    props = wf.parameters.get("properties") or {}
    required = set(wf.parameters.get("required") or ())
    for name in sorted(params):
        prop = props.get(name)
        if name not in read:
            if isinstance(prop, dict) and prop.get(UNREAD) is True:
                continue  # declared so by a document that asks for it (an Arazzo input)
            raise _refuse(
                f"{wf.name} parameter {name}",
                "no step reads it; use it in a step or leave it out",
            )
        if name not in required and not (isinstance(prop, dict) and "default" in prop):
            raise _refuse(
                f"{wf.name} parameter {name}",
                "is optional with no default, but a step reads it; give it a default or make it required",
            )
    _unreachable(wf.name, wf.steps)


def _saves(s: Step) -> list[tuple[str, str]]:
    """What a step saves, each name with the key that names it."""
    return [
        *([(s.save_as, "save_as")] if s.save_as else []),
        *([(s.status_as, "status_as")] if s.status_as else []),
        *((name, "headers_as") for name, _ in s.headers_as),
    ]


def _after_failures(wf: str, steps: tuple[Step, ...]) -> None:
    """The steps a failure goes on to read nothing the steps it skipped would have saved (the
    failed one's answer included)."""
    for i, s in enumerate(steps):
        if s.on_failure is None:
            continue
        j = next(k for k, x in enumerate(steps) if x.id == s.on_failure)
        skipped = {name for x in steps[i:j] for name, _ in _saves(x)}
        for later in walk_steps(steps[j:]):
            reads = set(
                _refs(later.args) if later.kind in ("tool", "workflow") else _refs(later.value)
            )
            reads.update(t.head for t in later.tests)
            hit = sorted(reads & skipped)
            if hit:
                raise _refuse(
                    f"{wf} step {later.id}",
                    f"reads {hit[0]}, which is not saved when step {s.id} fails and the run goes"
                    f" on from {s.on_failure}",
                )


def _unreachable(wf: str, steps: tuple[Step, ...]) -> None:
    """A step after a `return` or `fail` in the same sequence never runs (unless a failure goes
    on from it): refused, not skipped."""
    targets = {s.on_failure for s in steps if s.on_failure}
    for n, s in enumerate(steps):
        if s.kind in ("return", "fail") and n + 1 < len(steps) and steps[n + 1].id not in targets:
            raise _refuse(
                f"{wf} step {steps[n + 1].id}",
                f"comes after the {s.kind} of step {s.id}, so it would never run",
            )
        _unreachable(wf, s.then)
        _unreachable(wf, s.otherwise)


def _cycles(workflows: Mapping[str, Workflow]) -> None:
    calls = {
        name: [s.target for s in walk_steps(wf.steps) if s.kind == "workflow" and s.target]
        for name, wf in workflows.items()
    }
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 1:
            loop = path[path.index(name) :] + [name]
            raise _refuse(name, f"workflows call each other in a cycle: {' → '.join(loop)}")
        if state.get(name) == 2:
            return
        state[name] = 1
        for callee in calls.get(name, []):
            visit(callee, [*path, name])
        state[name] = 2

    for name in sorted(workflows):
        visit(name, [])
