"""The types a workflow is made of, and nothing else: a leaf the runtime's modules share (the
loader and runner, the run log, the slash form, the contract export, a call's step) without
importing each other.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from skillpress.errors import Permanent
from skillpress.runtime.package.model import PackageError, Skill, Tool, with_confirmation
from skillpress.runtime.workflows.criteria import BodyTest
from skillpress.runtime.workflows.if_tests import IfTest

__all__ = [
    "Pending",
    "Run",
    "Step",
    "StepFailed",
    "StepRules",
    "Workflow",
    "WorkflowRefused",
    "either_said",
    "walk",
]


class WorkflowRefused(PackageError):
    """A workflow that cannot run as written; the message names the workflow, the step and the fix."""


class StepFailed(RuntimeError, Permanent):
    """A run stopped at a step (its call refused or answered with an error, or a `fail` step);
    a `call` raises it with workflow "" and the run names the workflow."""

    problem = "step-failed"

    def __init__(
        self,
        workflow: str,
        step: str,
        message: str,
        waiting: int | None = None,
        gated: bool = False,
    ) -> None:
        super().__init__(
            f"{workflow}: step {step} {'waits' if waiting is not None else 'failed'}: {message}"
        )
        self.workflow, self.step, self.message = workflow, step, message
        self.waiting = waiting  # the approval request a step held at its gate waits on
        # held at its gate (waiting, denied, or nobody here approves): never a failure, so no
        # `on_failure` goes on past it
        self.gated = gated or waiting is not None


@dataclass(frozen=True)
class StepRules:
    """When a tool step succeeds and whether it is tried again: `success` the status tests that
    must all hold (`("==", 201)`; none: a status below 400), `retry_limit` further tries after
    `retry_after` seconds when it did not succeed — only for a call safe to repeat (a read, or
    a write with an identity's Idempotency-Key)."""

    success: tuple[tuple[str, int], ...] = ()
    retry_limit: int = 0
    retry_after: float = 0.0
    body: tuple[BodyTest, ...] = ()  # tests of the answer's body, all of which must hold too
    # groups of status tests of which one must hold (`$statusCode == 200 || $statusCode == 201`)
    either: tuple[tuple[tuple[str, int], ...], ...] = ()
    keep_status: bool = False  # the step saves its answer's status (`status_as`)
    keep_headers: tuple[str, ...] = ()  # the answer's headers it saves (`headers_as`), lowercase
    # the statuses a retry is for (`retry.when`: each must hold); none: any that did not succeed
    retry_when: tuple[tuple[str, int], ...] = ()

    def again(self, status: int, answer: Any = None) -> bool:
        """Whether a call answered so is tried again (its retry left aside): it did not
        succeed, and its status is one the retry is for."""
        return not self.succeeded(status, answer) and all(
            _holds(status, op, n) for op, n in self.retry_when
        )

    @property
    def answered(self) -> bool:
        """Whether the step's call gives back more than the body (an `Answered`)."""
        return self.keep_status or bool(self.keep_headers)

    def succeeded(self, status: int, answer: Any = None) -> bool:
        return (
            self._status_holds(status)
            and all(any(_holds(status, op, n) for op, n in group) for group in self.either)
            and all(t.holds(answer) for t in self.body)
        )

    def _status_holds(self, status: int) -> bool:
        if not self.success:
            return status < 400 or bool(self.either)
        return all(_holds(status, op, n) for op, n in self.success)

    def said(self) -> str:
        status = [f"$statusCode {op} {n}" for op, n in self.success]
        if not status and not self.either:
            status = ["$statusCode < 400"]
        groups = [either_said(group) for group in self.either]
        return " and ".join([*status, *groups, *(t.said() for t in self.body)])


def either_said(group: tuple[tuple[str, int], ...]) -> str:
    """A group of status tests one of which must hold, as Arazzo writes it."""
    return " || ".join(f"$statusCode {op} {n}" for op, n in group)


def _holds(status: int, op: str, n: int) -> bool:
    tests = {
        "==": status.__eq__,
        "!=": status.__ne__,
        "<": status.__lt__,
        "<=": status.__le__,
        ">": status.__gt__,
        ">=": status.__ge__,
    }
    return bool(tests[op](n))


@dataclass(frozen=True)
class Answered:
    """A step's answer when it keeps more than the body: its status and the headers it names
    (lowercase; one the answer did not carry is not there)."""

    body: Any
    status: int | None
    headers: dict[str, str]


@dataclass(frozen=True)
class Step:
    id: str
    kind: str  # tool | workflow | if | return | fail
    target: str | None = None  # the operation, or the workflow
    args: Any = None
    save_as: str | None = None
    on_error: str | None = None
    tests: tuple[IfTest, ...] = ()  # an `if`'s: all of them hold for its `then`
    then: tuple[Step, ...] = ()
    otherwise: tuple[Step, ...] = ()
    value: Any = None  # what `return` gives, or `fail`'s message
    rules: StepRules | None = None  # a tool step's own success tests and retries
    on_failure: str | None = None  # a tool step that fails goes on from this later step
    status_as: str | None = None  # a tool step's answer's status, saved under this name
    headers_as: tuple[tuple[str, str], ...] = ()  # (name, header): headers saved (null: absent)


@dataclass(frozen=True)
class Workflow:
    name: str
    description: str
    execution: str
    parameters: dict[str, Any]
    steps: tuple[Step, ...] = ()
    tool_name: str = ""
    tool: str | None = None  # guided: the operation the model is made to call
    defaults: dict[str, Any] = field(default_factory=dict)  # guided: win over the model's
    procedure: str = ""  # draft: how to do it, in words, for the model
    uses: tuple[str, ...] = ()  # other skills whose operations its steps call (`slug.operation`)
    others: dict[str, Skill] = field(default_factory=dict, compare=False, repr=False)
    confirm: bool = False  # the skill's contract requires the user's confirmation of a run

    def owner(self, skill: Skill, target: str) -> tuple[Skill, Tool]:
        """The skill a step's `tool` belongs to, and the tool: `operation` (this skill's) or
        `slug.operation` (a skill the workflow uses)."""
        if "." in target:
            slug, operation = target.split(".", 1)
            return self.others[slug], self.others[slug].tool(operation)
        return skill, skill.tool(target)

    def to_tool_schema(self) -> dict[str, Any]:
        if self.confirm:
            return with_confirmation(self.parameters, "run")
        return copy.deepcopy(self.parameters)


@dataclass(frozen=True)
class Pending:
    """A value a dry run cannot know: the answer of a step that was not sent."""

    step: str
    path: str

    def __str__(self) -> str:
        return f"<{self.path} from step {self.step}>"


@dataclass
class Run:
    """What a run did: its result (a `return`'s value, else the last answer) and, for a dry run,
    each step's request in order."""

    result: Any = None
    trace: list[str] = field(default_factory=list)


def walk(steps: tuple[Step, ...]) -> Iterator[Step]:
    """Every step, the branches of an `if` included, in order."""
    for s in steps:
        yield s
        yield from walk(s.then)
        yield from walk(s.otherwise)
