"""Workflows run: a hardened one's steps exactly as written, with no model, each an operation of
the skill called through the same translation, gates and identity keys as any call (a workflow
is loaded and checked in `load.py`; what its steps may read, in `scope.py`).

Steps: `tool` (an operation, `args` templated, `save_as` its answer), `workflow` (another
workflow of the skill, with `args`), `if` / `then` / `else` on a saved value that is true or false,
`return` (a template), `fail` (a message). Templates are `{{name}}` (a parameter or a saved
answer) and `{{name.field.0}}` (a path into it): whole-value templates keep the value's type,
others are written into the string. Nothing is evaluated. Everything a run could trip over is
refused when the workflow is loaded, with the workflow and step named.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.kinds import operation_kinds
from skillpress.runtime.package.model import Skill, Tool
from skillpress.runtime.workflows.if_tests import NotATest
from skillpress.runtime.workflows.model import (
    Answered,
    Pending,
    Run,
    Step,
    StepFailed,
    StepRules,
    Workflow,
    WorkflowRefused,
)
from skillpress.runtime.workflows.run_log import RunLog
from skillpress.runtime.workflows.scope import _TEMPLATE
from skillpress.runtime.workflows.slash import json_arguments

__all__ = [
    "Run",
    "checked_arguments",
    "workflow_arguments",
    "Pending",
    "Step",
    "StepFailed",
    "StepRules",
    "Workflow",
    "WorkflowRefused",
    "dry_call",
    "has_pending",
    "kinds_by_owner",
    "prepare_step",
    "run_workflow",
]


# --- loading and checking --------------------------------------------------------------------


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


def _keep(s: Step, answer: Any, env: dict[str, Any]) -> None:
    """A step's status and headers saved where it says (Pending in a dry run, as its body)."""
    status: Any
    if isinstance(answer, Answered):
        status, headers = answer.status, answer.headers
    else:  # a call that answers the body alone (a dry run: not known yet)
        status, headers = answer if isinstance(answer, Pending) else None, {}
    if s.status_as:
        env[s.status_as] = status
    for name, header in s.headers_as:
        env[name] = answer if isinstance(answer, Pending) else headers.get(header.lower())


def _if_holds(s: Step, env: dict[str, Any]) -> Any:
    """Whether all of an `if`'s tests hold (the first that does not decides), or Pending when a
    dry run cannot know yet. A value never saved is null to a comparison and selects nothing
    for a query; a test that it is true names it as not in the answer (KeyError)."""
    for test in s.tests:
        try:
            value, found = render(f"{{{{{test.path}}}}}", env), True
        except KeyError:
            if not test.op and test.query is None:
                raise
            value, found = None, False
        if isinstance(value, Pending):
            return value
        if not test.holds(found, value):
            return False
    return True


def _if_said(s: Step) -> str:
    return " and ".join(t.path if t.query is not None else str(t.entry()) for t in s.tests)


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


class _Returned(Exception):
    """A `return` step: the run's answer, carried out of the steps it is nested in."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _run_arguments(
    wf: Workflow, arguments: Mapping[str, Any], unknown_inputs: bool
) -> dict[str, Any]:
    """The run's arguments, checked against its parameters (defaults filled in); for a check with
    no caller (`unknown_inputs`), every input a value not known yet."""
    if not unknown_inputs:
        return checked_arguments(wf, arguments)
    args = _defaulted(wf, arguments)
    return {k: args.get(k, Pending("inputs", k)) for k in wf.parameters.get("properties") or {}}


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
    wf = workflows[name]
    if wf.execution != "hardened":
        raise WorkflowRefused(
            f"{name} is {wf.execution}: only hardened workflows run without a model"
        )
    args = _run_arguments(wf, arguments, unknown_inputs)
    outcome = Run()

    def called(s: Step, env: dict[str, Any], label: str) -> None:
        """A step that calls: an operation, or another workflow (its trace joins this one's)."""
        given = render(s.args, env)
        if s.kind == "workflow":
            sub = run_workflow(workflows, s.target or "", given, skill, call, dry_run)
            answer = sub.result
            outcome.trace.extend(sub.trace)
        else:
            owner, tool = wf.owner(skill, s.target or "")
            answer = call(s.id, tool, given, owner, s.rules)
            outcome.trace.append(f"{label}{s.id}: {tool.operation}")
            _keep(s, answer, env)
            answer = answer.body if isinstance(answer, Answered) else answer
        outcome.result = answer
        if s.save_as:
            env[s.save_as] = answer

    def steps(seq: tuple[Step, ...], env: dict[str, Any], label: str = "") -> None:
        n = 0
        while n < len(seq):
            s, n = seq[n], n + 1
            try:
                if s.kind in ("tool", "workflow"):
                    called(s, env, label)
                elif s.kind == "if":
                    try:
                        test = _if_holds(s, env)
                    except NotATest as exc:
                        raise StepFailed(name, s.id, str(exc)) from None
                    if isinstance(test, Pending) and dry_run:  # unknown until run: both ways
                        steps(s.then, dict(env), f"{label}if {_if_said(s)} → ")
                        steps(s.otherwise, dict(env), f"{label}if not {_if_said(s)} → ")
                        continue
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
