"""A step's `onSuccess` read as the ways on from it (the mapping: `arazzo`): each way a `goto` or
`end` with the tests its criteria make, taken when they all hold and no way before it was;
when none is, the next step (as arazzo-runner goes on, and as a document with no `onSuccess`
does). A way's criteria become an `if`'s tests on what the step saved: `$response.body.x ==
false`, `$steps.s.outputs.y == true`, `$inputs.z != 'a'`, a jsonpath test; a
`$statusCode == N` that the step's success criteria already hold to is true of every way.
Pure: actions and the step in, ways or refusals (naming every way's at once) out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillpress.runtime.interop.arazzo import ArazzoRefused
from skillpress.runtime.interop.arazzo_in_calls import StepRefused, all_of, refused_parts
from skillpress.runtime.interop.arazzo_in_parts import (
    STATUS_TEST,
    name_of,
    response_header,
    template_in,
)
from skillpress.runtime.workflows.criteria import literal_value, query_refusal
from skillpress.runtime.workflows.if_tests import IfTest, if_entry

__all__ = ["Keeps", "Way", "WayBuilt", "chained", "ways_in"]

# a way read on: its steps, the stepId it jumps on to (None: it ends), the stepId it went to
WayBuilt = tuple[list[dict[str, Any]], str | None, str | None]

_SIMPLE = re.compile(r"^\s*(\$[^\s=!<>]+)\s*(==|!=|<=|>=|<|>)\s*(\S.*?)\s*$")
_BODY = re.compile(r"^\$response\.body((?:#/[^\s{}]*)?|(?:\.[A-Za-z0-9_-]+)+)$")


@dataclass
class Keeps:
    """What a step's ways may read that a step saves only when asked: its status (under
    `status`, unless the step succeeds on the one status `pinned`) and its headers (each under
    the name `headers` gives it, else `<prefix>_<header>`); `wanted` gets the headers a way
    reads, by the name it reads them under."""

    status: str
    prefix: str
    headers: dict[str, str]  # lowercase header → the name the step saves it under already
    pinned: int | None = None
    wanted: dict[str, str] | None = None

    @classmethod
    def of(cls, sid: str, step: Mapping[str, Any]) -> Keeps:
        """What the ways of step `sid` may have it save, given what it saves already (`step`,
        as workflows.yaml writes it: none yet for a step read only for its refusals)."""
        prefix = name_of(sid, 56)
        return cls(
            step.get("status_as") or f"{prefix}_status",
            prefix if "tool" in step or not step else "",
            {str(h).lower(): n for n, h in (step.get("headers_as") or {}).items()},
        )

    def header(self, name: str) -> str:
        """The name a way reads header `name` under (wanted from the step)."""
        saved = self.headers.get(name.lower())
        if saved is None:
            saved = f"{self.prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"[:64]
        if self.wanted is None:
            self.wanted = {}
        self.wanted[saved] = name
        return saved


@dataclass(frozen=True)
class Way:
    """One way on: its `name`, its `action` (goto or end, as the document writes it) and its
    `tests` (None: the way taken when no way before it is)."""

    name: str
    action: Mapping[str, Any]
    tests: tuple[IfTest, ...] | None

    @property
    def target(self) -> str | None:
        """The step it goes to (None: it ends the workflow)."""
        return str(self.action["stepId"]) if self.action.get("type") == "goto" else None


def ways_in(
    raw_step: Mapping[str, Any],
    actions: list[Any],
    where: str,
    scope: Mapping[str, Any],
    next_id: str | None,
    keeps: Keeps | None = None,
) -> tuple[list[Way], list[str]]:
    """The ways on from a step, the last one taken when no other is, and what was left out in
    words (a way that is never taken); StepRefused naming every way outside the subset. A way
    on a status the step's success does not hold to, or on a header, reads what `keeps` says
    the step saves."""
    problems: list[str] = []
    notes: list[str] = []
    ways: list[Way] = []
    keeps = keeps or Keeps("", "", {})
    keeps.pinned = _pinned_status(raw_step)
    for n, a in enumerate(actions):
        name = str(a.get("name", f"way{n + 1}")) if isinstance(a, dict) else f"way{n + 1}"
        if not isinstance(a, dict) or a.get("type") not in ("goto", "end"):
            kind = a.get("type") if isinstance(a, dict) else a
            problems.append(
                f"{where}: onSuccess {name}: a {kind!r} action is not one the Arazzo"
                " specification defines on success (goto or end)"
            )
            continue
        if "workflowId" in a:
            problems.append(
                f"{where}: onSuccess {name}: a goto to another workflow is outside the subset"
                " (a step runs a workflow with `workflowId`)"
            )
            continue
        if not a.get("criteria"):
            ways.append(Way(name, a, None))
            if n + 1 < len(actions):
                notes.append(
                    f"{where}: onSuccess {name} has no criteria, so the ways after it are never"
                    " taken; left out"
                )
            break
        for k, criteria in enumerate(_alternatives(a["criteria"], f"{where}: onSuccess {name}")):
            alt = name if k == 0 else f"{name}-or{k + 1}"  # `||`: a way per alternative, in turn
            try:
                said = f"{where}: onSuccess {name}"
                tests = way_tests(criteria, raw_step, said, scope, keeps)
            except ArazzoRefused as exc:
                problems.extend(refused_parts(exc))
                break
            if tests is None:
                notes.append(
                    f"{where}: onSuccess {alt} tests a status the step never succeeds with, so"
                    " it is never taken; left out"
                )
                continue
            ways.append(Way(alt, {**a, "name": alt}, tests))
    if problems:
        raise StepRefused(problems)
    if not ways or ways[-1].tests is not None:  # none held: the next step, or the end
        name = f"{raw_step.get('stepId')}-else"
        on = {"name": name, "type": "goto", "stepId": next_id}
        ways.append(Way(name, on if next_id is not None else {"name": name, "type": "end"}, None))
    return _without_unneeded(ways), notes


MAX_ALTERNATIVES = 16


def _alternatives(criteria: Any, where: str) -> list[Any]:
    """A way's criteria with `||` in a simple condition, as the criteria of each alternative
    (`a || b` beside `c`: [a, c] then [b, c]; `&&` binds first, as it reads), taken in turn as
    the first that holds is; as written otherwise."""
    if not isinstance(criteria, list):
        return [criteria]
    out: list[list[Any]] = [[]]
    for c in criteria:
        said = c.get("condition") if isinstance(c, dict) else None
        simple = isinstance(said, str) and "||" in said and "context" not in c
        parts = [p.strip() for p in str(said).split("||")] if simple else [None]
        out = [[*o, c if p is None else {**c, "condition": p}] for o in out for p in parts]
        if len(out) > MAX_ALTERNATIVES:
            raise ArazzoRefused(f"{where}: more than {MAX_ALTERNATIVES} alternatives (`||`)")
    return out


def _pinned_status(raw_step: Mapping[str, Any]) -> int | None:
    """The one status the step succeeds with, when its success criteria say so."""
    crit = raw_step.get("successCriteria")
    for c in crit if isinstance(crit, list) else []:
        for part in all_of(c):
            said = part.get("condition") if isinstance(part, dict) else None
            m = STATUS_TEST.match(str(said)) if "context" not in part else None
            if m is not None and m.group(1) == "==":
                return int(m.group(2))
    return None


def _without_unneeded(ways: list[Way]) -> list[Way]:
    """Without a way to where the last one goes too, when no way after it to elsewhere can
    hold with it (`x == true` to A, `x == false` to B, else A: `x == false` to B, else A)."""
    last = ways[-1]
    kept = list(ways)
    for i in range(len(ways) - 2, -1, -1):
        way = kept[i]
        if way.target is None or way.target != last.target:
            continue
        later = [w for w in kept[i + 1 : -1] if w.target != last.target]
        if all(_exclusive(way, w) for w in later):
            del kept[i]
    return kept


def _exclusive(a: Way, b: Way) -> bool:
    return any(x.excludes(y) for x in a.tests or () for y in b.tests or ())


def way_tests(
    criteria: Any,
    raw_step: Mapping[str, Any],
    where: str,
    scope: Mapping[str, Any],
    keeps: Keeps,
) -> tuple[IfTest, ...] | None:
    """A way's criteria as the tests of an `if` after the step (None: the way is never taken,
    its status not one the step succeeds with); StepRefused naming each one outside."""
    if not isinstance(criteria, list):
        raise ArazzoRefused(f"{where}: criteria is a list")
    tests: list[IfTest] = []
    problems: list[str] = []
    never = False
    for c in criteria:
        for part in all_of(c):
            try:
                held = _status_test(part, where, keeps)
                if held is None:
                    tests.append(_test(part, raw_step, where, scope, keeps))
                elif isinstance(held, IfTest):
                    tests.append(held)
                else:
                    never = never or not held
            except ArazzoRefused as exc:
                problems.append(str(exc))
    if problems:
        raise StepRefused(problems)
    if never:
        return None
    if not tests:
        raise ArazzoRefused(f"{where}: its criteria test only the status every success has")
    return tuple(tests)


def _status_test(part: Any, where: str, keeps: Keeps) -> bool | IfTest | None:
    """A `$statusCode` criterion: whether it holds of every success, when the step succeeds on
    one status and it asks `==`; else a test of the status the step saved (None: not one)."""
    said = part.get("condition") if isinstance(part, dict) else None
    m = STATUS_TEST.match(said) if isinstance(said, str) and "context" not in part else None
    if m is None:
        if isinstance(said, str) and "$statusCode" in said and "context" not in part:
            raise ArazzoRefused(
                f"{where}: the condition {said!r} is outside the subset (a way tests the"
                " status as `$statusCode == N`, or another comparison with a number)"
            )
        return None
    pinned, name = keeps.pinned, keeps.status
    if pinned is not None and m.group(1) == "==":
        return int(m.group(2)) == pinned
    if not name:
        raise ArazzoRefused(f"{where}: {said!r} tests the status of a step that saves none")
    return IfTest(name, m.group(1), int(m.group(2)))


def _test(
    part: Any, raw_step: Mapping[str, Any], where: str, scope: Mapping[str, Any], keeps: Keeps
) -> IfTest:
    """One criterion as a test: a comparison of a saved value with a literal (`== true` of a
    boolean kept the test that it is true), or a jsonpath presence test on a saved value."""
    if not isinstance(part, dict):
        raise ArazzoRefused(f"{where}: a criterion is a mapping")
    kind = part.get("type", "simple")
    said = str(part.get("condition", ""))
    if kind == "jsonpath":
        query = said.strip()
        wrong = query_refusal(query)
        if wrong is not None:
            raise ArazzoRefused(f"{where}: the jsonpath {query!r} is no RFC 9535 query ({wrong})")
        context = str(part.get("context", ""))
        return IfTest(_path(context, raw_step, where, scope, keeps), query=query)
    if kind != "simple" or "context" in part:
        raise ArazzoRefused(
            f"{where}: a {kind!r} criterion is outside the subset of a way (a comparison, or a"
            " jsonpath test)"
        )
    m = _SIMPLE.match(said)
    if m is None:
        raise ArazzoRefused(
            f"{where}: the condition {said!r} is outside the subset (`<expression> == <literal>`"
            " or another comparison, or a jsonpath test)"
        )
    try:
        value = literal_value(m.group(3))
    except ValueError as exc:
        raise ArazzoRefused(f"{where}: {said!r}: {exc}") from None
    path = _path(m.group(1), raw_step, where, scope, keeps)
    if m.group(2) == "==" and value is True:
        return IfTest(path)
    return IfTest(path, m.group(2), value)


def _path(
    expr: str, raw_step: Mapping[str, Any], where: str, scope: Mapping[str, Any], keeps: Keeps
) -> str:
    """A runtime expression as the saved value it reads: the step's own body (what it saved),
    one of its headers (it saves it), a step's output, an input."""
    header = response_header(expr.strip())
    if header is not None and keeps.prefix:
        return keeps.header(header)
    body = _BODY.match(expr.strip())
    if body is None:
        return template_in(expr.strip(), where, scope).strip("{}")
    sid, outs = raw_step.get("stepId"), raw_step.get("outputs")
    saved = [  # the answer's body, as the step saved it (not its status or a header)
        found[0]
        for key, said in (outs.items() if isinstance(outs, dict) else ())
        if str(said).strip().startswith("$response.body")
        and isinstance(found := scope.get(f"$steps.{sid}.outputs.{key}"), tuple)
    ]
    if not saved:
        raise ArazzoRefused(
            f"{where}: a test on $response.body needs the step to save it (outputs)"
        )
    rest = body.group(1)
    if rest.startswith("#/"):
        parts = [t.replace("~1", "/").replace("~0", "~") for t in rest[2:].split("/") if t]
    else:
        parts = [p for p in rest.split(".") if p]
    if any(not re.fullmatch(r"[A-Za-z0-9_-]+", p) for p in parts):
        raise ArazzoRefused(f"{where}: {expr!r} names a field a saved value's path cannot")
    return ".".join([str(saved[0]), *parts])


def chained(
    ways: list[Way], built: list[WayBuilt], where: str
) -> tuple[list[dict[str, Any]], str | None]:
    """The ways read on as `if` steps, each the `else` of the one before (none where every way
    goes straight on to where they meet), and the stepId they meet at again (None: none goes
    on)."""
    built, after = _joined(built, where)
    if after is not None:  # an end that says nothing stops there, not where the others meet
        built = [
            ([{"id": w.name, "return": {}}], None, None)
            if w.target is None and not b
            else (b, j, t)
            for w, (b, j, t) in zip(ways, built, strict=True)
        ]
    inner = built[-1][0]
    for w, (branch, _, _) in zip(reversed(ways[:-1]), reversed(built[:-1]), strict=True):
        if branch or inner:  # named for its way, unless the way's end is (what it answers)
            sid = f"{w.name}-if" if branch and branch[0].get("id") == w.name else w.name
            inner = [{"id": sid, "if": if_entry(w.tests or ()), "then": branch, "else": inner}]
    return inner, after


def _joined(built: list[WayBuilt], where: str) -> tuple[list[WayBuilt], str | None]:
    """The ways with those that go straight to where another one rejoins emptied (their steps
    are those after the `if`s), and that step; refused where they do not meet at one step, or
    where two ways would run the same steps."""
    joins = {jump for _, jump, _ in built if jump is not None}
    built = [(([], t, t) if t is not None and t in joins else b) for b in built for t in [b[2]]]
    jumps = {jump for _, jump, _ in built if jump is not None}
    if len(jumps) > 1:
        raise ArazzoRefused(f"{where}: the ways do not meet again at one step")
    firsts = [t for b, _, t in built if b and t is not None]
    twice = next((t for t in firsts if firsts.count(t) > 1), None)
    if twice is not None:
        raise ArazzoRefused(
            f"{where}: two ways go to step {twice} and one between them elsewhere, and the"
            f" ways do not meet again before {twice}: its steps would run on two branches"
        )
    return built, (jumps.pop() if jumps else None)
