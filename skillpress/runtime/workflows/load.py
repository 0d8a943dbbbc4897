"""Workflows a skill carries (`workflows.yaml`), loaded: each one's name, tool schema, execution
level and steps read and checked as strictly as an operation file (every key, every reference,
every step's arguments against its operation), or refused naming where."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from skillpress.format.declaration import HEADER_NAME, READ_METHODS, templated
from skillpress.format.errors import SpecRefused
from skillpress.format.keys import unknown_keys
from skillpress.format.load import LoadLimits, parse_bytes
from skillpress.runtime.package.model import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.workflows.checks import argument_refusal, parameters_refusal
from skillpress.runtime.workflows.if_tests import if_tests
from skillpress.runtime.workflows.model import (
    Step,
    Workflow,
    WorkflowRefused,
)
from skillpress.runtime.workflows.model import walk as walk_steps
from skillpress.runtime.workflows.scope import (
    _TEMPLATE,
    WORKFLOWS_FILE,
    _check_scope,
    _cycles,
    _refuse,
    _templates_only,
)
from skillpress.runtime.workflows.step_rules import MAX_RETRY_AFTER, MAX_RETRY_LIMIT, rules_of

__all__ = [
    "MAX_RETRY_AFTER",
    "MAX_RETRY_LIMIT",
    "EXECUTIONS",
    "FILE_KEYS",
    "MAX_FILE_BYTES",
    "MAX_STEPS",
    "STEP_KEYS",
    "WORKFLOW_KEYS",
    "WORKFLOW_LIMITS",
    "load_workflows",
    "loadable_workflows",
]


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
    "tool": (
        "id",
        "tool",
        "args",
        "save_as",
        "status_as",
        "headers_as",
        "on_error",
        "on_failure",
        "success",
        "retry",
    ),
    "workflow": ("id", "workflow", "args", "save_as", "on_error"),
    "if": ("id", "if", "then", "else"),
    "return": ("id", "return"),
    "fail": ("id", "fail"),
}


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # a saved value's name: what templates read


# a workflow's name and a step's id: as an Arazzo document has them too (`buyNow`, `get-pet`)
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


def _steps(raw: Any, wf: str, seen_ids: set[str]) -> tuple[Step, ...]:
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
            out.append(_call_step(item, sid, kind, where))
        elif kind == "if":
            out.append(_if_step(item, sid, wf, where, seen_ids))
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


def _if_step(item: dict[str, Any], sid: str, wf: str, where: str, seen_ids: set[str]) -> Step:
    """A step that goes one way or the other on values saved before it, its branches checked."""
    try:
        tests = if_tests(item["if"])
    except ValueError as exc:
        raise _refuse(where, str(exc)) from None
    then = _steps(item.get("then", []), wf, seen_ids)
    otherwise = _steps(item.get("else", []), wf, seen_ids)
    if not then and not otherwise:
        raise _refuse(where, "an if needs then or else steps")
    return Step(sid, "if", tests=tests, then=then, otherwise=otherwise)


def _call_step(item: dict[str, Any], sid: str, kind: str, where: str) -> Step:
    """A step that calls an operation (`tool`) or another workflow, checked."""
    args = item.get("args", {})
    if not isinstance(args, dict):
        raise _refuse(where, "args is a mapping of argument → value or template")
    save_as = item.get("save_as")
    if save_as is not None and not _NAME.match(str(save_as)):
        raise _refuse(
            where,
            f"save_as {save_as!r}: letters, digits and '_' (what a template can name)",
        )
    status_as, headers_as = _kept(item, where)
    return Step(
        sid,
        kind,
        str(item[kind]),
        args,
        save_as,
        _opt(item.get("on_error")),
        rules=(
            rules_of(item, where, status_as is not None, tuple(h.lower() for _, h in headers_as))
            if kind == "tool"
            else None
        ),
        on_failure=_opt(item.get("on_failure")),
        status_as=status_as,
        headers_as=headers_as,
    )


def _kept(item: Mapping[str, Any], where: str) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """A tool step's `status_as: NAME` (its answer's status saved) and `headers_as: {NAME:
    Header}` (those headers saved, null when the answer has none), checked."""
    status_as = item.get("status_as")
    if status_as is not None and not _NAME.match(str(status_as)):
        raise _refuse(where, f"status_as {status_as!r}: letters, digits and '_'")
    raw = item.get("headers_as")
    if raw is None:
        return _opt(status_as), ()
    if not isinstance(raw, dict) or not raw or len(raw) > 16:
        raise _refuse(where, "headers_as is a mapping of 1 to 16 NAME: Header-Name")
    for name, header in raw.items():
        if (
            not _NAME.match(str(name))
            or not isinstance(header, str)
            or not HEADER_NAME.match(header)
        ):
            raise _refuse(
                where,
                f"headers_as {name!r}: {header!r}: a name of letters, digits and '_', and a"
                " header's name",
            )
    return _opt(status_as), tuple((str(k), str(v)) for k, v in raw.items())


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _count(steps: tuple[Step, ...]) -> int:
    return sum(1 + _count(s.then) + _count(s.otherwise) for s in steps)


def _default_refusal(prop: Mapping[str, Any]) -> str | None:
    """Why a parameter's `default` cannot be the value a run takes when it is not given: a
    template (a default is a value, used as written: `{{other}}` would reach the API as
    `%7B%7Bother%7D%7D`), or a value its own schema refuses."""
    default = prop["default"]
    if templated(default):
        return (
            f"default {default!r} is a template; a default is a value, used as written"
            " (give the value, or make the parameter required)"
        )
    error = best_match(
        Draft202012Validator(prop, format_checker=Draft202012Validator.FORMAT_CHECKER).iter_errors(
            default
        )
    )
    if error is not None:
        return f"default {default!r} is not a value of the parameter: {error.message[:200]}"
    return None


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
        if isinstance(prop, dict) and "default" in prop:
            wrong = _default_refusal(prop)
            if wrong is not None:
                raise _refuse(f"{where} parameter {name}", wrong)
    missing = [r for r in schema.get("required", []) if r not in props]
    if missing:
        raise _refuse(where, f"required names {missing[0]!r}, which is not a parameter")
    return {"type": "object", "additionalProperties": False, **schema}


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


def _repeatable(tool: Tool) -> bool:
    """Whether a step's call may be tried again: a read, or a write keyed by its identity (the
    runtime's own rule, `repeatable`, read from the declaration)."""
    return tool.declaration.method in READ_METHODS or bool(tool.declaration.identity)


def load_workflows(
    files: Mapping[str, bytes],
    skill: Skill,
    others: Callable[[str], Skill | None] | None = None,
) -> dict[str, Workflow]:
    """The skill's workflows by name ({} without `workflows.yaml`), each checked; WorkflowRefused
    for anything a run could trip over. `others` finds a skill a workflow `uses` by its slug."""
    items = _items(files)
    out: dict[str, Workflow] = {}
    for n, item in enumerate(items, 1):
        wf = _workflow(item, n, skill, others, out)
        out[wf.name] = wf
    for wf in out.values():
        _check_scope(wf, skill, set(out))
        _check_calls(wf, skill, out)
    _cycles(out)
    return out


def _items(files: Mapping[str, bytes]) -> list[Any]:
    """The file's list of workflows, read within its bounds ([] without the file)."""
    raw_bytes = files.get(WORKFLOWS_FILE, files.get(f"references/{WORKFLOWS_FILE}"))
    if raw_bytes is None:  # (an Agent Skills folder keeps it among its references)
        return []
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
    return items


def _workflow(
    item: Any,
    n: int,
    skill: Skill,
    others: Callable[[str], Skill | None] | None,
    read: Mapping[str, Workflow],
) -> Workflow:
    """The file's `n`th workflow, its keys checked in the order a reader meets them (`read`:
    the ones before it)."""
    if not isinstance(item, dict) or not _ID.match(str(item.get("name", ""))):
        raise _refuse(f"workflow {n}", "name: a letter, then letters, digits, '_' and '-'")
    name = str(item["name"])
    unknown = unknown_keys(item, WORKFLOW_KEYS)
    if unknown:
        raise _refuse(name, unknown)
    if name in read:
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
    wf = Workflow(
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
    if execution == "draft" and not (wf.procedure or wf.description):
        raise _refuse(name, "a draft workflow tells the model what to do: give it a procedure")
    return wf


def _check_calls(wf: Workflow, skill: Skill, flows: Mapping[str, Workflow]) -> None:
    """Every step's call as its operation (or workflow) takes it, every branch's, taken or not;
    a retry only where a second try cannot do the thing twice."""
    types = {
        k: v.get("type")
        for k, v in (wf.parameters.get("properties") or {}).items()
        if isinstance(v, dict)
    }
    for s in walk_steps(wf.steps):
        if s.kind == "tool":
            tool = wf.owner(skill, s.target or "")[1]
            why = argument_refusal(tool, s.args, _TEMPLATE.search, types)
            if why is not None:
                raise _refuse(f"{wf.name} step {s.id}", why)
            if s.rules is not None and s.rules.retry_limit and not _repeatable(tool):
                raise _refuse(
                    f"{wf.name} step {s.id}",
                    f"retry: {tool.operation} is a {tool.declaration.method} with no"
                    " identity (no Idempotency-Key), so a second try might do it twice and"
                    " is never made; give the operation an identity, or take retry out",
                )
        if s.kind == "workflow":
            callee = flows[s.target or ""]
            declared = set((callee.parameters.get("properties") or {}).keys())
            extra = sorted(set(s.args) - declared)
            if extra:
                raise _refuse(
                    f"{wf.name} step {s.id}", f"{callee.name} does not take {', '.join(extra)}"
                )
            lacking = [r for r in callee.parameters.get("required") or () if r not in s.args]
            if lacking:  # the run would stop there, after the calls before it were made
                raise _refuse(
                    f"{wf.name} step {s.id}",
                    f"{callee.name} requires {', '.join(map(repr, lacking))}, which this step"
                    " does not pass: pass it, or give it a default in "
                    f"{callee.name}",
                )
