"""A skill's hardened workflows written as an Arazzo 1.0.1 document (the mapping: `arazzo`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillpress.runtime.interop.arazzo import ARAZZO_VERSION, OK, ArazzoRefused, Locator
from skillpress.runtime.package.model import Skill
from skillpress.runtime.workflows.criteria import literal_text, to_criterion
from skillpress.runtime.workflows.if_tests import IfTest
from skillpress.runtime.workflows.model import either_said
from skillpress.runtime.workflows.model import walk as walk_steps
from skillpress.runtime.workflows.run import Step, Workflow
from skillpress.runtime.workflows.scope import _TEMPLATE

__all__ = ["left_out", "to_arazzo", "unguarded"]


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
    """One call step: what it runs and with what, its criteria, failure actions and outputs."""
    out: dict[str, Any] = {"stepId": s.id}
    args = _value_out(s.args or {}, params, saver)
    if s.kind == "workflow":
        out["workflowId"] = s.target
        out["parameters"] = [{"name": k, "value": v} for k, v in args.items()]
    else:
        out.update(_operation_out(s, skill, args, where))
    rules = s.rules
    status = (
        [{"condition": f"$statusCode {op} {n}"} for op, n in rules.success]
        + [{"condition": either_said(group)} for group in rules.either]
        if rules is not None and (rules.success or rules.either)
        else [{"condition": OK}]
    )
    out["successCriteria"] = status + [to_criterion(t) for t in (rules.body if rules else ())]
    failure: list[dict[str, Any]] = []
    if rules is not None and rules.retry_limit:
        retry: dict[str, Any] = {
            "name": "retry",
            "type": "retry",
            "retryAfter": rules.retry_after,
            "retryLimit": rules.retry_limit,
        }
        if rules.retry_when:
            retry["criteria"] = [{"condition": f"$statusCode {o} {n}"} for o, n in rules.retry_when]
        failure.append(retry)
    if s.on_failure:
        failure.append({"name": f"{s.id}_failed", "type": "goto", "stepId": s.on_failure})
    if failure:
        out["onFailure"] = failure
    outputs = _outputs_out(s, callees)
    if outputs:
        out["outputs"] = outputs
    if s.on_error:
        out["x-skillpress-on-error"] = s.on_error
    return out


def _outputs_out(s: Step, callees: Mapping[str, Workflow]) -> dict[str, str]:
    """What a call step saves, as its outputs: the answer (a workflow step's: each output of
    the workflow it runs, by name), its status and the headers it keeps."""
    out: dict[str, str] = {}
    if s.save_as and s.kind == "workflow":
        names = _returned(callees[s.target or ""]) if s.target in callees else []
        out.update({n: f"$outputs.{n}" for n in names})
    elif s.save_as:
        out[s.save_as] = "$response.body"
    if s.status_as:
        out[s.status_as] = "$statusCode"
    out.update({name: f"$response.header.{header}" for name, header in s.headers_as})
    return out


def _operation_out(
    s: Step, skill: Skill, args: Mapping[str, Any], where: Locator
) -> dict[str, Any]:
    """A tool step's operation, and its arguments as located parameters and a payload."""
    if "." in (s.target or ""):
        raise ArazzoRefused(
            f"step {s.id}: {s.target} is another skill's operation; this export writes one"
            " source description"
        )
    decl = skill.tool(s.target or "").declaration
    out: dict[str, Any] = dict(where.locate(s.target or ""))
    # what holds the call here, carried where another runner can see it (it does not hold it)
    if decl.approval is not None:
        out["x-skillpress-gate"] = {
            "risk": decl.approval.risk,
            "binds": list(decl.approval.binds),
        }
    if decl.identity:
        out["x-skillpress-identity"] = list(decl.identity)
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
        "workflows": [_Writer(wf, skill, where, workflows).workflow() for wf in fixed.values()],
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


def unguarded(workflows: Mapping[str, Workflow], skill: Skill) -> list[str]:
    """What another runner would send unguarded: one line per hardened step whose operation a
    person approves (a gate) or that is sent once (an identity). The export carries each as
    `x-skillpress-gate` / `x-skillpress-identity` on the step; a runner that ignores
    extensions ignores them."""
    out = []
    for name, wf in workflows.items():
        if wf.execution != "hardened":
            continue
        for s in walk_steps(wf.steps):
            if s.kind != "tool" or "." in (s.target or ""):
                continue
            decl = skill.tool(s.target or "").declaration
            held = [
                *(["gated (a person approves each call)"] if decl.approval is not None else []),
                *(["sent once (an identity)"] if decl.identity else []),
            ]
            if held:
                out.append(
                    f"{name} step {s.id}: {s.target} is {' and '.join(held)} here; another"
                    " runner does not hold it (x-skillpress-* on the step says so)"
                )
    return out


class _Writer:
    """One workflow written out: its inputs, its steps laid as Arazzo's one flat list (an `if`
    as the `onSuccess` of the call before it), its outputs (from its one `return`)."""

    def __init__(
        self, wf: Workflow, skill: Skill, where: Locator, callees: Mapping[str, Workflow]
    ) -> None:
        self.wf, self.skill, self.where, self.callees = wf, skill, where, callees
        self.params = set((wf.parameters.get("properties") or {}).keys())
        self.failure_targets = {s.on_failure for s in walk_steps(wf.steps) if s.on_failure}
        self.saver = {
            **{
                s.save_as: ("!" if s.kind == "workflow" else "") + s.id
                for s in walk_steps(wf.steps)
                if s.save_as
            },
            **{
                name: s.id
                for s in walk_steps(wf.steps)
                for name in [s.status_as or "", *(n for n, _ in s.headers_as)]
                if name
            },
        }
        self.outputs: dict[str, Any] = {}

    def workflow(self) -> dict[str, Any]:
        wf = self.wf
        steps = self.emit(wf.steps, None)
        doc: dict[str, Any] = {
            "workflowId": wf.name,
            "description": wf.description,
            "inputs": {k: v for k, v in wf.parameters.items() if k != "additionalProperties"},
            "steps": steps,
        }
        if self.outputs:
            doc["outputs"] = self.outputs
        return doc

    def refuse(self, step: Step, why: str) -> ArazzoRefused:
        return ArazzoRefused(f"{self.wf.name} step {step.id}: {why}, which Arazzo cannot say")

    def ending(self, s: Step, criteria: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        action: dict[str, Any] = {"name": s.id, "type": "end"}
        if s.kind == "return" and s.value == {}:  # an end that answers nothing
            pass
        elif s.kind == "fail":
            action["x-skillpress-fail"] = _value_out(s.value, self.params, self.saver)
        else:
            if self.outputs:
                raise self.refuse(s, "a second return (a workflow has one set of outputs)")
            if not isinstance(s.value, dict):
                raise self.refuse(s, "a return that is not a mapping of outputs")
            self.outputs.update(_value_out(s.value, self.params, self.saver))
            action["x-skillpress-return"] = True
        if criteria:
            action["criteria"] = criteria
        return action

    def emit(self, seq: tuple[Step, ...], cont: str | None) -> list[dict[str, Any]]:
        """Steps in Arazzo's one flat list; `cont`: the stepId the list goes on to."""
        out: list[dict[str, Any]] = []
        for n, s in enumerate(seq):
            rest = seq[n + 1 :]
            if s.kind in ("tool", "workflow"):
                out.append(
                    _call_out(s, self.skill, self.params, self.saver, self.where, self.callees)
                )
                continue
            if not out or out[-1].get("onSuccess"):
                raise self.refuse(s, f"a {s.kind} that does not follow a call")
            if s.kind in ("return", "fail"):
                out[-1]["onSuccess"] = [self.ending(s)]
                if rest and rest[0].id in self.failure_targets:  # reached by a failure's goto
                    continue
                if rest:
                    raise self.refuse(s, f"steps after a {s.kind}")
                return out
            after = next((x.id for x in rest if x.kind in ("tool", "workflow")), cont)
            if rest and rest[0].kind not in ("tool", "workflow"):
                raise self.refuse(s, "an if followed by something other than a call")
            out[-1]["onSuccess"], laid = self.branches(s, after)
            out += laid
        if cont and out and not out[-1].get("onSuccess"):
            out[-1]["onSuccess"] = [{"name": "continue", "type": "goto", "stepId": cont}]
        return out

    def branches(
        self, s: Step, after: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """An `if` as the actions of the call before it (a goto with criteria to its then
        steps, one without to its else steps; an `if` that is all of an else, its ways after
        the first), and the steps of every way, laid after it."""
        ways: list[tuple[tuple[Step, ...], list[dict[str, Any]] | None, str]] = []
        at = s
        while True:
            ways.append((at.then, [self.criterion(t) for t in at.tests], at.id))
            if len(at.otherwise) != 1 or at.otherwise[0].kind != "if":
                ways.append((at.otherwise, None, f"{at.id}_else"))
                break
            at = at.otherwise[0]
        actions = []
        laid: list[dict[str, Any]] = []
        for branch, crit, name in ways:
            if branch and branch[0].kind in ("return", "fail"):
                if len(branch) > 1:
                    raise self.refuse(branch[1], f"steps after a {branch[0].kind}")
                actions.append(self.ending(branch[0], crit))
                continue
            steps = self.emit(branch, after)
            target = steps[0]["stepId"] if steps else after
            action: dict[str, Any] = (
                {"name": name, "type": "goto", "stepId": target}
                if target
                else {"name": name, "type": "end"}
            )
            if crit:
                action["criteria"] = crit
            actions.append(action)
            laid += steps
        return actions, laid

    def criterion(self, test: IfTest) -> dict[str, Any]:
        """One test of an `if` as an Arazzo criterion: a simple condition (`== true` for a
        boolean, which standard runners evaluate as skillpress does; a JSONPath test is true
        there whenever the path matches, even `false`), or the jsonpath presence test it is."""
        said = _expr(test.head, test.path[len(test.head) :], self.params, self.saver)
        if test.query is not None:
            return {"context": said, "condition": test.query, "type": "jsonpath"}
        if test.op:
            return {"condition": f"{said} {test.op} {literal_text(test.value)}"}
        return {"condition": f"{said} == true"}
