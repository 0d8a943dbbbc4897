"""An Arazzo document's workflows read back as `workflows.yaml` (the mapping: `arazzo`): each
refusal of the whole document said at once."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from skillpress.runtime.interop.arazzo import OK, ArazzoRefused, Locator
from skillpress.runtime.interop.arazzo_components import inline_components
from skillpress.runtime.interop.arazzo_in_calls import (
    StepRefused,
    all_of,
    calls_refused,
    credential_given,
    named_otherwise,
    payload_in,
    refused_parts,
    with_shared,
    workflow_step_extras,
)
from skillpress.runtime.interop.arazzo_in_parts import (
    DECLARED,
    STEP_KEYS,
    criterion_in,
    depends_in,
    failure_in,
    inputs_read,
    operation_in,
    output_refs,
    outputs_in,
    placed,
    said_at_once,
    value_in,
)
from skillpress.runtime.interop.arazzo_in_ways import Keeps, Way, WayBuilt, chained, ways_in
from skillpress.runtime.package.model import Skill
from skillpress.runtime.workflows.checks import argument_refusal
from skillpress.runtime.workflows.scope import _TEMPLATE, WORKFLOWS_FILE

__all__ = ["arazzo_words", "from_arazzo"]


def from_arazzo(
    doc: Any,
    skill: Skill,
    files: Mapping[str, bytes] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The `workflows.yaml` mapping for an Arazzo document's workflows (ArazzoRefused, naming
    what is outside the subset); load it with `load_workflows` to check it like any other.
    `files` (the package) lets a step name the spec's operationId exactly; `notes` gets what
    the mapping left out of the document, each in words (an input no step reads)."""
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
    unsent: list[dict[str, Any]] = []  # the calls of refused steps that run a workflow
    for w in flows:
        try:
            reader = _Reader(w, skill, known, by_id, refusals)
            out.append(reader.workflow())
            if notes is not None:
                notes += reader.notes
            unsent.append({"name": reader.name, "steps": reader.refused_calls})
        except ArazzoRefused as exc:  # this workflow's shape; the others are still read
            refusals.append(str(exc))
    refusals += calls_refused(out, unsent)  # what a run would stop on, said with the rest
    if refusals:
        raise ArazzoRefused(said_at_once(refusals))
    return {"workflows": out}


def arazzo_words(said: str) -> str:
    """A refusal of the workflows an Arazzo document made, in the document's words: no
    `workflows.yaml` (the person wrote none), its inputs called inputs."""
    said = said.removeprefix(f"{WORKFLOWS_FILE}: ")
    return re.sub(r"^(\S+) parameter (\S+)", r"\1 input \2", said)


Built = tuple[list[dict[str, Any]], str | None]  # steps, and the stepId the way jumps on to


class _Reader:
    """One workflow read back. Its steps share the document's refusals (a refused step leaves
    a stand-in, so the refusals of the steps after it are their own, all said at once) and the
    scope of what the steps saved: saved name → the step that saved it;
    `$steps.<id>.outputs.<name>` → (the saved name, the path in it)."""

    def __init__(
        self,
        raw: Any,
        skill: Skill,
        known: Locator,
        by_id: Mapping[str, Any],
        refusals: list[str],
    ) -> None:
        if not isinstance(raw, dict):
            raise ArazzoRefused("a workflow is a mapping")
        name = str(raw.get("workflowId", ""))
        allowed = {
            "workflowId",
            "summary",
            "description",
            "inputs",
            "steps",
            "outputs",
            "dependsOn",
            "parameters",  # every operation step's (one of its own of the same name wins)
        }
        for key in sorted(set(raw) - allowed - {"x-skillpress-execution"}):
            refusals.append(f"{name}: `{key}` is outside the subset")
        steps = raw.get("steps") or []
        if not isinstance(steps, list) or not steps:
            raise ArazzoRefused(f"{name}: steps: a list of at least one")
        self.raw, self.name, self.steps = raw, name, steps
        self.skill, self.known, self.refusals = skill, known, refusals
        self.index = {str(s.get("stepId")): n for n, s in enumerate(steps) if isinstance(s, dict)}
        self.scope: dict[str, Any] = {
            DECLARED: {
                str(s.get("stepId")): set(s["outputs"])
                for s in steps
                if isinstance(s, dict) and isinstance(s.get("outputs"), dict)
            }
        }
        self.first = depends_in(raw, name, by_id, self.scope)
        self.outputs = raw.get("outputs") or {}
        self.inputs = {
            k: v.get("type")
            for k, v in ((raw.get("inputs") or {}).get("properties") or {}).items()
            if isinstance(v, dict)
        }
        self.needs = output_refs(self.outputs)  # the saved values the workflow's outputs read
        self.shared = raw.get("parameters") or []  # the workflow's parameters, for every step
        self.refused_calls: list[dict[str, Any]] = []  # refused steps' calls of a workflow
        self.notes: list[str] = []  # what the mapping left out, in words

    def workflow(self) -> dict[str, Any]:
        """The workflow as `workflows.yaml` writes it."""
        body, _ = self.build(0, set(), frozenset(self.scope))
        self.lay_failures(body)
        raw = self.raw
        parameters, unread = inputs_read(raw.get("inputs"), self.first + body)
        self.notes += [
            f"{self.name} input {name}: no step reads it; kept as the document declares it (a"
            " run takes it and sends none of it)"
            for name in unread
        ]
        return {
            "name": self.name,
            "description": str(raw.get("description") or raw.get("summary") or ""),
            "execution": raw.get("x-skillpress-execution", "hardened"),
            "parameters": parameters,
            "steps": self.first + body,
        }

    def call(self, s: dict[str, Any]) -> dict[str, Any]:
        """One step, or (refused) a stand-in that keeps its outputs' names."""
        try:
            return self.one_call(s)
        except ArazzoRefused as exc:
            self.refusals.extend(refused_parts(exc))
            sid = str(s.get("stepId", ""))
            outs = s.get("outputs")
            for key in outs if isinstance(outs, dict) else {}:
                self.scope.setdefault(f"$steps.{sid}.outputs.{key}", (str(key), []))
            if "workflowId" in s:  # what it passes is checked against the workflow still
                with contextlib.suppress(ArazzoRefused):
                    self.refused_calls.append(self.workflow_step(s, sid, sid))
            return {"id": sid, "fail": "refused"}

    def one_call(self, s: dict[str, Any]) -> dict[str, Any]:
        """One step; every part of it outside the subset refused at once (StepRefused)."""
        sid = str(s.get("stepId", ""))
        where = f"{self.name} step {sid}"
        problems: list[str] = []

        def attempt(part: Any, *args: Any) -> Any:
            try:
                return part(*args)
            except ArazzoRefused as exc:
                problems.extend(refused_parts(exc))
                return None

        for key in sorted(set(s) - STEP_KEYS):
            problems.append(f"{where}: `{key}` is outside the subset")
        crit = s.get("successCriteria") or [{"condition": OK}]
        success = [  # a condition joined by `&&` is its tests, each of which must hold
            attempt(criterion_in, part, where)
            for c in (crit if isinstance(crit, list) else [crit])
            for part in all_of(c)
        ]
        retry, on_failure = attempt(failure_in, s.get("onFailure"), where) or (None, None)
        runs = [k for k in ("operationId", "operationPath", "workflowId") if k in s]
        step: dict[str, Any] = {}
        if len(runs) != 1:
            problems.append(
                f"{where}: a step names exactly one of operationId, operationPath, workflowId"
                f" ({', '.join(runs) or 'none'} here)"
            )
        elif "workflowId" in s:
            step = attempt(self.workflow_step, s, sid, where)
            problems += workflow_step_extras(s, success, retry, on_failure, where)
        else:
            step = attempt(self.tool_step, s, sid, where)
        kept = attempt(outputs_in, s.get("outputs"), sid, where, self.scope, "workflowId" in s)
        if problems:
            raise StepRefused(problems)
        if success != [OK]:
            step["success"] = success
        if retry is not None:
            step["retry"] = retry
        if on_failure is not None:
            step["on_failure"] = on_failure
        step.update(kept or {})
        if s.get("x-skillpress-on-error"):
            step["on_error"] = s["x-skillpress-on-error"]
        return step

    def workflow_step(self, s: dict[str, Any], sid: str, where: str) -> dict[str, Any]:
        """A step by `workflowId`: the workflow it runs, given its parameters."""
        args: dict[str, Any] = {}
        for p in s.get("parameters") or []:
            if p["name"] in args:
                raise ArazzoRefused(
                    f"{where}: parameter {p['name']!r} is given twice; give it once"
                )
            args[p["name"]] = value_in(p.get("value"), where, self.scope)
        return {"id": sid, "workflow": s["workflowId"], "args": args}

    def note(self, said: str | None) -> bool:
        """Whether there is something to say; kept once among the notes when there is."""
        if said is not None and said not in self.notes:
            self.notes.append(said)
        return said is not None

    def tool_step(self, s: dict[str, Any], sid: str, where: str) -> dict[str, Any]:
        """A step by `operationId` or `operationPath`: the tool it calls, each parameter and
        the payload as the arguments the operation takes (refused on import, not at a run)."""
        tool = operation_in(self.skill, s, where, self.known)
        self.note(named_otherwise(s, tool, self.known, where))
        decl = tool.declaration
        wire = {decl.wire_name(q): q for q in decl.query}
        given = with_shared(self.shared, s.get("parameters"))
        named = [(p.get("name"), p.get("in")) for p, _ in given]
        twice = next((n for n in named if named.count(n) > 1), None)
        if twice is not None:
            raise ArazzoRefused(
                f"{where}: parameter {twice[0]!r} ({twice[1]}) is given twice; give it once"
            )
        headers = {decl.wire_name(h).lower(): h for h in decl.header}
        problems: list[str] = []
        cookies = {decl.wire_name(c): c for c in decl.cookie}
        args: dict[str, Any] = {}
        for p, shared in given:
            name = str(p.get("name", ""))
            at = f"{self.name}'s parameters" if shared else where
            if p.get("in") not in ("path", "query", "header", "cookie"):
                raise ArazzoRefused(
                    f"{at}: parameter {name!r}: `in` is path, query, header or cookie"
                )
            if self.note(credential_given(self.skill, tool, str(p["in"]), name, headers, at)):
                continue  # every call carries the credential: the document's value is not sent
            arg = placed(tool, str(p["in"]), name, wire, headers, cookies, at)
            try:
                args[arg] = value_in(p.get("value"), at, self.scope)
            except ArazzoRefused as exc:  # said with the step's other parts
                problems.append(str(exc))
                args[arg] = "{{refused}}"
        if isinstance(s.get("requestBody"), dict):
            payload = value_in(payload_in(s["requestBody"], where), where, self.scope)
            if decl.body_arg:
                args[decl.body_arg] = payload
            elif isinstance(payload, dict):
                args.update(payload)
            else:
                raise ArazzoRefused(f"{where}: a payload that is not the body's fields")
        why = argument_refusal(tool, args, _TEMPLATE.search, self.inputs)
        if why is not None:  # what the operation does not take, on import, not at a run
            problems.append(f"{where}: {why}")
        if problems:
            raise StepRefused(problems)
        return {"id": sid, "tool": tool.operation, "args": args}

    def ending(
        self, action: dict[str, Any], where: str, saved: frozenset[str]
    ) -> list[dict[str, Any]]:
        """What an `end` says: a fail with its message, the workflow's outputs (where the way
        to it saved what they read), or just stop."""
        sid = str(action.get("name", "end"))
        if "x-skillpress-fail" in action:
            return [{"id": sid, "fail": value_in(action["x-skillpress-fail"], where, self.scope)}]
        if action.get("x-skillpress-return") or (self.outputs and self.needs <= saved):
            try:
                said = value_in(self.outputs, f"{self.name} outputs", self.scope)
            except ArazzoRefused as exc:  # said once, with the rest; the ways are read still
                self.refusals.append(str(exc))
                return []
            return [{"id": sid, "return": said}]
        return []

    def build(
        self,
        start: int,
        seen: set[int],
        saved: frozenset[str] = frozenset(),
        stop: frozenset[int] = frozenset(),
    ) -> Built:
        """Steps from `start` until a branch ends (None) or jumps on (the stepId); `saved`:
        what the way here saved; `stop`: steps where another way goes too, so reaching one
        (by a goto or by running on to it) is a join, written once after the branch. A way
        that runs off the last step answers the workflow's outputs when it saved what they
        read."""
        steps = self.steps
        seq: list[dict[str, Any]] = []
        n = start
        while n < len(steps):
            if n != start and n in stop:  # where the other way goes: they meet here
                return seq, str(steps[n].get("stepId"))
            if n in seen:
                raise ArazzoRefused(
                    f"{self.name}: a goto loops back to step {steps[n].get('stepId')}"
                )
            seen.add(n)
            raw_step = steps[n]
            seq.append(self.call(raw_step))
            outs = raw_step.get("outputs")
            if isinstance(outs, dict):
                saved = saved | {f"{raw_step.get('stepId')}.{k}" for k in outs}
            where = f"{self.name} step {raw_step.get('stepId')}"
            actions = raw_step.get("onSuccess") or []
            if not actions:
                n += 1
                continue
            if len(actions) == 1 and not actions[0].get("criteria"):
                a = actions[0]
                if a.get("type") == "end":
                    seq += self.ending(a, where, saved)
                    return seq, None
                if a.get("type") == "goto" and "stepId" in a:
                    return seq, str(a["stepId"])
            following = str(steps[n + 1].get("stepId")) if n + 1 < len(steps) else None
            try:
                ways = self.ways(raw_step, seq[-1], actions, where, following)
                cond_steps, after = self.branch(ways, where, seen, saved, stop)
            except ArazzoRefused as exc:  # the ways do not map: the steps after are read still
                self.refusals.extend(refused_parts(exc))
                self.read_rest(n + 1, seen)
                return seq, None
            seq += cond_steps
            if after is None:
                return seq, None
            n = self.index[after]
        if self.outputs and self.needs <= saved:  # ran off the last step: the outputs
            where = f"{self.name} outputs"
            seq.append({"id": "outputs", "return": value_in(self.outputs, where, self.scope)})
        return seq, None

    def ways(
        self,
        raw_step: Mapping[str, Any],
        step: dict[str, Any],
        actions: list[Any],
        where: str,
        following: str | None,
    ) -> list[Way]:
        """A step's ways on (what they leave out said); a way on its status has the step save
        it."""
        keeps = Keeps.of(str(raw_step.get("stepId")), step)
        ways, left_out = ways_in(raw_step, actions, where, self.scope, following, keeps)
        if "tool" in step and any(t.head == keeps.status for w in ways for t in w.tests or ()):
            step.setdefault("status_as", keeps.status)
        if keeps.wanted:  # the headers its ways read: the step saves them
            step["headers_as"] = {**(step.get("headers_as") or {}), **keeps.wanted}
        for said in left_out:
            self.note(said)
        return ways

    def read_rest(self, start: int, seen: set[int]) -> None:
        """The steps from `start` not read yet, each on its own (after a step whose ways do not
        map), so that their refusals are said with the others."""
        for m in range(start, len(self.steps)):
            if m not in seen:
                seen.add(m)
                raw = self.steps[m]
                self.call(raw)
                try:  # and its ways on
                    ways_in(
                        raw,
                        raw.get("onSuccess") or [],
                        f"{self.name} step {raw.get('stepId')}",
                        self.scope,
                        None,
                        Keeps.of(str(raw.get("stepId")), {}),
                    )
                except ArazzoRefused as exc:
                    self.refusals.extend(refused_parts(exc))
        try:  # and what the workflow's outputs read
            value_in(self.outputs, f"{self.name} outputs", self.scope)
        except ArazzoRefused as exc:
            self.refusals.append(str(exc))

    def branch(
        self,
        ways: list[Way],
        where: str,
        seen: set[int],
        saved: frozenset[str],
        stop: frozenset[int],
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A step's ways on as `if` steps, each the `else` of the one before (none where every
        way goes straight on to where they meet), and the stepId they meet at again (None when
        none goes on)."""
        index = self.index
        for target in (w.target for w in ways if w.target is not None):
            if target not in index:
                raise ArazzoRefused(f"{where}: goto {target!r}, which is no step")
        targets = [w.target for w in ways if w.target is not None]
        meets = frozenset(index[t] for t in targets)
        shared = {t for t in targets if targets.count(t) > 1}  # where two ways meet, at least
        built: list[WayBuilt] = []
        said = len(self.refusals)
        for _ in range(2):  # again with where a way jumps, for one that ran on past it
            del self.refusals[said:]  # the last reading's refusals are said
            built = []
            for w in ways:
                if w.target is None:
                    built.append((self.ending(dict(w.action), where, saved), None, None))
                    continue
                if w.target in shared or index[w.target] in stop:  # meets another way there
                    built.append(([], w.target, w.target))
                    continue
                others = (meets - {index[w.target]}) | stop  # an outer join too
                branch, jump = self.build(index[w.target], set(seen), saved, others)
                built.append((branch, jump, w.target))
            jumped = frozenset(index[j] for _, j, _ in built if j is not None)
            if jumped <= meets:
                break
            meets |= jumped
        return chained(ways, built, where)

    def lay_failures(self, seq: list[dict[str, Any]]) -> None:
        """The steps a failure goes to (an onFailure goto), after the way they end, in the
        list of the step that fails: a way of their own that only a failure takes."""
        index = self.index
        n = 0
        while n < len(seq):
            step = seq[n]
            for branch in ("then", "else"):
                if isinstance(step.get(branch), list):
                    self.lay_failures(step[branch])
            target = step.get("on_failure")
            later = {x.get("id") for x in seq[n + 1 :]}
            if target is not None and target not in later:
                where = f"{self.name} step {step['id']}"
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
                seq += self.build(index[target], set(), frozenset(self.scope))[0]
            n += 1
