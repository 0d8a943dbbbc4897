"""What an Arazzo step calls, read on import: its parameters (the workflow's own too), its
payload (JSON text read as the fields it spells), what a step that
runs another workflow cannot carry, and what such a step passes against what that workflow
requires (said with the document's other refusals, before a run would stop on it); and what is
taken but said: the skill's credential given as a parameter (never sent), an operationId that
is not the source's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from skillpress.format.credentials import default_credential_env
from skillpress.runtime.interop.arazzo import OK, ArazzoRefused, Locator
from skillpress.runtime.package.model import Skill, Tool

__all__ = [
    "StepRefused",
    "all_of",
    "calls_refused",
    "credential_given",
    "named_otherwise",
    "payload_in",
    "refused_parts",
    "with_shared",
    "workflow_step_extras",
]


class StepRefused(ArazzoRefused):
    """Every part of one step outside the subset."""

    def __init__(self, all_: list[str]) -> None:
        super().__init__(all_[0])
        self.all = all_


def refused_parts(exc: ArazzoRefused) -> list[str]:
    """Every part a refusal names (a step's several, or the one)."""
    return exc.all if isinstance(exc, StepRefused) else [str(exc)]


def workflow_step_extras(
    s: Mapping[str, Any], success: list[Any], retry: Any, on_failure: Any, where: str
) -> list[str]:
    """What a step that runs a workflow cannot carry: it has no answer of its own to test
    (it succeeds when its workflow does), and is not tried again or gone past on failure."""
    out = []
    if success != [OK]:
        said = [c.get("condition") for c in s.get("successCriteria") or [] if isinstance(c, dict)]
        out.append(
            f"{where}: successCriteria {', '.join(map(repr, said))} on a step that runs a workflow:"
            " it has no response of its own to test (it succeeds when its workflow does)"
        )
    if retry is not None:
        out.append(f"{where}: a retry of a step that runs a workflow is outside the subset")
    if on_failure is not None:
        out.append(
            f"{where}: a goto on the failure of a step that runs a workflow is outside the subset"
        )
    return out


def all_of(criterion: Any) -> list[Any]:
    """A simple criterion whose condition joins tests with `&&` (and no `||`), as its tests:
    each one must hold, as each of a step's criteria must."""
    said = criterion.get("condition") if isinstance(criterion, dict) else None
    if (
        not isinstance(said, str)
        or "&&" not in said
        or "||" in said
        or criterion.get("type", "simple") != "simple"
        or "context" in criterion
    ):
        return [criterion]
    return [{**criterion, "condition": part.strip()} for part in said.split("&&")]


def payload_in(body: Mapping[str, Any], where: str) -> Any:
    """A step's payload as the request's fields: a mapping as written, the text of a JSON
    body (`payload: |` with `{$…}` in it, as documents write one) or of a form read as the
    fields it spells;
    text that is not JSON where the body is JSON is refused, saying where it stops being JSON."""
    payload = body.get("payload")
    kind = str(body.get("contentType") or "application/json")
    if isinstance(payload, str) and "x-www-form-urlencoded" in kind and "=" in payload:
        # a form written as its text (`grant_type=code&code={$inputs.code}`): its fields
        return dict(parse_qsl(payload.strip(), keep_blank_values=True))
    if not isinstance(payload, str) or payload.lstrip().startswith("$") or "json" not in kind:
        return payload
    try:
        return json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ArazzoRefused(
            f"{where}: the payload is text that is not JSON (line {exc.lineno}, column"
            f" {exc.colno}: {exc.msg}), so no {kind} body can be made from it"
        ) from None


def with_shared(shared: Any, own: Any) -> list[tuple[dict[str, Any], bool]]:
    """A step's parameters and the workflow's (`parameters` beside `steps`: every operation
    step's, unless the step gives one of the same name and place), each with whether it is the
    workflow's."""
    mine = [p for p in own or [] if isinstance(p, dict)]
    given = {(p.get("name"), p.get("in")) for p in mine}
    theirs = [
        p for p in shared or [] if isinstance(p, dict) and (p.get("name"), p.get("in")) not in given
    ]
    return [(p, True) for p in theirs] + [(p, False) for p in mine]


def calls_refused(
    flows: list[dict[str, Any]], unsent: list[dict[str, Any]] | None = None
) -> list[str]:
    """What a step that runs another workflow of the document does not pass and that workflow
    requires (its inputs as read: one a step reads with no default is required), or passes and
    it does not take: said with the document's other refusals, before any run stops there.
    `unsent`: the calls of steps refused for something else, checked too."""
    by_name = {str(w.get("name")): w for w in flows}
    out: list[str] = []

    def walk(steps: list[Any], owner: str) -> None:
        for s in steps:
            if not isinstance(s, dict):
                continue
            for branch in ("then", "else"):
                if isinstance(s.get(branch), list):
                    walk(s[branch], owner)
            callee = by_name.get(str(s.get("workflow")))
            if callee is None:
                continue
            params = callee.get("parameters") or {}
            given = set(s.get("args") or {})
            extra = sorted(given - set(params.get("properties") or {}))
            where = f"{owner} step {s.get('id')}"
            if extra:
                out.append(f"{where}: {callee['name']} does not take {', '.join(extra)}")
            lacking = [r for r in params.get("required") or () if r not in given]
            if lacking:
                out.append(
                    f"{where}: {callee['name']} requires {', '.join(map(repr, lacking))}, which"
                    f" this step does not pass: pass it, or give it a default in {callee['name']}"
                )

    for w in [*flows, *(unsent or [])]:
        walk(list(w.get("steps") or []), str(w.get("name")))
    return out


def named_otherwise(s: Mapping[str, Any], tool: Tool, known: Locator, where: str) -> str | None:
    """What to say when a step's operationId is not the source's but the operation it was taken
    for (FAPI-PAR's `PAR` for the spec's `Par`: a runner that reads ids exactly finds none);
    the export writes the source's."""
    said = str(s.get("operationId", "")).rsplit(".", 1)[-1] if "operationId" in s else ""
    spec_id = known.known.get(tool.operation, (None, "", ""))[0]
    if said and spec_id and said != spec_id:
        return (
            f"{where}: operationId {said!r} is no operationId of the source; taken as"
            f" {spec_id!r}, which the export writes"
        )
    return None


def credential_given(
    skill: Skill, tool: Tool, place: str, given: str, headers: Mapping[str, str], where: str
) -> str | None:
    """What to say when a parameter is the one the skill made its credential (an
    `Authorization` header the spec declares, museum tickets' `Basic Og==`): it is no argument
    of the tool and its value is never sent (every call carries the credential from the
    operator's variable); None when it is not."""
    auth = tool.auth or skill.auth
    if auth is None or (place == "header" and given.lower() in headers):
        return None
    for slot in auth.slots:
        if slot.where == place and slot.header.lower() == (
            given.lower() if place == "header" else given
        ):
            return (
                f"{where}: {place} {given!r} is {skill.slug}'s credential, which every call"
                f" carries from {slot.env or default_credential_env(skill.slug)}: the value the"
                " document gives is not sent"
            )
    return None
