"""An Arazzo step read back, piece by piece: its runtime expressions as templates, the
operation it names, where each parameter goes, its criteria, its outputs, its failure actions;
and a workflow's `dependsOn`, inputs and outputs (`arazzo_in` reads the whole)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skillpress.format.declaration import HEADER_NAME
from skillpress.runtime.interop.arazzo import ArazzoRefused, Locator
from skillpress.runtime.package.model import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.workflows.criteria import (
    CriterionRefused,
    body_test,
    from_criterion,
    to_entry,
)
from skillpress.runtime.workflows.scope import _TEMPLATE, UNREAD
from skillpress.runtime.workflows.step_rules import STATUS as _STATUS

__all__ = [
    "STEP_KEYS",
    "criterion_in",
    "depends_in",
    "failure_in",
    "inputs_read",
    "operation_in",
    "output_refs",
    "outputs_in",
    "placed",
    "said_at_once",
    "template_in",
    "value_in",
]

_INPUT = re.compile(r"^\$inputs\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)((?:#/[^\s{}]*)?)$")

_STEP = re.compile(
    r"^\$steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)"
    r"((?:#/[^\s{}]*)?)$"
)

_WORKFLOW_OUT = re.compile(
    r"^\$workflows\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)"
    r"((?:#/[^\s{}]*)?)$"
)

_EMBEDDED = re.compile(r"\{(\$[^{}]+)\}")


DECLARED = "$declared"  # in a reader's scope: each step's outputs as the document declares them


def template_in(expr: str, where: str, scope: Mapping[str, Any]) -> str:
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
            if re.match(r"^\$steps\.[A-Za-z0-9_-]+\.(?!outputs\.)", expr):
                raise ArazzoRefused(
                    f"{where}: {expr!r} is no runtime expression the Arazzo specification"
                    " defines (a step's output is `$steps.<stepId>.outputs.<name>`)"
                )
            raise ArazzoRefused(f"{where}: the expression {expr!r} is outside the subset")
        found = scope.get(f"$steps.{m.group(1)}.outputs.{m.group(2)}")
        if not isinstance(found, tuple) and m.group(2) in scope.get(DECLARED, {}).get(
            m.group(1), ()
        ):
            raise ArazzoRefused(
                f"{where}: {expr!r}: step {m.group(1)} saves {m.group(2)}, but not on every way"
                " to this step (a way that does not run it comes here too), and a step reads"
                " only what every way to it saved"
            )
        if not isinstance(found, tuple):
            said = sorted(
                k.split(".outputs.", 1)[1]
                for k in scope
                if k.startswith(f"$steps.{m.group(1)}.outputs.")
            )
            theirs = f" (its outputs: {', '.join(said)})" if said else ""
            raise ArazzoRefused(
                f"{where}: {expr!r} names no output step {m.group(1)} saved{theirs}"
            )
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


def value_in(value: Any, where: str, scope: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        if value.startswith("$"):
            return template_in(value, where, scope)
        return _EMBEDDED.sub(lambda m: template_in(m.group(1), where, scope), value)
    if isinstance(value, dict):
        return {k: value_in(v, where, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [value_in(v, where, scope) for v in value]
    return value


STEP_KEYS = {
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
    # what an export says holds the call here (the operation's own file holds it: read, not kept)
    "x-skillpress-gate",
    "x-skillpress-identity",
}


def operation_in(skill: Skill, step: Mapping[str, Any], where: str, known: Locator) -> Tool:
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


def placed(
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


def said_at_once(refusals: list[str]) -> str:
    """Every refusal of a document in one answer (each once, in the order met)."""
    unique = list(dict.fromkeys(refusals))
    if len(unique) == 1:
        return unique[0]
    lines = "\n".join(f"  - {r}" for r in unique)
    return f"{len(unique)} parts of the document are outside what maps:\n{lines}"


def depends_in(
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


def inputs_read(inputs: Any, steps: list[dict[str, Any]]) -> tuple[Any, list[str]]:
    """The workflow's inputs, each one a step reads and that has no default made required: an
    Arazzo document often marks none, and a run without one would send nothing in its place
    (skillpress refuses an optional parameter a step reads with no default to fall back on).
    An input no step reads is kept as the document declares it, marked UNREAD (FAPI-PAR's
    `TokenRequestBody`: its token step writes the body from the other inputs), and named, the
    second of the pair: a caller following the document still gives it, and none of it is
    sent."""
    if not isinstance(inputs, dict):
        return {"type": "object", "properties": {}}, []
    props = inputs.get("properties")
    if not isinstance(props, dict):
        return inputs, []
    text = json.dumps(steps)
    read = {m.group(1) for m in _TEMPLATE.finditer(text)}
    unread = sorted(k for k, v in props.items() if k not in read and isinstance(v, dict))
    required = list(inputs.get("required") or [])
    missing = [
        k
        for k, v in props.items()
        if k in read and k not in required and not (isinstance(v, dict) and "default" in v)
    ]
    made = dict(inputs)
    if unread:
        made["properties"] = {
            k: {**v, UNREAD: True} if k in unread else v for k, v in props.items()
        }
    if missing:
        made["required"] = required + missing
    return made, unread


def output_refs(outputs: Any) -> frozenset[str]:
    """The step outputs a workflow's outputs read (`$steps.<id>.outputs.<name>…`), as
    `<id>.<name>`."""
    text = " ".join(str(v) for v in outputs.values()) if isinstance(outputs, dict) else ""
    found = re.findall(r"\$steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)", text)
    return frozenset(f"{step}.{name}" for step, name in found)


_BODY = re.compile(r"^\$response\.body((?:#/[^\s{}]*)?)$")

# the runtime expressions Arazzo 1.0's grammar defines (`$outputs[0].id`, `$workflow_order_id`:
# none of them)
_DEFINED = re.compile(
    r"^\$(url|method|statusCode|(request|response|message)\.|(inputs|outputs|steps|workflows"
    r"|sourceDescriptions|components)\.[A-Za-z0-9_-])"
)
_BODY_DOTTED = re.compile(r"^\$response\.body((?:\.[A-Za-z0-9_-]+)+)$")  # as examples write it
_HEADERS = re.compile(r"^\$response\.headers\.")  # as one example writes it; the grammar: header
# a status test as a way or a retry writes it (`$statusCode >= 500`)
STATUS_TEST = re.compile(r"^\s*\$statusCode\s*(==|!=|<=|>=|<|>)\s*(\d{3})\s*$")


def response_header(said: str) -> str | None:
    """The header `$response.header.<name>` names, or None."""
    name = said.removeprefix("$response.header.")
    return name if name != said and HEADER_NAME.match(name) else None


def name_of(sid: str, limit: int = 58) -> str:
    """A step id as a name a template can read (its start, when something follows it)."""
    return (re.sub(r"[^A-Za-z0-9_]", "_", sid).lstrip("0123456789") or "step")[:limit]


_OUTPUTS = re.compile(r"^\$outputs((?:\.[A-Za-z0-9_-]+)+)$")


def _undefined(key: Any, value: str, where: str) -> ArazzoRefused:
    """An output whose expression the Arazzo grammar does not define, saying what it defines."""
    hint = (
        "a response header is `$response.header.<name>`"
        if _HEADERS.match(value.strip())
        else "they begin $inputs., $outputs., $steps., $response., $statusCode…"
    )
    return ArazzoRefused(
        f"{where}: output {key!r}: {value!r} is no runtime expression the Arazzo specification"
        f" defines ({hint})"
    )


def outputs_in(
    outs: Any, sid: str, where: str, scope: dict[str, Any], workflow_step: bool = False
) -> dict[str, Any]:
    """A step's `outputs` (each `$response.body` or a pointer or path into it,
    `$response.body#/id`, `$response.body.id`; `$statusCode`; `$response.header.<name>`;
    a workflow step's also `$outputs.name`, an output of the workflow it ran): the answer
    saved once, under the name of the output that is the whole body (else `<step>_body`),
    each output read as a path into it; the status and each header saved under its output's
    name. What the step says of it: `save_as`, `status_as`, `headers_as`."""
    if not outs:
        return {}
    if not isinstance(outs, dict):
        raise ArazzoRefused(f"{where}: outputs is a mapping of name → expression")
    paths: dict[str, list[str]] = {}
    kept: dict[str, Any] = {}
    for key, value in outs.items():
        said, named = str(value).strip(), re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", str(key))
        if named and not workflow_step and _kept_output(str(key), said, kept):
            scope[f"$steps.{sid}.outputs.{key}"], scope[str(key)] = (str(key), []), sid
            continue
        paths[str(key)] = _output_path(key, said, bool(named), workflow_step, where)
    if not paths:
        return kept
    whole = next((k for k, p in paths.items() if not p), None)
    saved = whole or name_of(sid)
    if whole is None:
        saved += "_body"
    for key, path in paths.items():
        scope[f"$steps.{sid}.outputs.{key}"] = (saved, path)
    scope[saved] = sid
    return {"save_as": saved, **kept}


def _output_path(key: Any, said: str, named: bool, workflow_step: bool, where: str) -> list[str]:
    """Where in the step's answer an output is: a pointer or path into its body (a workflow
    step's: an output of the workflow it ran, `$outputs.name`)."""
    theirs = _OUTPUTS.match(said) if workflow_step else None
    if theirs is not None:
        return [p for p in theirs.group(1).split(".") if p]
    dotted = _BODY_DOTTED.match(said)
    if dotted is not None and named:
        return [p for p in dotted.group(1).split(".") if p]
    if not _DEFINED.match(said) or _HEADERS.match(said):
        raise _undefined(key, said, where)
    m = _BODY.match(said)
    if m is None or not named:
        raise ArazzoRefused(
            f"{where}: output {key!r}: {said!r} is outside the subset (`$response.body`,"
            " a pointer into it like `$response.body#/id` or a path like"
            " `$response.body.id`, `$statusCode` or `$response.header.<name>`, under a"
            " name of letters, digits and '_')"
        )
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in m.group(1)[2:].split("/")]
    return [t for t in tokens if t]


def _kept_output(key: str, said: str, kept: dict[str, Any]) -> bool:
    """Whether an output is the answer's status or one of its headers, noted in `kept` as the
    step's `status_as` or `headers_as`."""
    header = response_header(said)
    if header:
        kept.setdefault("headers_as", {})[key] = header
    elif said == "$statusCode":
        kept["status_as"] = key
    return bool(header) or said == "$statusCode"


def criterion_in(c: Any, where: str) -> Any:
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
        if "||" in said and all(_STATUS.match(part.strip()) for part in said.split("||")):
            return " || ".join(" ".join(part.split()) for part in said.split("||"))
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


def failure_in(actions: Any, where: str) -> tuple[dict[str, Any] | None, str | None]:
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
        or set(rest[0]) - {"name", "type", "retryAfter", "retryLimit", "criteria"}
    ):
        raise ArazzoRefused(
            f"{where}: onFailure maps when it is one retry (retryAfter, retryLimit, criteria on"
            " the status), a goto and an end"
        )
    when = _retry_when(rest[0].get("criteria"), where)
    after = rest[0].get("retryAfter", 1)
    made = {"limit": rest[0].get("retryLimit", 1), "after": after}
    return {**made, "when": when} if when else made


def _retry_when(criteria: Any, where: str) -> list[str]:
    """A retry's criteria as the status tests it is for (each must hold; `&&` joins two)."""
    tests: list[str] = []
    for c in criteria or []:
        said = c.get("condition") if isinstance(c, dict) else None
        for part in str(said).split("&&") if isinstance(said, str) else [None]:
            m = STATUS_TEST.match(part) if part is not None and "context" not in c else None
            if m is None:
                raise ArazzoRefused(
                    f"{where}: a retry's criterion {said!r} is outside the subset (a retry is"
                    " for statuses: `$statusCode == 503`, `$statusCode >= 500`)"
                )
            tests.append(f"$statusCode {m.group(1)} {m.group(2)}")
    return tests
