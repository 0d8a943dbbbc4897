"""What a workflow run did, step by step, as a record a person reads and a run resumes from.

Each step's call is logged as it ends: the request (the credential as the variable it comes
from, fields named like secrets redacted), how it ended (`sent`, `failed`, `waiting` at a gate),
its status, every try, its timing and its answer (redacted the same way, and only when small
enough to keep). A run that waited at a gate resumes by replaying the steps it had sent — each
checked to build the same request again, none sent twice — and going on from the step that
waited. Pure: where the log is kept is the caller's (`on_change`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from skillpress.runtime.workflows.model import StepFailed

if TYPE_CHECKING:
    from skillpress.runtime.workflows.model import Run, Workflow

__all__ = [
    "MAX_ANSWER_BYTES",
    "REDACTED",
    "ReplayRefused",
    "RunJournal",
    "RunLog",
    "journaled",
    "StepRecord",
    "redact",
]

REDACTED = "[redacted]"
MAX_ANSWER_BYTES = 256 * 1024  # a step's answer bigger than this is not kept (nor resumable)
_SECRET_WORDS = frozenset(
    [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "authorization",
        "authorisation",
        "cookie",
        "credential",
        "credentials",
        "signature",
        "otp",
        "apikey",
    ]
)
_SECRET_PAIRS = frozenset(["apikey", "privatekey", "accesskey", "secretkey", "sessionid"])
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _secret_name(name: str) -> bool:
    """Whether a field's name says it holds a secret: a word of it (`client_secret`,
    `accessToken`, `X-Api-Key`), not a part of a word (`tokens_left` is a count)."""
    words = [w.lower() for w in _WORD.findall(name)]
    pairs = {a + b for a, b in zip(words, words[1:], strict=False)}
    return bool(_SECRET_WORDS.intersection(words) or _SECRET_PAIRS & pairs)


def redact(value: Any, secrets: Sequence[str] = ()) -> Any:
    """`value` with every field named like a secret (password, token, api_key, authorization,
    cookie, …) and every string holding one of `secrets` replaced by REDACTED."""
    if isinstance(value, dict):
        return {
            k: REDACTED if _secret_name(str(k)) and v not in (None, "") else redact(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str) and any(s and s in value for s in secrets):
        return REDACTED
    return value


def _holds_redacted(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_redacted(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_redacted(v) for v in value)
    return bool(value == REDACTED)


class ReplayRefused(RuntimeError):
    """A run cannot be resumed from its record: a step would now send something else, or needs
    a value the record did not keep."""


@dataclass
class StepRecord:
    """One step's call as it ended. `outcome`: sent (answered below 400), failed (refused before
    sending, unanswered, or answered with an error), waiting (held at its gate: `approval`
    names the request a person decides)."""

    step: str
    operation: str
    outcome: str
    skill: str = ""  # the skill the operation belongs to
    request: dict[str, Any] | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)  # only those the step saves
    tries: list[dict[str, Any]] = field(default_factory=list)
    waited: float = 0.0
    started_at: str = ""
    ms: int = 0
    answer: Any = None
    answer_kept: bool = True  # False: too big to keep (the run cannot resume past it)
    error: str | None = None
    approval: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StepRecord:
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        return cls(**known)


class RunLog:
    """The steps of one run in order. `prior`: the steps a resumed run had sent, replayed (not
    sent again) while each builds the same request; `on_change` sees the log after each step."""

    def __init__(
        self,
        run_id: int | None = None,
        prior: Sequence[StepRecord] = (),
        on_change: Callable[[RunLog], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.run_id = run_id
        self.steps: list[StepRecord] = []
        self._prior = [p for p in prior if p.outcome == "sent"]
        self._on_change = on_change
        self._clock = clock

    @property
    def replaying(self) -> bool:
        return len(self.steps) < len(self._prior)

    def replay(self, step: str, operation: str, request: dict[str, Any]) -> Any:
        """The recorded answer of the next step a resumed run had sent, when it is this one
        building this request (ReplayRefused otherwise)."""
        done = self._prior[len(self.steps)]
        if (done.step, done.operation) != (step, operation):
            raise ReplayRefused(
                f"the record's next step is {done.step} ({done.operation}), and the run now"
                f" reaches {step} ({operation})"
            )
        if done.request != request:
            raise ReplayRefused(
                f"step {step} would now send another request than the one it sent"
                f" ({_short(done.request)} then, {_short(request)} now)"
            )
        if not done.answer_kept:
            raise ReplayRefused(f"step {step}'s answer was too big to keep")
        self.steps.append(done)
        return done.answer

    def check_sendable(self, step: str, args: Any) -> None:
        """ReplayRefused when a step's arguments carry a value the record kept redacted."""
        if self._prior and _holds_redacted(args):
            raise ReplayRefused(
                f"step {step} sends a value an earlier answer held, which the run's record keeps"
                " redacted (a secret)"
            )

    def started(self) -> tuple[str, float]:
        now = self._clock()
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), now

    def refused(self, step: str, operation: str, skill: str, error: str) -> None:
        """A step refused before anything was built or sent (the sandbox held a write back):
        kept as a failed step with why, so a run the model carried on past still shows it."""
        at, began = self.started()
        self.add(
            StepRecord(step, operation, "failed", skill=skill, started_at=at, error=error), began
        )

    def add(self, record: StepRecord, began: float) -> None:
        record.ms = max(0, round((self._clock() - began) * 1000))
        if record.answer is not None:
            size = len(json.dumps(record.answer, ensure_ascii=False, default=str))
            if size > MAX_ANSWER_BYTES:
                record.answer, record.answer_kept = f"({size:,} bytes: not kept)", False
        self.steps.append(record)
        if self._on_change is not None:
            self._on_change(self)


def _short(request: dict[str, Any] | None) -> str:
    if not request:
        return "nothing"
    return f"{request.get('method', '?')} {request.get('url', '?')}"


class RunJournal(Protocol):
    """Where a face keeps its runs (the records, for skills the operator serves)."""

    def begin(
        self, slug: str, version: str | None, wf: Workflow, arguments: dict[str, Any], by: str
    ) -> RunLog:
        """A log for a new run, or for the run of this workflow waiting with these arguments
        (hardened ones: its sent steps replayed), which this run takes over."""
        ...

    def end(self, log: RunLog, status: str, result: Any = None, error: str | None = None) -> None:
        """The run ended: succeeded (its result), failed, or waiting (at its last step's gate)."""
        ...


def journaled(
    journal: RunJournal | None,
    slug: str,
    version: str | None,
    wf: Workflow,
    arguments: dict[str, Any],
    by: str,
    body: Callable[[RunLog], Run],
) -> tuple[Run, RunLog]:
    """Run `body` with the run's log, kept in `journal` (none: the log only): a step held at its
    gate leaves the run waiting, and the message says the same call resumes it."""
    log = journal.begin(slug, version, wf, arguments, by) if journal is not None else RunLog()
    try:
        done = body(log)
    except StepFailed as exc:
        if journal is None:
            raise
        waiting = exc.waiting is not None and wf.execution == "hardened"
        journal.end(log, "waiting" if waiting else "failed", error=str(exc))
        if not waiting:
            raise
        sent = [s.step for s in log.steps if s.outcome == "sent"]
        kept = f", and does not send again what it sent ({', '.join(sent)})" if sent else ""
        raise StepFailed(
            exc.workflow,
            exc.step,
            f"{exc.message} (run #{log.run_id} is kept waiting here: the same call resumes it{kept})",
            exc.waiting,
            exc.gated,
        ) from None
    except BaseException as exc:
        if journal is not None:
            journal.end(log, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    if journal is not None:
        journal.end(log, "succeeded", result=done.result)
    return done, log
