"""Workflows a skill carries (`workflows.yaml`): a name, a tool schema for its parameters, an
execution level (draft, guided, hardened) and, for hardened ones, steps that run exactly as
written with no model — each an operation of the skill called through the same translation,
gates and identity keys as any call.

Steps: `tool` (an operation, `args` templated, `save_as` its answer), `workflow` (another
workflow of the skill, with `args`), `if` / `then` / `else` on a saved value that is true or false,
`return` (a template), `fail` (a message). Templates are `{{name}}` (a parameter or a saved
answer) and `{{name.field.0}}` (a path into it): whole-value templates keep the value's type,
others are written into the string. Nothing is evaluated. Everything a run could trip over is
refused when the workflow is loaded, with the workflow and step named.
"""
# size: workflows loaded, checked and run: the checks a run relies on beside the run

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from skillpress.format.errors import SpecRefused
from skillpress.format.keys import unknown_keys
from skillpress.format.load import LoadLimits, parse_bytes
from skillpress.runtime.calling.translate import CallRefused, build_request
from skillpress.runtime.package.kinds import operation_kinds
from skillpress.runtime.package.skill import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.workflows.checks import argument_refusal, parameters_refusal
from skillpress.runtime.workflows.criteria import BodyTest, CriterionRefused, body_test
from skillpress.runtime.workflows.model import (
    Pending,
    Run,
    Step,
    StepFailed,
    StepRules,
    Workflow,
    WorkflowRefused,
)
from skillpress.runtime.workflows.model import walk as walk_steps
from skillpress.runtime.workflows.run_log import RunLog
from skillpress.runtime.workflows.slash import json_arguments

__all__ = [
    "Run",
    "checked_arguments",
    "loadable_workflows",
    "workflow_arguments",
    "MAX_STEPS",
    "WORKFLOW_LIMITS",
    "WORKFLOWS_FILE",
    "Pending",
    "Step",
    "StepFailed",
    "StepRules",
    "Workflow",
    "WorkflowRefused",
    "dry_call",
    "has_pending",
    "kinds_by_owner",
    "load_workflows",
    "prepare_step",
    "run_workflow",
]

WORKFLOWS_FILE = "workflows.yaml"
MAX_STEPS = 50
MAX_FILE_BYTES = 256 * 1024
WORKFLOW_LIMITS = LoadLimits(
    max_bytes=MAX_FILE_BYTES, max_yaml_aliases=100, max_expanded_nodes=100_000
)
EXECUTIONS = ("draft", "guided", "hardened")
FILE_KEYS = ("workflows",)
WORKFLOW_KEYS = (
    "name",
    "description",
    "execution",
    "parameters",
    "steps",
    "tool",
    "defaults",
    "procedure",
    "uses",
)
STEP_KEYS = {
    "tool": ("id", "tool", "args", "save_as", "on_error", "on_failure", "success", "retry"),
    "workflow": ("id", "workflow", "args", "save_as", "on_error"),
    "if": ("id", "if", "then", "else"),
    "return": ("id", "return"),
    "fail": ("id", "fail"),
}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # a saved value's name: what templates read
# a workflow's name and a step's id: as an Arazzo document has them too (`buyNow`, `get-pet`)
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}")
_STATUS = re.compile(r"^\$statusCode\s*(==|!=|<=|>=|<|>)\s*([1-5][0-9]{2})$")
MAX_RETRY_LIMIT, MAX_RETRY_AFTER = 10, 60.0
_PATH = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)$")


def _rules(item: Mapping[str, Any], where: str) -> StepRules | None:
    raw_success = item.get("success")
    success: list[tuple[str, int]] = []
    body: list[BodyTest] = []
    if raw_success is not None:
        given = raw_success if isinstance(raw_success, list) else [raw_success]
        for cond in given:
            m = _STATUS.match(cond.strip()) if isinstance(cond, str) else None
            if m is not None:
                success.append((m.group(1), int(m.group(2))))
                continue
            try:
                test = body_test(cond)
            except CriterionRefused as exc:
                raise _refuse(where, f"success {exc}") from None
            if test is None:
                raise _refuse(
                    where, f"success {cond!r}: a status test is like '$statusCode == 201'"
                )
            body.append(test)
    retry = item.get("retry")
    limit, after = 0, 0.0
    if retry is not None:
        unknown = unknown_keys(retry, ("limit", "after")) if isinstance(retry, dict) else ""
        if not isinstance(retry, dict) or unknown:
            raise _refuse(
                where, f"retry is {{limit: N, after: SECONDS}}{f' ({unknown})' if unknown else ''}"
            )
        limit, after = retry.get("limit", 1), retry.get("after", 1.0)
        if (
            not isinstance(limit, int)
            or isinstance(limit, bool)
            or not 1 <= limit <= MAX_RETRY_LIMIT
        ):
            raise _refuse(
                where, f"retry.limit {limit!r}: a whole number from 1 to {MAX_RETRY_LIMIT}"
            )
        if (
            not isinstance(after, int | float)
            or isinstance(after, bool)
            or not 0 <= after <= MAX_RETRY_AFTER
        ):
            raise _refuse(where, f"retry.after {after!r}: seconds from 0 to {MAX_RETRY_AFTER:g}")
    if not success and not body and not limit:
        return None
    return StepRules(tuple(success), limit, float(after), tuple(body))


# --- loading and checking --------------------------------------------------------------------


def _refuse(where: str, why: str) -> WorkflowRefused:
    return WorkflowRefused(f"{WORKFLOWS_FILE}: {where}: {why}")


def _steps(raw: Any, wf: str, seen_ids: set[str]) -> tuple[Step, ...]:
    # size: one case per step kind, each refusal naming its step
    if not isinstance(raw, list):
        raise _refuse(wf, "steps is a list")
    out = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise _refuse(f"{wf} step {n}", "a step is a mapping")
        sid = str(item["id"]) if "id" in item else f"step{len(seen_ids) + 1}"
        if "id" in item and not _ID.match(sid):
            raise _refuse(
                f"{wf} step {n}", f"id {sid!r}: a letter, then letters, digits, '_' and '-'"
            )
        where = f"{wf} step {sid}"
        if sid in seen_ids:
            raise _refuse(where, "two steps have this id")
        seen_ids.add(sid)
        kinds = [k for k in STEP_KEYS if k in item]
        if len(kinds) != 1:
            unknown = unknown_keys(item, sorted({k for ks in STEP_KEYS.values() for k in ks}))
            raise _refuse(
                where,
                f"a step is exactly one of tool, workflow, if, return, fail{f' ({unknown})' if unknown else ''}",
            )
        kind = kinds[0]
        unknown = unknown_keys(item, STEP_KEYS[kind])
        if unknown:
            raise _refuse(where, f"a {kind} step: {unknown}")
        _templates_only({k: v for k, v in item.items() if k in ("args", "return", "fail")}, where)
        if kind in ("tool", "workflow"):
            args = item.get("args", {})
            if not isinstance(args, dict):
                raise _refuse(where, "args is a mapping of argument → value or template")
            save_as = item.get("save_as")
            if save_as is not None and not _NAME.match(str(save_as)):
                raise _refuse(
                    where,
                    f"save_as {save_as!r}: letters, digits and '_' (what a template can name)",
                )
            rules = _rules(item, where) if kind == "tool" else None
            out.append(
                Step(
                    sid,
                    kind,
                    str(item[kind]),
                    args,
                    save_as,
                    _opt(item.get("on_error")),
                    rules=rules,
                    on_failure=_opt(item.get("on_failure")),
                )
            )
        elif kind == "if":
            cond = str(item["if"]).strip()
            if not _PATH.match(cond):
                raise _refuse(
                    where, f"if {cond!r}: name a saved value, like availability.available"
                )
            then = _steps(item.get("then", []), wf, seen_ids)
            otherwise = _steps(item.get("else", []), wf, seen_ids)
            if not then and not otherwise:
                raise _refuse(where, "an if needs then or else steps")
            out.append(Step(sid, "if", condition=cond, then=then, otherwise=otherwise))
        else:
            out.append(Step(sid, kind, value=item[kind]))
    for n, step in enumerate(out):  # a failure goes on from a later step of the same list
        later = [x.id for x in out[n + 1 :]]
        if step.on_failure is not None and step.on_failure not in later:
            raise _refuse(
                f"{wf} step {step.id}",
                f"on_failure {step.on_failure!r}: a later step of the same list"
                f" ({', '.join(later) or 'there is none'})",
            )
    return tuple(out)


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


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _count(steps: tuple[Step, ...]) -> int:
    return sum(1 + _count(s.then) + _count(s.otherwise) for s in steps)


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


def _parameters(raw: Any, where: str) -> dict[str, Any]:
    schema = raw if raw is not None else {"type": "object", "properties": {}}
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise _refuse(where, "parameters is a JSON Schema object (type: object, properties)")
    wrong = parameters_refusal(schema)
    if wrong is not None:
        raise _refuse(where, f"parameters: {wrong}")
    props = schema.get("properties") or {}
    for name, prop in props.items():
        enum = prop.get("enum") if isinstance(prop, dict) else None
        if enum is not None and "default" in prop and prop["default"] not in enum:
            raise _refuse(
                f"{where} parameter {name}",
                f"default {prop['default']!r} is not one of its enum {prop['enum']!r}",
            )
    missing = [r for r in schema.get("required", []) if r not in props]
    if missing:
        raise _refuse(where, f"required names {missing[0]!r}, which is not a parameter")
    return {"type": "object", "additionalProperties": False, **schema}


def _check_scope(wf: Workflow, skill: Skill, names: set[str]) -> None:
    """Walk the steps in order: every template and condition names a parameter or a value saved
    before it, every save_as is new, every tool is an operation of the skill, every workflow
    step names a workflow of the skill with the parameters it declares."""
    params = set((wf.parameters.get("properties") or {}).keys())
    saved_anywhere: set[str] = set()  # saved by the steps walked so far
    saved_at_all = {s.save_as for s in walk_steps(wf.steps) if s.save_as}

    def walk(steps: tuple[Step, ...], scope: set[str]) -> None:
        scope = set(scope)
        for s in steps:
            where = f"{wf.name} step {s.id}"
            for ref in _refs(s.args) if s.kind in ("tool", "workflow") else _refs(s.value):
                if ref not in scope:
                    why = (
                        "a value saved only by a later step"
                        if ref in saved_at_all
                        else "no parameter or saved value"
                    )
                    raise _refuse(where, f"{{{{{ref}}}}} names {why}; declare it or save it first")
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
                        f"{target!r} is not an operation of {other or skill.slug}",
                    ) from None
            if s.kind == "workflow" and s.target not in names:
                raise _refuse(where, f"{s.target!r} is not a workflow of {skill.slug}")
            if s.kind == "if":
                head = _PATH.match(s.condition or "")
                assert head is not None
                if head.group(1) not in scope:
                    raise _refuse(
                        where, f"if {s.condition!r}: {head.group(1)!r} is never saved before it"
                    )
                walk(s.then, scope)
                walk(s.otherwise, scope)
            if s.save_as:
                if s.save_as in saved_anywhere or s.save_as in params:
                    raise _refuse(where, f"save_as {s.save_as!r} is used already; name it anew")
                saved_anywhere.add(s.save_as)
                scope.add(s.save_as)
        _after_failures(wf.name, steps)

    walk(wf.steps, params)
    if not wf.steps:
        return
    read: set[str] = set()
    for s in walk_steps(wf.steps):
        read.update(_refs(s.args) if s.kind in ("tool", "workflow") else _refs(s.value))
        if s.kind == "if" and s.condition:
            read.add(s.condition.split(".", 1)[0])
    props = wf.parameters.get("properties") or {}
    required = set(wf.parameters.get("required") or ())
    for name in sorted(params):
        if name not in read:
            raise _refuse(
                f"{wf.name} parameter {name}",
                "no step reads it; use it in a step or leave it out",
            )
        prop = props.get(name)
        if name not in required and not (isinstance(prop, dict) and "default" in prop):
            raise _refuse(
                f"{wf.name} parameter {name}",
                "is optional with no default, but a step reads it; give it a default or make it required",
            )
    _unreachable(wf.name, wf.steps)


def _after_failures(wf: str, steps: tuple[Step, ...]) -> None:
    """The steps a failure goes on to read nothing the steps it skipped would have saved (the
    failed one's answer included)."""
    for i, s in enumerate(steps):
        if s.on_failure is None:
            continue
        j = next(k for k, x in enumerate(steps) if x.id == s.on_failure)
        skipped = {x.save_as for x in steps[i:j] if x.save_as}
        for later in walk_steps(steps[j:]):
            reads = set(
                _refs(later.args) if later.kind in ("tool", "workflow") else _refs(later.value)
            )
            if later.kind == "if" and later.condition:
                reads.add(later.condition.split(".", 1)[0])
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


def _guided_tool(item: Mapping[str, Any], name: str, execution: str, skill: Skill) -> str | None:
    tool = item.get("tool")
    if tool is None:
        if execution == "guided":
            raise _refuse(
                name, "a guided workflow names the operation the model calls: give it tool"
            )
        return None
    try:
        return skill.tool(str(tool)).operation
    except (UnknownOperation, PackageError):
        raise _refuse(name, f"tool {tool!r} is not an operation of {skill.slug}") from None


def _defaults(item: Mapping[str, Any], name: str, skill: Skill) -> dict[str, Any]:
    """A guided workflow's fixed arguments: each one the tool takes, inside its enum."""
    defaults = item.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise _refuse(name, "defaults is a mapping of argument → value")
    if defaults and not item.get("tool"):
        raise _refuse(name, "defaults are for the tool a guided workflow names")
    if not defaults:
        return {}
    props = skill.tool(str(item["tool"])).schema.get("properties") or {}
    for key, value in defaults.items():
        if key not in props:
            raise _refuse(name, f"default {key!r}: {item['tool']} takes no such argument")
        enum = props[key].get("enum") if isinstance(props[key], dict) else None
        if enum is not None and value not in enum:
            raise _refuse(name, f"default {key}={value!r} is not one of its enum {enum!r}")
    return dict(defaults)


def _uses(
    item: Mapping[str, Any], name: str, skill: Skill, others: Callable[[str], Skill | None] | None
) -> dict[str, Skill]:
    raw = item.get("uses") or []
    if not isinstance(raw, list) or not all(isinstance(u, str) and u for u in raw):
        raise _refuse(name, "uses lists the slugs of other skills its steps call")
    found: dict[str, Skill] = {}
    for slug in raw:
        other = others(slug) if others is not None and slug != skill.slug else None
        if other is None:
            raise _refuse(
                name,
                f"uses {slug!r}, which is not available here (publish it, or keep its package"
                " beside this one)",
            )
        found[slug] = other
    return found


def loadable_workflows(files: Mapping[str, bytes], skill: Skill) -> dict[str, Workflow]:
    """The skill's workflows, or {} when it has none or they do not load (where a listing
    leaves them out: running one says why it is refused)."""
    try:
        return load_workflows(files, skill)
    except WorkflowRefused:
        return {}


def load_workflows(
    files: Mapping[str, bytes],
    skill: Skill,
    others: Callable[[str], Skill | None] | None = None,
) -> dict[str, Workflow]:
    """The skill's workflows by name ({} without `workflows.yaml`), each checked; WorkflowRefused
    for anything a run could trip over. `others` finds a skill a workflow `uses` by its slug."""
    # size: a workflow's keys checked in the order a reader meets them
    raw_bytes = files.get(WORKFLOWS_FILE, files.get(f"references/{WORKFLOWS_FILE}"))
    if raw_bytes is None:  # (an Agent Skills folder keeps it among its references)
        return {}
    if len(raw_bytes) > MAX_FILE_BYTES:
        raise _refuse("the file", f"over {MAX_FILE_BYTES:,} bytes")
    try:  # the bounds and refusals of a spec's loader: a duplicate key names both its lines
        doc = parse_bytes(raw_bytes, WORKFLOW_LIMITS)
    except SpecRefused as exc:
        raise _refuse("the file", str(exc)) from None
    items = doc.get("workflows") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise _refuse("the file", "holds `workflows:`, a list")
    unknown = unknown_keys(doc, FILE_KEYS)
    if unknown:
        raise _refuse("the file", unknown)
    out: dict[str, Workflow] = {}
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not _ID.match(str(item.get("name", ""))):
            raise _refuse(f"workflow {n}", "name: a letter, then letters, digits, '_' and '-'")
        name = str(item["name"])
        unknown = unknown_keys(item, WORKFLOW_KEYS)
        if unknown:
            raise _refuse(name, unknown)
        if name in out:
            raise _refuse(name, "two workflows have this name")
        if any(t.operation == name for t in skill.tools):
            raise _refuse(name, "an operation of the skill has this name; name the workflow anew")
        execution = str(item.get("execution", "draft"))
        if execution not in EXECUTIONS:
            raise _refuse(name, f"execution {execution!r}: one of {', '.join(EXECUTIONS)}")
        steps = _steps(item.get("steps", []), name, set())
        if execution == "hardened" and not steps:
            raise _refuse(name, "a hardened workflow runs its steps: give it steps")
        if _count(steps) > MAX_STEPS:
            raise _refuse(name, f"{_count(steps)} steps, over the cap of {MAX_STEPS}")
        out[name] = Workflow(
            name=name,
            description=str(item.get("description", "")).strip(),
            execution=execution,
            parameters=_parameters(item.get("parameters"), name),
            steps=steps,
            tool_name=f"{skill.slug.replace('-', '_')}_{name}"[:64],
            tool=_guided_tool(item, name, execution, skill),
            defaults=_defaults(item, name, skill),
            procedure=str(item.get("procedure", "")).strip(),
            uses=tuple(item.get("uses") or ()),
            others=_uses(item, name, skill, others),
            confirm=f"{skill.slug.replace('-', '_')}_{name}"[:64] in skill.confirms,
        )
        if execution == "draft" and not (out[name].procedure or out[name].description):
            raise _refuse(name, "a draft workflow tells the model what to do: give it a procedure")
    for wf in out.values():
        _check_scope(wf, skill, set(out))
        types = {
            k: v.get("type")
            for k, v in (wf.parameters.get("properties") or {}).items()
            if isinstance(v, dict)
        }
        for s in walk_steps(wf.steps):
            if s.kind == "tool":  # every branch's, taken or not, as the operation takes them
                why = argument_refusal(
                    wf.owner(skill, s.target or "")[1], s.args, _TEMPLATE.search, types
                )
                if why is not None:
                    raise _refuse(f"{wf.name} step {s.id}", why)
            if s.kind == "workflow":
                callee = out[s.target or ""]
                declared = set((callee.parameters.get("properties") or {}).keys())
                extra = sorted(set(s.args) - declared)
                if extra:
                    raise _refuse(
                        f"{wf.name} step {s.id}", f"{callee.name} does not take {', '.join(extra)}"
                    )
    _cycles(out)
    return out


# --- running ---------------------------------------------------------------------------------


def _lookup(env: Mapping[str, Any], head: str, rest: str) -> Any:
    value = env[head]
    for part in [p for p in rest.split(".") if p]:
        if isinstance(value, Pending):
            return Pending(value.step, f"{value.path}.{part}")
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(f"{head}{rest}")
    return value


def render(value: Any, env: Mapping[str, Any]) -> Any:
    """`value` with its templates filled from `env` (KeyError naming a path that is not there)."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            return _lookup(env, whole.group(1), whole.group(2))
        return _TEMPLATE.sub(lambda m: _text(_lookup(env, m.group(1), m.group(2))), value)
    if isinstance(value, dict):
        return {k: render(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, env) for v in value]
    return value


def _not_a_test(condition: str, value: Any) -> str:
    """Why an `if` on a value that is not true, false or null stops: another runner (Arazzo's
    `<value> == true`, what the export writes) would go the other way, so neither guesses."""
    kind = (
        "a list"
        if isinstance(value, list)
        else "an object"
        if isinstance(value, dict)
        else "a string"
        if isinstance(value, str)
        else "a number"
    )
    return (
        f"if {condition}: the value is {kind}, not true or false; an if tests a boolean (or"
        " null, taken as false), as Arazzo's `== true` does: name a field that is one"
    )


def _text(value: Any) -> str:
    return (
        value
        if isinstance(value, str)
        else json.dumps(value)
        if not isinstance(value, Pending)
        else str(value)
    )


# (step id, tool, arguments, the skill the tool belongs to, the step's StepRules or None) → the
# answer; every face's call honours the rules (placed_step does)
Call = Callable[..., Any]


def _defaulted(wf: Workflow, arguments: Mapping[str, Any]) -> dict[str, Any]:
    args = dict(arguments)
    for pname, prop in (wf.parameters.get("properties") or {}).items():
        if pname not in args and isinstance(prop, dict) and "default" in prop:
            args[pname] = copy.deepcopy(prop["default"])
    return args


def checked_arguments(wf: Workflow, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A run's arguments with the parameters' defaults filled in, checked against them (any
    execution: a guided or draft run is checked before its model is asked); StepFailed at step
    `arguments` with the first thing wrong. A `user_confirmed` the workflow does not declare is
    the exported contract's: taken off, and refused unless true."""
    from jsonschema import Draft202012Validator

    given = dict(arguments)
    props = wf.parameters.get("properties") or {}
    # what an exported tools.json adds to a workflow that writes: the user's confirmation,
    # absent refused like false where the contract asks for it
    if "user_confirmed" not in props and (
        ("user_confirmed" in given and given.pop("user_confirmed") is not True)
        or ("user_confirmed" not in arguments and wf.confirm)
    ):
        raise StepFailed(
            wf.name,
            "arguments",
            "user_confirmed must be true: set it only after the user confirmed this run",
        )
    args = _defaulted(wf, given)
    errors = sorted(Draft202012Validator(wf.parameters).iter_errors(args), key=str)
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path) or "arguments"
        raise StepFailed(wf.name, "arguments", f"{where}: {errors[0].message}")
    return args


def workflow_arguments(wf: Workflow, raw: str) -> dict[str, Any]:
    """A run's arguments from what follows its name on a slash line: a JSON object, or plain
    text filling the workflow's one required parameter (refused, saying what it takes, when it
    has not exactly one)."""
    if not raw:
        return {}
    try:
        value = json_arguments(raw)
    except ValueError as exc:
        raise StepFailed(wf.name, "arguments", str(exc)) from None
    if value is not None:
        return value
    required = [str(r) for r in wf.parameters.get("required") or []]
    if len(required) == 1:
        return {required[0]: raw}
    takes = ", ".join(sorted(wf.parameters.get("properties") or {})) or "nothing"
    raise StepFailed(
        wf.name,
        "arguments",
        f"plain text fills a workflow's one required parameter, and this one has"
        f" {len(required)}; give JSON: it takes {takes}",
    )


def run_workflow(
    workflows: Mapping[str, Workflow],
    name: str,
    arguments: Mapping[str, Any],
    skill: Skill,
    call: Call,
    dry_run: bool = False,
    unknown_inputs: bool = False,
) -> Run:
    """Run a hardened workflow: arguments checked against its parameters (defaults filled in),
    then each step in order through `call`; StepFailed names the step that stopped it. A dry run
    (`call` records instead of sending) walks both branches of an `if` it cannot decide;
    `unknown_inputs` checks it with no arguments (each input a value not known yet)."""
    # size: the runner's one loop (every step kind, a failure's way on) beside its set-up

    wf = workflows[name]
    if wf.execution != "hardened":
        raise WorkflowRefused(
            f"{name} is {wf.execution}: only hardened workflows run without a model"
        )
    if unknown_inputs:  # a check with no caller: every input is a value not known yet
        args = _defaulted(wf, arguments)
        args = {k: args.get(k, Pending("inputs", k)) for k in wf.parameters.get("properties") or {}}
    else:
        args = checked_arguments(wf, arguments)
    outcome = Run()

    class _Returned(Exception):
        def __init__(self, value: Any) -> None:
            self.value = value

    def steps(seq: tuple[Step, ...], env: dict[str, Any], label: str = "") -> None:
        # size: one case per step kind, and where a failed step goes on from
        n = 0
        while n < len(seq):
            s, n = seq[n], n + 1
            try:
                if s.kind in ("tool", "workflow"):
                    given = render(s.args, env)
                    if s.kind == "workflow":
                        sub = run_workflow(workflows, s.target or "", given, skill, call, dry_run)
                        answer = sub.result
                        outcome.trace.extend(sub.trace)
                    else:
                        owner, tool = wf.owner(skill, s.target or "")
                        answer = call(s.id, tool, given, owner, s.rules)
                        outcome.trace.append(f"{label}{s.id}: {tool.operation}")
                    outcome.result = answer
                    if s.save_as:
                        env[s.save_as] = answer
                elif s.kind == "if":
                    test = render(f"{{{{{s.condition}}}}}", env)
                    if isinstance(test, Pending) and dry_run:  # unknown until run: both ways
                        steps(s.then, dict(env), f"{label}if {s.condition} → ")
                        steps(s.otherwise, dict(env), f"{label}if not {s.condition} → ")
                        continue
                    if not isinstance(test, bool | None):
                        raise StepFailed(name, s.id, _not_a_test(s.condition or "", test))
                    steps(s.then if test else s.otherwise, env, label)
                elif s.kind == "return":
                    if dry_run and label:
                        continue
                    raise _Returned(render(s.value, env))
                elif not (dry_run and label):  # fail
                    raise StepFailed(name, s.id, _text(render(s.value, env)))
            except KeyError as exc:
                raise StepFailed(name, s.id, f"{exc.args[0]} is not in the answer") from None
            except StepFailed as exc:
                if exc.step != s.id or exc.workflow not in ("", name):
                    raise  # a called workflow's own step: named as it is
                if s.on_failure is not None and not exc.gated:  # a gate is never a failure
                    outcome.trace.append(
                        f"{label}{s.id} failed ({exc.message}): on to {s.on_failure}"
                    )
                    n = next(i for i, x in enumerate(seq) if x.id == s.on_failure)
                    continue
                said = f"{s.on_error} ({exc.message})" if s.on_error else exc.message
                raise StepFailed(name, s.id, said, exc.waiting, exc.gated) from None

    try:
        steps(wf.steps, args)
    except _Returned as done:
        outcome.result = done.value
    return outcome


def prepare_step(
    step: str,
    tool: Tool,
    args: dict[str, Any],
    skill: Skill,
    kinds: Mapping[str, str],
    sandboxed: bool,
    why: str = "this skill runs sandboxed: not sent",
    log: RunLog | None = None,
) -> Any:
    """A step's request, built and checked like any call's: StepFailed when it writes and the
    run is sandboxed (`kinds`: read | write per operation), or when translation refuses it; the
    refusal kept in the run's `log` as that step's (a run the model carried on past still
    shows it)."""
    try:
        if sandboxed and kinds.get(tool.operation) == "write":
            raise StepFailed("", step, f"{tool.operation} writes, and {why}")
        try:
            return build_request(tool, args, skill.hosts)
        except CallRefused as exc:
            raise StepFailed("", step, str(exc)) from None
    except StepFailed as exc:
        if log is not None:
            log.refused(step, tool.operation, skill.slug, exc.message)
        raise


def has_pending(value: Any) -> bool:
    """Whether a value holds an answer a dry run could not know."""
    if isinstance(value, Pending):
        return True
    if isinstance(value, dict):
        return any(has_pending(v) for v in value.values())
    if isinstance(value, list):
        return any(has_pending(v) for v in value)
    return False


def dry_call() -> Call:
    """A `call` for a dry run that only checks: each request is built (StepFailed when its
    translation refuses it) unless it depends on an answer not known yet; nothing is sent."""

    def call(step: str, tool: Tool, args: dict[str, Any], owner: Skill, rules: Any = None) -> Any:
        if not has_pending(args):
            prepare_step(step, tool, args, owner, {}, False)
            return Pending(step, "answer")
        # the values written in the step are checked now; those from inputs or answers when run
        from jsonschema import Draft202012Validator

        known = {k: v for k, v in args.items() if not has_pending(v)}
        loose = {k: v for k, v in tool.schema.items() if k != "required"}
        for error in Draft202012Validator(loose).iter_errors(known):
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            raise StepFailed("", step, f"{tool.operation}: argument {where}: {error.message}")
        return Pending(step, "answer")

    return call


def kinds_by_owner(skill: Skill, files: Mapping[str, bytes]) -> Callable[[Skill], dict[str, str]]:
    """read | write per operation for the skill a step's tool belongs to, worked out once per
    run and skill: the skill's own by its rules and guesses, one it `uses` by its rules and
    methods (its guesses are its own)."""
    known: dict[str, dict[str, str]] = {}

    def of(owner: Skill) -> dict[str, str]:
        if owner.slug not in known:
            known[owner.slug] = operation_kinds(owner, files if owner is skill else {})
        return known[owner.slug]

    return of
