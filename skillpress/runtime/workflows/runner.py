"""One way to run a workflow, whichever face asks (the command line, the MCP server, `SkillHost`):
a hardened one step after step, a guided or draft one by a model; every step's call built and
checked like any call (nothing that writes sent from a sandbox), held at its gate by the
gatekeeper of the skill the step calls, sent, and kept in the run's log (and the journal, where
one is given). A face decides where the calls go (`StepPlace`) and how it shows the run; the
run itself is this."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from skillpress.runtime.calling.calls import CallSetup, Gatekeeper
from skillpress.runtime.calling.gates import check_gate
from skillpress.runtime.package.model import Skill, Tool
from skillpress.runtime.workflows.model import StepFailed, StepRules, Workflow
from skillpress.runtime.workflows.model_runs import Chat, draft_run, guided_run
from skillpress.runtime.workflows.run import (
    Pending,
    Run,
    has_pending,
    kinds_by_owner,
    prepare_step,
    run_workflow,
)
from skillpress.runtime.workflows.run_log import RunJournal, RunLog, journaled
from skillpress.runtime.workflows.steps import placed_step

__all__ = ["StepPlace", "StepReport", "run_flow"]


class StepReport(Protocol):
    """What a face shows of a run as it goes (the command line prints it)."""

    def planned(
        self, step: str, operation: str, request: dict[str, Any], gated: str | None
    ) -> None:
        """A dry run's step: the request it would send (and the approval it would need)."""

    def deferred(self, step: str, operation: str, arguments: Any) -> None:
        """A dry run's step whose request needs an answer no dry run has."""

    def sent(self, step: str, operation: str, status: int | None, replayed: bool) -> None:
        """A step sent now (or, `replayed`, sent before a run held at a gate resumed)."""


class _Quiet:
    def planned(
        self, step: str, operation: str, request: dict[str, Any], gated: str | None
    ) -> None:
        return None

    def deferred(self, step: str, operation: str, arguments: Any) -> None:
        return None

    def sent(self, step: str, operation: str, status: int | None, replayed: bool) -> None:
        return None


@dataclass(frozen=True)
class StepPlace:
    """Where a run's calls go, as the face running it decides: each skill's call setup (its
    credential, limits, fetcher) and gatekeeper, by the skill a step calls (the workflow's own
    or one it `uses`); `sandboxed`: a package from elsewhere, whose writes are never sent (a
    refused write says `why_sandboxed`)."""

    setup_for: Callable[[Skill], CallSetup]
    gate_for: Callable[[Skill], Gatekeeper]
    sandboxed: bool = False
    why_sandboxed: str = "this skill runs sandboxed: not sent"


def _shown(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def run_flow(
    flows: Mapping[str, Workflow],
    wf: Workflow,
    skill: Skill,
    files: Mapping[str, bytes],
    given: dict[str, Any],
    place: StepPlace,
    *,
    chat: Chat | None,
    journal: RunJournal | None,
    version: str | None,
    by: str,
    dry_run: bool = False,
    report: StepReport | None = None,
) -> tuple[Run, RunLog]:
    """Run `wf` (one of `flows`, the skill's workflows) with `given`; kept in `journal` (never
    for a dry run, which prints each request in order through `report` and sends nothing). A
    guided or draft workflow needs `chat` (the face refuses first, in its own words, without
    one). StepFailed / WorkflowRefused say where it stopped."""
    shows = report or _Quiet()
    kinds_of = kinds_by_owner(skill, files)

    def body(log: RunLog) -> Run:
        def call(
            step: str,
            tool: Tool,
            args: dict[str, Any],
            owner: Skill,
            rules: StepRules | None = None,
        ) -> Any:
            setup = place.setup_for(owner)
            pending = has_pending(args)
            try:
                request = prepare_step(
                    step,
                    tool,
                    _shown(args) if pending else args,
                    owner,
                    kinds_of(owner),
                    place.sandboxed,
                    place.why_sandboxed,
                    log,
                )
            except StepFailed as exc:
                if not (dry_run and pending) or "writes, and" in exc.message:
                    raise
                shows.deferred(step, tool.operation, _shown(args))
                return Pending(step, "answer")
            if dry_run:
                gate = check_gate(tool, args)
                said = request.as_dict()
                said = setup.credential.show(said) if setup.credential else said
                shown = f"{owner.slug}.{tool.operation}" if owner is not skill else tool.operation
                shows.planned(step, shown, said, gate.describe() if gate else None)
                return Pending(step, "answer")
            replaying = log.replaying
            answer = placed_step(step, tool, args, owner, setup, place.gate_for(owner), log, rules)
            shows.sent(step, tool.operation, log.steps[-1].status, replaying)
            return answer

        if wf.execution == "hardened":
            return run_workflow(dict(flows), wf.name, given, skill, call, dry_run=dry_run)
        assert chat is not None, "a face refuses a model's workflow without a model first"
        by_model = guided_run if wf.execution == "guided" else draft_run
        return by_model(wf, skill, files, given, chat, call)

    return journaled(None if dry_run else journal, skill.slug, version, wf, given, by, body)
