"""Workflows as OpenAPI Initiative Arazzo 1.0.1 documents, and back, for the subset that maps.

A tool step is an Arazzo step by `operationId`, its arguments `parameters` (path, query) and a
`requestBody` payload, `successCriteria` a status below 400, `outputs` the saved answer
(`$response.body`); a workflow step is a step by `workflowId`. Templates are runtime expressions:
`$inputs.name`, `$steps.<id>.outputs.<name>#/json/pointer`, embedded as `{$…}` in strings. An
`if` is the `onSuccess` of the step before it: a `goto` with `jsonpath` criteria to its then
steps, a `goto` without criteria to its else steps; each branch jumps back with a `goto` (or
`end`s). `return` is the workflow's `outputs` and an `end`; `fail` an `end` carrying
`x-skillpress-fail`; `on_error` rides as `x-skillpress-on-error`. Anything else is refused on
import, naming it.
"""
# size: Arazzo out and in: the mapping's two directions beside each other, so they stay inverse

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skillpress.runtime.interop.arazzo_components import inline_components
from skillpress.runtime.package.model import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.workflows.checks import argument_refusal
from skillpress.runtime.workflows.criteria import (
    CriterionRefused,
    body_test,
    from_criterion,
    to_criterion,
    to_entry,
)
from skillpress.runtime.workflows.load import _STATUS
from skillpress.runtime.workflows.model import walk as walk_steps
from skillpress.runtime.workflows.run import Step, Workflow, WorkflowRefused
from skillpress.runtime.workflows.scope import _TEMPLATE

__all__ = ["ARAZZO_VERSION", "ArazzoRefused", "Locator", "from_arazzo", "left_out", "to_arazzo"]

ARAZZO_VERSION = "1.0.1"
OK = "$statusCode < 400"
_INPUT = re.compile(r"^\$inputs\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)((?:#/[^\s{}]*)?)$")
_STEP = re.compile(
    r"^\$steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)"
    r"((?:#/[^\s{}]*)?)$"
)
_WORKFLOW_OUT = re.compile(
    r"^\$workflows\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)"
    r"((?:#/[^\s{}]*)?)$"
)
_TRUE = re.compile(r"^\s*(\$[^\s=!<>]+)\s*==\s*true\s*$")
_EMBEDDED = re.compile(r"\{(\$[^{}]+)\}")


class ArazzoRefused(WorkflowRefused):
    """An Arazzo document (or a workflow) outside the subset that maps; the message names it."""


# --- export ----------------------------------------------------------------------------------


def _expr(head: str, path: str, params: set[str], saver: Mapping[str, str]) -> str:
    """`$inputs.x.a.b` or `$steps.s.outputs.y.a.0`: the dotted form standard runners resolve
    (arazzo-runner reads a `#/` pointer only straight after `$response.body`)."""
    if head in params:
        return f"$inputs.{head}{path}"
    step = saver[head]
    if step.startswith("!"):  # a workflow step: its answer is the outputs of the one it ran
        if not path:
            raise ArazzoRefused(
                f"{{{{{head}}}}} is the whole answer of workflow step {step[1:]}, which Arazzo"
                " cannot name (name one of its outputs: {{" + head + ".NAME}})"
            )
        return f"$steps.{step[1:]}.outputs{path}"
    return f"$steps.{step}.outputs.{head}{path}"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class Locator:
    """How an export names each operation: the spec's `operationId` where the package knows it
    (`skill.json`), else an `operationPath` into the source description by method and path."""

    def __init__(self, skill: Skill, files: Mapping[str, bytes], source: str) -> None:
        self.source = source
        self.known: dict[str, tuple[str | None, str, str]] = {
            e.name: (None, e.method, e.path) for e in skill.operations
        }
        if "skill.json" in files:
            from skillpress.format.manifest import Manifest, ManifestError

            try:
                manifest = Manifest.from_json(files["skill.json"])
            except ManifestError:
                return
            for e in manifest.operations:
                self.known[e.name] = (e.operation_id, e.method, e.path)

    def locate(self, operation: str) -> dict[str, str]:
        op_id, method, path = self.known.get(operation, (None, "", ""))
        if op_id:
            return {"operationId": op_id}
        pointer = "/paths/" + _escape(path) + "/" + method.lower()
        return {"operationPath": f"{{$sourceDescriptions.{self.source}.url}}#{pointer}"}


def _value_out(value: Any, params: set[str], saver: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            return _expr(whole.group(1), whole.group(2), params, saver)
        return _TEMPLATE.sub(
            lambda m: "{" + _expr(m.group(1), m.group(2), params, saver) + "}", value
        )
    if isinstance(value, dict):
        return {k: _value_out(v, params, saver) for k, v in value.items()}
    if isinstance(value, list):
        return [_value_out(v, params, saver) for v in value]
    return value


def _returned(wf: Workflow) -> list[str]:
    """The outputs a workflow answers: the names its `return` gives (the first one's)."""
    done = next((s for s in walk_steps(wf.steps) if s.kind == "return"), None)
    return [str(k) for k in done.value] if done is not None and isinstance(done.value, dict) else []


def _call_out(
    s: Step,
    skill: Skill,
    params: set[str],
    saver: Mapping[str, str],
    where: Locator,
    callees: Mapping[str, Workflow],
) -> dict[str, Any]:
    # size: one step's parameters, body and criteria written out
    out: dict[str, Any] = {"stepId": s.id}
    args = _value_out(s.args or {}, params, saver)
    if s.kind == "workflow":
        out["workflowId"] = s.target
        out["parameters"] = [{"name": k, "value": v} for k, v in args.items()]
    else:
        if "." in (s.target or ""):
            raise ArazzoRefused(
                f"step {s.id}: {s.target} is another skill's operation; this export writes one"
                " source description"
            )
        decl = skill.tool(s.target or "").declaration
        out.update(where.locate(s.target or ""))
        places = {
            **{k: "path" for k in decl.path_params},
            **{k: "query" for k in decl.query},
            **{k: "header" for k in decl.header},
            **{k: "cookie" for k in decl.cookie},
        }
        located = [
            {"name": k if places[k] == "path" else decl.wire_name(k), "in": places[k], "value": v}
            for k, v in args.items()
            if k in places
        ]
        if located:
            out["parameters"] = located
        body = {k: v for k, v in args.items() if k not in places}
        if decl.body_arg and decl.body_arg in body:
            out["requestBody"] = {"contentType": decl.content_type, "payload": body[decl.body_arg]}
        elif body:
            out["requestBody"] = {"contentType": decl.content_type, "payload": body}
    rules = s.rules
    status = (
        [{"condition": f"$statusCode {op} {n}"} for op, n in rules.success]
        if rules is not None and rules.success
        else [{"condition": OK}]
    )
    out["successCriteria"] = status + [to_criterion(t) for t in (rules.body if rules else ())]
    failure: list[dict[str, Any]] = []
    if rules is not None and rules.retry_limit:
        failure.append(
            {
                "name": "retry",
                "type": "retry",
                "retryAfter": rules.retry_after,
                "retryLimit": rules.retry_limit,
            }
        )
    if s.on_failure:
        failure.append({"name": f"{s.id}_failed", "type": "goto", "stepId": s.on_failure})
    if failure:
        out["onFailure"] = failure
    if s.save_as and s.kind == "workflow":  # each output of the workflow it runs, by name
        names = _returned(callees[s.target or ""]) if s.target in callees else []
        if names:
            out["outputs"] = {n: f"$outputs.{n}" for n in names}
    elif s.save_as:
        out["outputs"] = {s.save_as: "$response.body"}
    if s.on_error:
        out["x-skillpress-on-error"] = s.on_error
    return out


def to_arazzo(
    workflows: Mapping[str, Workflow],
    skill: Skill,
    source_url: str = "",
    files: Mapping[str, bytes] | None = None,
) -> dict[str, Any]:
    """An Arazzo 1.0.1 document of the skill's hardened workflows (ArazzoRefused for one that
    does not map, or when none is hardened): steps name the spec's operations (`files`: the
    package, whose skill.json knows their operationIds), and the one source description is
    the OpenAPI document at `source_url`. Guided and draft workflows are left out (`left_out`
    says so): a model decides their calls, and Arazzo describes fixed steps."""
    fixed = {n: wf for n, wf in workflows.items() if wf.execution == "hardened"}
    if not fixed:
        raise ArazzoRefused(
            f"{skill.slug} has no hardened workflow: Arazzo describes fixed steps, and a guided"
            " or draft workflow's calls are a model's"
        )
    where = Locator(skill, files or {}, skill.slug)
    doc = {
        "arazzo": ARAZZO_VERSION,
        "info": {"title": f"{skill.slug} workflows", "version": "1"},
        "sourceDescriptions": [
            {
                "name": skill.slug,
                "url": source_url or f"./{skill.slug}.openapi.json",
                "type": "openapi",
            }
        ],
        "workflows": [_workflow_out(wf, skill, where, workflows) for wf in fixed.values()],
    }
    from skillpress.runtime.interop.arazzo_schema import problems

    wrong = problems(doc)
    if wrong:  # what this module writes is held to the specification's shape
        raise ArazzoRefused(f"the export is not valid Arazzo 1.0.1: {'; '.join(wrong[:3])}")
    return doc


def left_out(workflows: Mapping[str, Workflow]) -> list[str]:
    """What an export leaves out, and why: one line per guided or draft workflow."""
    return [
        f"{n} is {wf.execution}: a model decides its calls, and Arazzo describes fixed steps"
        for n, wf in workflows.items()
        if wf.execution != "hardened"
    ]


def _workflow_out(
    wf: Workflow, skill: Skill, where: Locator, callees: Mapping[str, Workflow]
) -> dict[str, Any]:
    # size: one workflow's inputs, steps, branches and outputs written out
    params = set((wf.parameters.get("properties") or {}).keys())
    failure_targets = {s.on_failure for s in walk_steps(wf.steps) if s.on_failure}
    saver = {
        s.save_as: ("!" if s.kind == "workflow" else "") + s.id
        for s in walk_steps(wf.steps)
        if s.save_as
    }
    outputs: dict[str, Any] = {}

    def refuse(step: Step, why: str) -> ArazzoRefused:
        return ArazzoRefused(f"{wf.name} step {step.id}: {why}, which Arazzo cannot say")

    def ending(s: Step, criteria: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        action: dict[str, Any] = {"name": s.id, "type": "end"}
        if s.kind == "fail":
            action["x-skillpress-fail"] = _value_out(s.value, params, saver)
        else:
            if outputs:
                raise refuse(s, "a second return (a workflow has one set of outputs)")
            if not isinstance(s.value, dict):
                raise refuse(s, "a return that is not a mapping of outputs")
            outputs.update(_value_out(s.value, params, saver))
            action["x-skillpress-return"] = True
        if criteria:
            action["criteria"] = criteria
        return action

    def emit(seq: tuple[Step, ...], cont: str | None) -> list[dict[str, Any]]:
        # size: one case per step kind, laid out as Arazzo's one flat list of steps
        out: list[dict[str, Any]] = []
        for n, s in enumerate(seq):
            rest = seq[n + 1 :]
            if s.kind in ("tool", "workflow"):
                out.append(_call_out(s, skill, params, saver, where, callees))
                continue
            if not out or out[-1].get("onSuccess"):
                raise refuse(s, f"a {s.kind} that does not follow a call")
            if s.kind in ("return", "fail"):
                out[-1]["onSuccess"] = [ending(s)]
                if rest and rest[0].id in failure_targets:  # reached by a failure's goto
                    continue
                if rest:
                    raise refuse(s, f"steps after a {s.kind}")
                return out
            after = next((x.id for x in rest if x.kind in ("tool", "workflow")), cont)
            if rest and rest[0].kind not in ("tool", "workflow"):
                raise refuse(s, "an if followed by something other than a call")
            head = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)$", s.condition or "")
            assert head is not None
            # a simple condition, which standard runners evaluate as skillpress does for a
            # boolean (a JSONPath test is true there whenever the path matches, even `false`)
            criteria = [
                {"condition": f"{_expr(head.group(1), head.group(2), params, saver)} == true"}
            ]
            actions = []
            laid: list[dict[str, Any]] = []
            for branch, crit in ((s.then, criteria), (s.otherwise, None)):
                if branch and branch[0].kind in ("return", "fail"):
                    if len(branch) > 1:
                        raise refuse(branch[1], f"steps after a {branch[0].kind}")
                    actions.append(ending(branch[0], crit))
                    continue
                steps = emit(branch, after)
                target = steps[0]["stepId"] if steps else after
                action: dict[str, Any] = (
                    {"name": s.id if crit else f"{s.id}_else", "type": "goto", "stepId": target}
                    if target
                    else {"name": s.id if crit else f"{s.id}_else", "type": "end"}
                )
                if crit:
                    action["criteria"] = crit
                actions.append(action)
                laid += steps
            out[-1]["onSuccess"] = actions
            out += laid
        if cont and out and not out[-1].get("onSuccess"):
            out[-1]["onSuccess"] = [{"name": "continue", "type": "goto", "stepId": cont}]
        return out

    steps = emit(wf.steps, None)
    doc: dict[str, Any] = {
        "workflowId": wf.name,
        "description": wf.description,
        "inputs": {k: v for k, v in wf.parameters.items() if k != "additionalProperties"},
        "steps": steps,
    }
    if outputs:
        doc["outputs"] = outputs
    return doc


# --- import ----------------------------------------------------------------------------------


def _template(expr: str, where: str, scope: Mapping[str, Any]) -> str:
    """`$inputs.x#/a/b` → `{{x.a.b}}`; `$steps.s.outputs.name#/a` → `{{name.a}}`."""
    m = _INPUT.match(expr)
    w = _WORKFLOW_OUT.match(expr)
    if m:
        head, dotted, pointer = m.group(1), m.group(2), m.group(3)
    elif w:  # a workflow this one dependsOn: its outputs, saved when it ran first
        head = next((k for k, v in scope.items() if v == f"$workflows.{w.group(1)}"), "")
        if not head:
            raise ArazzoRefused(f"{where}: {expr!r} names a workflow this one does not dependsOn")
        dotted, pointer = f".{w.group(2)}{w.group(3)}", w.group(4)
    else:
        m = _STEP.match(expr)
        if m is None:
            raise ArazzoRefused(f"{where}: the expression {expr!r} is outside the subset")
        found = scope.get(f"$steps.{m.group(1)}.outputs.{m.group(2)}")
        if not isinstance(found, tuple):
            raise ArazzoRefused(f"{where}: {expr!r} names no output step {m.group(1)} saved")
        head, within = found  # the step's saved answer, and where in it this output is
        dotted, pointer = "".join(f".{p}" for p in within) + m.group(3), m.group(4)
    tokens = [
        p.replace("~1", "/").replace("~0", "~") for p in pointer.removeprefix("#/").split("/")
    ]
    parts = [p for p in dotted.split(".") if p] + [p for p in tokens if p]
    bad = next((p for p in parts if not re.fullmatch(r"[A-Za-z0-9_-]+", p)), None)
    if bad is not None:
        raise ArazzoRefused(f"{where}: {expr!r}: a path part {bad!r} a template cannot name")
    return "{{" + head + "".join(f".{p}" for p in parts) + "}}"


def _value_in(value: Any, where: str, scope: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        if value.startswith("$"):
            return _template(value, where, scope)
        return _EMBEDDED.sub(lambda m: _template(m.group(1), where, scope), value)
    if isinstance(value, dict):
        return {k: _value_in(v, where, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [_value_in(v, where, scope) for v in value]
    return value


_STEP_KEYS = {
    "stepId",
    "operationId",
    "operationPath",
    "workflowId",
    "parameters",
    "requestBody",
    "successCriteria",
    "outputs",
    "onSuccess",
    "onFailure",
    "description",
    "x-skillpress-on-error",
}


def _operation(skill: Skill, step: Mapping[str, Any], where: str, known: Locator) -> Tool:
    """The skill's tool a step names: by `operationId` (the spec's, the skill's own name, or
    qualified `$sourceDescriptions.<name>.<operationId>`), or by `operationPath` (a pointer to
    the operation's path and method in the source description)."""
    from skillpress.format.names import snake

    if "operationPath" in step:
        raw = str(step["operationPath"])
        pointer = raw.split("#", 1)[1] if "#" in raw else ""
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")]
        if len(tokens) != 4 or tokens[:2] != ["", "paths"]:
            raise ArazzoRefused(
                f"{where}: operationPath {raw!r} is not #/paths/<path>/<method> of the source"
            )
        path, method = tokens[2], tokens[3].upper()
        found = next(
            (n for n, (_, m, p) in known.known.items() if (m.upper(), p) == (method, path)), None
        )
        if found is None:
            raise ArazzoRefused(f"{where}: {method} {path} is not an operation of {skill.slug}")
        return skill.tool(found)
    op_id = str(step.get("operationId", ""))
    qualified = re.match(r"^\$sourceDescriptions\.([A-Za-z0-9_-]+)\.(.+)$", op_id)
    if qualified:
        if qualified.group(1) != known.source:
            raise ArazzoRefused(
                f"{where}: {op_id!r} names source {qualified.group(1)!r}, not {known.source!r}"
            )
        op_id = qualified.group(2)
    for name, (spec_id, _, _) in known.known.items():
        if spec_id == op_id:
            return skill.tool(name)
    for entry in skill.operations:  # by its name here, or the spec's operationId it came from
        if entry.name in (op_id, snake(op_id)) and entry.tool:
            return skill.tool(entry.name)
    try:
        return skill.tool(op_id)
    except (UnknownOperation, PackageError):
        raise ArazzoRefused(
            f"{where}: operationId {op_id!r} is not an operation of {skill.slug}"
        ) from None


def _placed(
    tool: Tool,
    place: str,
    given: str,
    wire: Mapping[str, str],
    headers: Mapping[str, str],
    cookies: Mapping[str, str],
    where: str,
) -> str:
    """The argument a step's parameter `given` `in` `place` is, as the operation declares it
    (a header by any case); refused naming the closest one it has, or where it really goes."""
    import difflib

    places: dict[str, Mapping[str, str]] = {
        "path": {p: p for p in tool.declaration.path_params},
        "query": {**{q: q for q in tool.declaration.query}, **wire},
        "header": headers,
        "cookie": cookies,
    }
    key = given.lower() if place == "header" else given
    if key in places[place]:
        return places[place][key]
    other = next(
        (w for w, m in places.items() if (given.lower() if w == "header" else given) in m), None
    )
    near = difflib.get_close_matches(key, sorted(places[place]), n=1, cutoff=0.5)
    hint = (
        f"; it is a {other} parameter" if other else f"; did you mean `{near[0]}`?" if near else ""
    )
    takes = ", ".join(sorted(places[place])) or "none"
    raise ArazzoRefused(
        f"{where}: {tool.operation} has no {place} parameter {given!r}{hint} ({place}: {takes})"
    )


def from_arazzo(doc: Any, skill: Skill, files: Mapping[str, bytes] | None = None) -> dict[str, Any]:
    """The `workflows.yaml` mapping for an Arazzo document's workflows (ArazzoRefused, naming
    what is outside the subset); load it with `load_workflows` to check it like any other.
    `files` (the package) lets a step name the spec's operationId exactly."""
    if not isinstance(doc, dict) or not str(doc.get("arazzo", "")).startswith("1.0"):
        raise ArazzoRefused("not an Arazzo 1.0 document (no `arazzo: 1.0.x`)")
    refusals: list[str] = []
    doc = inline_components(doc, refusals)
    sources = doc.get("sourceDescriptions") or []
    if len(sources) != 1 or sources[0].get("type", "openapi") != "openapi":
        raise ArazzoRefused("sourceDescriptions: exactly one OpenAPI source (this skill's) maps")
    flows = doc.get("workflows")
    if not isinstance(flows, list) or not flows:
        raise ArazzoRefused("workflows: a list of at least one")
    known = Locator(skill, files or {}, str(sources[0].get("name", skill.slug)))
    by_id = {str(w.get("workflowId")): w for w in flows if isinstance(w, dict)}
    out = []
    for w in flows:
        try:
            out.append(_workflow_in(w, skill, known, by_id, refusals))
        except ArazzoRefused as exc:  # this workflow's shape; the others are still read
            refusals.append(str(exc))
    if refusals:
        raise ArazzoRefused(_said_at_once(refusals))
    return {"workflows": out}


def _said_at_once(refusals: list[str]) -> str:
    """Every refusal of a document in one answer (each once, in the order met)."""
    unique = list(dict.fromkeys(refusals))
    if len(unique) == 1:
        return unique[0]
    lines = "\n".join(f"  - {r}" for r in unique)
    return f"{len(unique)} parts of the document are outside what maps:\n{lines}"


def _depends(
    raw: Mapping[str, Any], name: str, by_id: Mapping[str, Any], scope: dict[str, Any]
) -> list[dict[str, Any]]:
    """`dependsOn` as the steps a workflow runs first: each workflow it names, given the inputs
    of the same name, its outputs saved for `$workflows.<id>.outputs…`."""
    depends = raw.get("dependsOn") or []
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        raise ArazzoRefused(f"{name}: dependsOn is a list of workflowIds")
    mine = set(((raw.get("inputs") or {}).get("properties") or {}).keys())
    first = []
    for dep in depends:
        other = by_id.get(dep)
        if other is None or dep == name:
            raise ArazzoRefused(
                f"{name}: dependsOn {dep!r}, which is no other workflow of this document"
            )
        theirs = (other.get("inputs") or {}).get("properties") or {}
        lacking = [r for r in (other.get("inputs") or {}).get("required") or [] if r not in mine]
        if lacking:
            raise ArazzoRefused(
                f"{name}: dependsOn {dep!r}, which needs {', '.join(lacking)}: inputs this"
                " workflow does not have (it is given the inputs of the same name)"
            )
        save = re.sub(r"[^A-Za-z0-9_]", "_", dep)[:50] + "_outputs"
        scope[save] = f"$workflows.{dep}"
        first.append(
            {
                "id": f"first-{dep}"[:64],
                "workflow": dep,
                "args": {k: "{{" + k + "}}" for k in theirs if k in mine},
                "save_as": save,
            }
        )
    return first


def _workflow_in(
    raw: Any, skill: Skill, known: Locator, by_id: Mapping[str, Any], refusals: list[str]
) -> dict[str, Any]:
    # size: a workflow read back: its closures share the document's refusals
    if not isinstance(raw, dict):
        raise ArazzoRefused("a workflow is a mapping")
    name = str(raw.get("workflowId", ""))
    allowed = {"workflowId", "summary", "description", "inputs", "steps", "outputs", "dependsOn"}
    for key in sorted(set(raw) - allowed - {"x-skillpress-execution"}):
        raise ArazzoRefused(f"{name}: `{key}` is outside the subset")
    steps = raw.get("steps") or []
    if not isinstance(steps, list) or not steps:
        raise ArazzoRefused(f"{name}: steps: a list of at least one")
    index = {str(s.get("stepId")): n for n, s in enumerate(steps) if isinstance(s, dict)}
    # saved name → the step that saved it; `$steps.<id>.outputs.<name>` → (the saved name,
    # the path in it)
    scope: dict[str, Any] = {}
    first = _depends(raw, name, by_id, scope)
    outputs = raw.get("outputs") or {}

    inputs = {
        k: v.get("type")
        for k, v in ((raw.get("inputs") or {}).get("properties") or {}).items()
        if isinstance(v, dict)
    }

    def call(s: dict[str, Any]) -> dict[str, Any]:
        """One step, or (refused) a stand-in that keeps its outputs' names, so the refusals of
        the steps after it are their own, all said at once."""
        try:
            return one_call(s)
        except ArazzoRefused as exc:
            refusals.append(str(exc))
            sid = str(s.get("stepId", ""))
            outs = s.get("outputs")
            for key in outs if isinstance(outs, dict) else {}:
                scope.setdefault(f"$steps.{sid}.outputs.{key}", (str(key), []))
            return {"id": sid, "fail": "refused"}

    def one_call(s: dict[str, Any]) -> dict[str, Any]:
        # size: one case per Arazzo construct a step may use
        sid = str(s.get("stepId", ""))
        where = f"{name} step {sid}"
        for key in sorted(set(s) - _STEP_KEYS):
            raise ArazzoRefused(f"{where}: `{key}` is outside the subset")
        crit = s.get("successCriteria") or [{"condition": OK}]
        success: list[Any] = []
        for c in crit if isinstance(crit, list) else [crit]:
            success.append(_criterion_in(c, where))
        retry, on_failure = _failure_in(s.get("onFailure"), where)
        args: dict[str, Any] = {}
        runs = [k for k in ("operationId", "operationPath", "workflowId") if k in s]
        if len(runs) != 1:
            raise ArazzoRefused(
                f"{where}: a step names exactly one of operationId, operationPath, workflowId"
                f" ({', '.join(runs) or 'none'} here)"
            )
        if "workflowId" in s:
            step: dict[str, Any] = {"id": sid, "workflow": s["workflowId"]}
            for p in s.get("parameters") or []:
                if p["name"] in args:
                    raise ArazzoRefused(
                        f"{where}: parameter {p['name']!r} is given twice; give it once"
                    )
                args[p["name"]] = _value_in(p.get("value"), where, scope)
        else:
            tool = _operation(skill, s, where, known)
            decl = tool.declaration
            wire = {decl.wire_name(q): q for q in decl.query}
            step = {"id": sid, "tool": tool.operation}
            named = [(p.get("name"), p.get("in")) for p in s.get("parameters") or []]
            twice = next((n for n in named if named.count(n) > 1), None)
            if twice is not None:
                raise ArazzoRefused(
                    f"{where}: parameter {twice[0]!r} ({twice[1]}) is given twice; give it once"
                )
            headers = {decl.wire_name(h).lower(): h for h in decl.header}
            cookies = {decl.wire_name(c): c for c in decl.cookie}
            for p in s.get("parameters") or []:
                given = str(p.get("name", ""))
                if p.get("in") not in ("path", "query", "header", "cookie"):
                    raise ArazzoRefused(
                        f"{where}: parameter {given!r}: `in` is path, query, header or cookie"
                    )
                arg = _placed(tool, str(p["in"]), given, wire, headers, cookies, where)
                args[arg] = _value_in(p.get("value"), where, scope)
            if "requestBody" in s:
                payload = _value_in(s["requestBody"].get("payload"), where, scope)
                if decl.body_arg:
                    args[decl.body_arg] = payload
                elif isinstance(payload, dict):
                    args.update(payload)
                else:
                    raise ArazzoRefused(f"{where}: a payload that is not the body's fields")
            why = argument_refusal(tool, args, _TEMPLATE.search, inputs)
            if why is not None:  # what the operation does not take, on import, not at a run
                raise ArazzoRefused(f"{where}: {why}")
        step["args"] = args
        if success != [OK]:
            if "workflowId" in s:
                raise ArazzoRefused(
                    f"{where}: successCriteria on a workflow step is outside the subset"
                )
            step["success"] = success
        if retry is not None:
            if "workflowId" in s:
                raise ArazzoRefused(f"{where}: a retry of a workflow step is outside the subset")
            step["retry"] = retry
        if on_failure is not None:
            if "workflowId" in s:
                raise ArazzoRefused(
                    f"{where}: a goto on a workflow step's failure is outside the subset"
                )
            step["on_failure"] = on_failure
        saved = _outputs_in(s.get("outputs"), sid, where, scope, "workflowId" in s)
        if saved is not None:
            step["save_as"] = saved
        if s.get("x-skillpress-on-error"):
            step["on_error"] = s["x-skillpress-on-error"]
        return step

    needs = _output_refs(outputs)  # the saved values the workflow's outputs read

    def ending(action: dict[str, Any], where: str, saved: frozenset[str]) -> list[dict[str, Any]]:
        """What an `end` says: a fail with its message, the workflow's outputs (where the way
        to it saved what they read), or just stop."""
        sid = str(action.get("name", "end"))
        if "x-skillpress-fail" in action:
            return [{"id": sid, "fail": _value_in(action["x-skillpress-fail"], where, scope)}]
        if action.get("x-skillpress-return") or (outputs and needs <= saved):
            return [{"id": sid, "return": _value_in(outputs, where, scope)}]
        return []

    def build(
        start: int,
        seen: set[int],
        saved: frozenset[str] = frozenset(),
        stop: frozenset[int] = frozenset(),
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Steps from `start` until a branch ends (None) or jumps on (the stepId); `saved`:
        what the way here saved; `stop`: steps where another way goes too, so reaching one
        (by a goto or by running on to it) is a join, written once after the branch. A way
        that runs off the last step answers the workflow's outputs when it saved what they
        read."""
        # size: one case per step kind and branch
        seq: list[dict[str, Any]] = []
        n = start
        while n < len(steps):
            if n != start and n in stop:  # where the other way goes: they meet here
                return seq, str(steps[n].get("stepId"))
            if n in seen:
                raise ArazzoRefused(f"{name}: a goto loops back to step {steps[n].get('stepId')}")
            seen.add(n)
            raw_step = steps[n]
            seq.append(call(raw_step))
            outs = raw_step.get("outputs")
            if isinstance(outs, dict):
                saved = saved | {f"{raw_step.get('stepId')}.{k}" for k in outs}
            where = f"{name} step {raw_step.get('stepId')}"
            actions = raw_step.get("onSuccess") or []
            for a in actions:
                if a.get("type") not in ("goto", "end") or "workflowId" in a:
                    raise ArazzoRefused(
                        f"{where}: an onSuccess {a.get('type')!r} is outside the subset"
                    )
            if not actions:
                n += 1
                continue
            if len(actions) == 1 and not actions[0].get("criteria"):
                a = actions[0]
                if a["type"] == "end":
                    seq += ending(a, where, saved)
                    return seq, None
                return seq, str(a["stepId"])
            if len(actions) != 2 or not actions[0].get("criteria") or actions[1].get("criteria"):
                raise ArazzoRefused(
                    f"{where}: onSuccess maps when it is one goto or end, or a goto with criteria then one without"
                )
            condition = _condition(actions[0]["criteria"], raw_step, where)
            built: list[tuple[list[dict[str, Any]], str | None, str | None]] = []
            targets = [str(a["stepId"]) for a in actions if a["type"] == "goto"]
            for target in targets:
                if target not in index:
                    raise ArazzoRefused(f"{where}: goto {target!r}, which is no step")
            meets: frozenset[int] = frozenset(index[t] for t in targets)
            for _ in range(2):  # again with where a way jumps, for one that ran on past it
                built = []
                for a in actions:
                    if a["type"] == "end":
                        built.append((ending(a, where, saved), None, None))
                        continue
                    target = str(a["stepId"])
                    others = (meets - {index[target]}) | stop  # an outer join too
                    branch, jump = build(index[target], set(seen), saved, others)
                    built.append((branch, jump, target))
                jumped = frozenset(index[j] for _, j, _ in built if j is not None)
                if jumped <= meets:
                    break
                meets |= jumped
            # a way that goes straight to where the other one rejoins is empty (an `if` with
            # no `else`, followed by a step): its steps are those after the `if`
            joins = {jump for _, jump, _ in built if jump is not None}
            built = [
                (([], t, t) if t is not None and t in joins else b) for b in built for t in [b[2]]
            ]
            branches = [b for b, _, _ in built]
            jumps = {jump for _, jump, _ in built}
            cond_step = {
                "id": str(actions[0].get("name")),
                "if": condition,
                "then": branches[0],
                "else": branches[1],
            }
            seq.append(cond_step)
            jumps.discard(None)
            if not jumps:
                return seq, None
            if len(jumps) > 1:
                raise ArazzoRefused(f"{where}: the two ways do not meet again at one step")
            after = jumps.pop()
            assert after is not None
            n = index[after]
        if outputs and needs <= saved:  # ran off the last step: the workflow's outputs
            seq.append({"id": "outputs", "return": _value_in(outputs, f"{name} outputs", scope)})
        return seq, None

    def _condition(crit: Any, raw_step: Mapping[str, Any], where: str) -> str:
        """An `if`'s saved value from one criterion: `EXPR == true` (a simple condition), or a
        jsonpath test on a saved value (`context` an output, or `$response.body` the step saved)."""
        if not isinstance(crit, list) or len(crit) != 1 or not isinstance(crit[0], dict):
            raise ArazzoRefused(f"{where}: criteria other than one test are outside the subset")
        test = crit[0]
        if test.get("type") in (None, "simple") and "context" not in test:
            said = _TRUE.match(str(test.get("condition", "")))
            if said is None:
                raise ArazzoRefused(
                    f"{where}: the condition {test.get('condition')!r} is outside the subset"
                    " (`<expression> == true`, or a jsonpath test)"
                )
            return _template(said.group(1), where, scope).strip("{}")
        if test.get("type") != "jsonpath":
            raise ArazzoRefused(f"{where}: a {test.get('type')!r} criterion is outside the subset")
        context = str(test.get("context", ""))
        if context == "$response.body":
            sid = raw_step.get("stepId")
            body = [v[0] for k, v in scope.items() if k.startswith(f"$steps.{sid}.outputs.")]
            if not body:
                raise ArazzoRefused(
                    f"{where}: a test on $response.body needs the step to save it (outputs)"
                )
            head = str(body[0])
        else:
            head = _template(context, where, scope).strip("{}")
        path = str(test.get("condition", "$")).removeprefix("$").strip(".")
        if not re.fullmatch(r"[A-Za-z0-9_.-]*", path):
            raise ArazzoRefused(
                f"{where}: the jsonpath {test.get('condition')!r} is outside the subset (a path)"
            )
        return head + (f".{path}" if path else "")

    def lay_failures(seq: list[dict[str, Any]]) -> None:
        """The steps a failure goes to (an onFailure goto), after the way they end, in the
        list of the step that fails: a way of their own that only a failure takes."""
        n = 0
        while n < len(seq):
            step = seq[n]
            for branch in ("then", "else"):
                if isinstance(step.get(branch), list):
                    lay_failures(step[branch])
            target = step.get("on_failure")
            later = {x.get("id") for x in seq[n + 1 :]}
            if target is not None and target not in later:
                where = f"{name} step {step['id']}"
                if target not in index:
                    raise ArazzoRefused(f"{where}: onFailure goto {target!r}, which is no step")
                if index[target] <= index.get(str(step["id"]), -1):
                    raise ArazzoRefused(
                        f"{where}: onFailure goto {target!r}, an earlier step (a loop), is outside"
                        " the subset"
                    )
                if seq and not (
                    {"return", "fail"} & set(seq[-1])
                ):  # the way that did not fail ends here
                    end = f"{str(seq[-1]['id'])[:58]}-ends"
                    seq.append({"id": end if end not in index else f"{end}-x", "return": {}})
                seq += build(index[target], set(), frozenset(scope))[0]
            n += 1

    body, _ = build(0, set(), frozenset(scope))
    lay_failures(body)
    out: dict[str, Any] = {
        "name": name,
        "description": str(raw.get("description") or raw.get("summary") or ""),
        "execution": raw.get("x-skillpress-execution", "hardened"),
        "parameters": _inputs_read(raw.get("inputs"), first + body),
        "steps": first + body,
    }
    return out


def _inputs_read(inputs: Any, steps: list[dict[str, Any]]) -> Any:
    """The workflow's inputs, each one a step reads and that has no default made required: an
    Arazzo document often marks none, and a run without one would send nothing in its place
    (skillpress refuses an optional parameter a step reads with no default to fall back on)."""
    if not isinstance(inputs, dict):
        return {"type": "object", "properties": {}}
    props = inputs.get("properties")
    if not isinstance(props, dict):
        return inputs
    text = json.dumps(steps)
    read = {m.group(1) for m in _TEMPLATE.finditer(text)}
    required = list(inputs.get("required") or [])
    missing = [
        k
        for k, v in props.items()
        if k in read and k not in required and not (isinstance(v, dict) and "default" in v)
    ]
    return {**inputs, "required": required + missing} if missing else inputs


def _output_refs(outputs: Any) -> frozenset[str]:
    """The step outputs a workflow's outputs read (`$steps.<id>.outputs.<name>…`), as
    `<id>.<name>`."""
    text = " ".join(str(v) for v in outputs.values()) if isinstance(outputs, dict) else ""
    found = re.findall(r"\$steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)", text)
    return frozenset(f"{step}.{name}" for step, name in found)


_BODY = re.compile(r"^\$response\.body((?:#/[^\s{}]*)?)$")
_OUTPUTS = re.compile(r"^\$outputs((?:\.[A-Za-z0-9_-]+)+)$")


def _outputs_in(
    outs: Any, sid: str, where: str, scope: dict[str, Any], workflow_step: bool = False
) -> str | None:
    """A step's `outputs` (each `$response.body` or a pointer into it, `$response.body#/id`;
    a workflow step's also `$outputs.name`, an output of the workflow it ran): the answer
    saved once, under the name of the output that is the whole body (else `<step>_body`),
    each output read as a path into it. The saved name, or None."""
    if not outs:
        return None
    if not isinstance(outs, dict):
        raise ArazzoRefused(f"{where}: outputs is a mapping of name → expression")
    paths: dict[str, list[str]] = {}
    for key, value in outs.items():
        theirs = _OUTPUTS.match(str(value).strip()) if workflow_step else None
        if theirs is not None:
            paths[str(key)] = [p for p in theirs.group(1).split(".") if p]
            continue
        m = _BODY.match(str(value).strip())
        if m is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", str(key)):
            raise ArazzoRefused(
                f"{where}: output {key!r}: {value!r} is outside the subset (`$response.body`,"
                " or a pointer into it like `$response.body#/id`, under a name of letters,"
                " digits and '_')"
            )
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in m.group(1)[2:].split("/")]
        paths[str(key)] = [t for t in tokens if t]
    whole = next((k for k, p in paths.items() if not p), None)
    saved = whole or (re.sub(r"[^A-Za-z0-9_]", "_", sid).lstrip("0123456789") or "step")[:58]
    if whole is None:
        saved += "_body"
    for key, path in paths.items():
        scope[f"$steps.{sid}.outputs.{key}"] = (saved, path)
    scope[saved] = sid
    return saved


def _criterion_in(c: Any, where: str) -> Any:
    """One of a step's `successCriteria` as a workflows.yaml `success` entry: a `$statusCode`
    test, a comparison on the answer's body, or a regex or jsonpath test on it."""
    said = str(c.get("condition", "")).strip() if isinstance(c, dict) else ""
    kind = c.get("type", "simple") if isinstance(c, dict) else None
    try:
        if not isinstance(c, dict) or set(c) - {"condition", "type", "context"}:
            raise CriterionRefused("a criterion has condition, and type and context")
        if kind in ("regex", "jsonpath"):
            return to_entry(from_criterion(c))
        if kind != "simple" or "context" in c:
            raise CriterionRefused(f"a {kind!r} criterion")
        if _STATUS.match(said):
            return " ".join(said.split())
        test = body_test(said)
        if test is None:
            raise CriterionRefused(f"{said!r}")
        return to_entry(test)
    except CriterionRefused as exc:
        raise ArazzoRefused(
            f"{where}: successCriteria {c!r} is outside the subset ({exc}; what maps: tests of"
            " $statusCode or $response.body with ==, !=, <, <=, >, >=, and regex or jsonpath"
            " tests on $response.body)"
        ) from None


def _failure_in(actions: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """A step's `onFailure`: (its retry, the step a failure goes on from): one `retry`, one
    `goto` without criteria, and an `end` (what a failed step does anyway)."""
    if not isinstance(actions, list):
        return _retry_in(actions, where), None
    gotos = [a for a in actions if isinstance(a, dict) and a.get("type") == "goto"]
    if len(gotos) > 1 or any(
        a.get("criteria") or set(a) - {"name", "type", "stepId"} or "stepId" not in a for a in gotos
    ):
        raise ArazzoRefused(f"{where}: onFailure maps one goto to a step, without criteria")
    rest = [a for a in actions if a not in gotos]
    return _retry_in(rest, where), (str(gotos[0]["stepId"]) if gotos else None)


def _retry_in(actions: Any, where: str) -> dict[str, Any] | None:
    """A step's `onFailure` less its goto: one `retry` (retryAfter, retryLimit), and an `end`
    without criteria (what a failed step does anyway: the run stops there, failed), or nothing."""
    if not actions:
        return None
    ends = (
        [a for a in actions if isinstance(a, dict) and a.get("type") == "end"]
        if isinstance(actions, list)
        else []
    )
    if any(a.get("criteria") or set(a) - {"name", "type"} for a in ends):
        raise ArazzoRefused(f"{where}: an onFailure end with criteria is outside the subset")
    rest = [a for a in actions if a not in ends] if isinstance(actions, list) else actions
    if not rest:
        return None
    if (
        not isinstance(rest, list)
        or len(rest) != 1
        or not isinstance(rest[0], dict)
        or rest[0].get("type") != "retry"
        or rest[0].get("criteria")
        or set(rest[0]) - {"name", "type", "retryAfter", "retryLimit"}
    ):
        raise ArazzoRefused(
            f"{where}: onFailure maps when it is one retry (retryAfter, retryLimit) without"
            " criteria, a goto and an end"
        )
    after = rest[0].get("retryAfter", 1)
    return {"limit": rest[0].get("retryLimit", 1), "after": after}
