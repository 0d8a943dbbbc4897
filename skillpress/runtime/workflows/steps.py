"""A workflow step's call: placed like any call (built, held at its gate, sent), tried again by
the step's own rules where that cannot do anything twice, and kept in the run's log (its
request with the credentials as the variables they come from, its answer redacted)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from skillpress.runtime.calling.calls import (
    CallSetup,
    GateClosed,
    Gatekeeper,
    Placed,
    ask_gatekeeper,
    prepare_call,
    send_prepared,
)
from skillpress.runtime.calling.execute import repeatable
from skillpress.runtime.calling.request import CallRefused, ExecutionFailed
from skillpress.runtime.package.model import Skill, Tool
from skillpress.runtime.workflows.model import Answered, StepFailed, StepRules, Workflow
from skillpress.runtime.workflows.run_log import (
    ReplayRefused,
    RunJournal,
    RunLog,
    StepRecord,
    redact,
)

__all__ = ["DIRECT", "kept_call", "placed_step"]


def _logged_request(placed: Placed, setup: CallSetup) -> dict[str, Any]:
    """The request as a run's record keeps it: the credential as the variable it comes from,
    headers, query values and body fields named like secrets redacted."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    shown = placed.shown_request(setup)
    used = placed.credential or setup.credential
    credential = set(used.placeholder()) if used else set()
    headers = shown["headers"]
    shown["headers"] = {k: v if k in credential else redact({k: v})[k] for k, v in headers.items()}

    def form(text: str) -> str:  # a form's (or a query's) fields named like secrets
        pairs = [(k, str(redact({k: v})[k])) for k, v in parse_qsl(text, keep_blank_values=True)]
        return urlencode(pairs, safe="/:,")

    kind = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    body = shown["body"]
    shown["body"] = (
        form(body) if isinstance(body, str) and "x-www-form-urlencoded" in kind else redact(body)
    )
    url = urlsplit(shown["url"])
    if url.query:
        shown["url"] = urlunsplit(url._replace(query=form(url.query)))
    return shown


def placed_step(
    step: str,
    tool: Tool,
    given: dict[str, Any],
    owner: Skill,
    setup: CallSetup,
    gatekeeper: Gatekeeper,
    log: RunLog,
    rules: StepRules | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """A workflow step's call, placed like any call (built, held at its gate, sent) and logged
    in `log`: its answer (the body's value), or StepFailed naming the step when it is refused,
    held (`waiting`: the approval request it waits on), unanswered or answered with an error
    (the start of whose body it quotes). `rules`: the step's own success tests (else a status
    below 400) and further tries when it did not succeed — only when the call is safe to repeat
    (a read, or a write with an Idempotency-Key); every try is in the log. In a resumed run, a
    step the run had sent is replayed from the log instead (its request built and checked the
    same, nothing sent); an `Answered` when the step keeps its status or headers."""
    at, began = log.started()
    record = StepRecord(step, tool.operation, "failed", skill=owner.slug, started_at=at)
    try:
        placed = prepare_call(tool, given, owner.hosts, setup)
        record.request = _logged_request(placed, setup)
        if log.replaying:
            return _replayed(log, step, tool.operation, record.request, rules)
        log.check_sendable(step, given)
        if placed.gate is not None:
            ask_gatekeeper(gatekeeper, placed.gate, owner.slug)
        judge = rules or StepRules()
        setup = setup.for_tool(tool)  # a step sends its operation's own credential too
        result = send_prepared(placed.request, setup)
        tries, waited = list(result.attempts), result.waited
        safe = repeatable(placed.request)
        for _ in range(judge.retry_limit if safe else 0):
            if not judge.again(result.status, result.body_value()):
                break
            if tries:
                tries[-1] = {**tries[-1], "then_waited": judge.retry_after}
            sleep(judge.retry_after)
            waited += judge.retry_after
            result = send_prepared(placed.request, setup)
            tries += result.attempts
            waited += result.waited
        result.attempts, result.waited = tries, waited
    except ReplayRefused as exc:
        raise StepFailed("", step, f"the run cannot resume: {exc}; start it anew") from None
    except GateClosed as exc:
        record.error, record.approval = str(exc), exc.request
        record.outcome = "waiting" if exc.waits else "failed"
        log.add(record, began)
        waiting = exc.request if exc.waits else None
        raise StepFailed("", step, str(exc), waiting=waiting, gated=True) from None
    except (CallRefused, ExecutionFailed) as exc:
        record.error = str(exc)
        log.add(record, began)
        raise StepFailed("", step, str(exc)) from None
    record.status, record.tries, record.waited = result.status, result.attempts, result.waited
    answer = result.body_value()
    record.answer = redact(answer)
    if not judge.succeeded(result.status, answer):
        said = json.dumps(answer, ensure_ascii=False)[:300]
        wanted = (
            f" (it succeeds on {judge.said()})"
            if judge.success or judge.body or judge.either
            else ""
        )
        record.error = f"{tool.operation} answered {result.status}{wanted}: {said}"
        if judge.retry_limit and not safe:
            record.error += (
                f"; not tried again: a {placed.request.method} without an Idempotency-Key might be"
                " done twice"
            )
        log.add(record, began)
        raise StepFailed("", step, record.error)
    record.outcome = "sent"
    kept = {h: result.headers[h] for h in judge.keep_headers if h in result.headers}
    record.headers = redact(kept)  # as the answer is: a secret a header carries is not kept
    log.add(record, began)
    return Answered(answer, result.status, kept) if judge.answered else answer


def _replayed(log: RunLog, step: str, operation: str, request: Any, rules: StepRules | None) -> Any:
    """A resumed run's step read back from its record: its answer, with the status and headers
    it kept when it keeps them."""
    body = log.replay(step, operation, request)
    done = log.steps[-1]
    return Answered(body, done.status, done.headers) if rules and rules.answered else body


DIRECT = "direct"  # the execution a direct call's run is kept as: one call, from a slash line


def kept_call(
    journal: RunJournal,
    owner: Skill,
    tool: Tool,
    args: dict[str, Any],
    by: str,
    prepared: Placed,
    setup: CallSetup,
    place: Callable[[], Placed],
) -> Placed:
    """A direct call (`/get_item abc`) kept as a run of one step, the trace a workflow's call
    leaves: `place()` sends it (`prepared`: the same request, built before, as the record shows
    it); held at its gate, the run waits, and the same call with the same arguments takes it
    over once the approval is decided."""
    wf = Workflow(name=tool.operation, description="", execution=DIRECT, parameters={})
    log = journal.begin(owner.slug, None, wf, args, by)
    at, began = log.started()
    record = StepRecord("call", tool.operation, "failed", skill=owner.slug, started_at=at)
    record.request = _logged_request(prepared, setup)
    try:
        placed = place()
    except GateClosed as exc:
        record.error, record.approval = str(exc), exc.request
        record.outcome = "waiting" if exc.waits else "failed"
        log.add(record, began)
        journal.end(log, record.outcome, error=str(exc))
        raise
    except BaseException as exc:
        record.error = f"{type(exc).__name__}: {exc}"[:2000]
        log.add(record, began)
        journal.end(log, "failed", error=record.error)
        raise
    result = placed.result
    assert result is not None
    record.status, record.tries, record.waited = result.status, result.attempts, result.waited
    record.answer = redact(result.body_value())
    if result.status >= 400:
        record.error = f"{tool.operation} answered {result.status}"
    else:
        record.outcome = "sent"
    log.add(record, began)
    if record.outcome == "sent":
        journal.end(log, "succeeded", result=record.answer)
    else:
        journal.end(log, "failed", error=record.error)
    return placed
