"""Submissions, from the operator's side: a spec submitted (its bytes stored, or its URL to fetch)
and followed stage by stage to its end; what each stage's event says in words (the command
line's progress and the API's event stream say the same); the end as the records keep it, when
an event was missed; and a story a dead letter stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillpress.app.base.bus import (
    Event,
    OnEvent,
    Pipeline,
    follow,
    parse_event,
    with_pipeline,
)
from skillpress.app.base.context import AppContext
from skillpress.app.operator.intake import first_check, send_submission
from skillpress.app.records.overview import (
    recorded_submission,
    stored_outcome,
    unreplayed_letters,
)
from skillpress.errors import Retryable, Unavailable
from skillpress.schemas.subjects import EVENTS

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS


__all__ = [
    "DeadLettered",
    "ENDINGS",
    "dead_lettered",
    "describe_event",
    "stored_outcome",
    "submission_events",
    "submit_spec",
]


class DeadLettered(Retryable):
    """A story stopped: a worker could not handle one of its messages, which is now a dead
    letter (replayable once what broke is fixed); the message names it."""

    problem = "dead-lettered"


def dead_lettered(ctx: AppContext, submission: str) -> None:
    """DeadLettered when a message of `submission` is a dead letter not yet replayed."""
    letters = unreplayed_letters(ctx, submission)
    if not letters:
        return
    letter = letters[0]
    error = letter.error.strip().splitlines()[0][:300] if letter.error else "no error recorded"
    raise DeadLettered(
        f"stopped at {letter.worker}: dead letter #{letter.id} ({letter.subject}): {error};"
        f" once that is fixed: skillpress dead-letters --replay {letter.id}"
    )


def describe_event(event: Event) -> tuple[str, str | None]:
    """A stage's outcome in words, and what is awaited next (None at the end)."""
    from skillpress.schemas.events import (
        RevisionCategorized,
        RevisionParsed,
        RevisionStored,
        SuggestionsMade,
        VersionProposed,
    )

    m = event.message
    if isinstance(m, RevisionStored):
        return (
            f"stored revision {m.revision_id[:12]} (spec {m.spec_sha256[:12]})",
            "parsing…",
        )
    if isinstance(m, RevisionParsed):
        return f"parsed: {m.operations} operations", "categorizing and guessing approvals…"
    if isinstance(m, RevisionCategorized):
        how = "flat manifest" if m.categories == 0 else f"{m.categories} categories from {m.source}"
        why = (
            f" ({m.note})"
            if m.note
            else (f" (tags failed: {m.tag_failure})" if m.tag_failure else "")
        )
        return how + why, "rendering…"
    if isinstance(m, SuggestionsMade):
        rules = f"{m.approvals} approval rule{'' if m.approvals == 1 else 's'}"
        ids = f"{m.identities} identit{'y' if m.identities == 1 else 'ies'}"
        ask = (
            f"; {m.headers} operation{'' if m.headers == 1 else 's'} need a header value from you"
            if m.headers
            else ""
        )
        return f"suggested {rules} and {ids} (for review; none applied){ask}", None
    if isinstance(m, VersionProposed):
        sm = m.summary
        fresh = "" if m.created else " (identical to a version already stored)"
        return (
            f"proposed version {m.version_id[:12]}{fresh}: {sm.get('added', 0)} added, {sm.get('removed', 0)} removed,"
            f" {sm.get('changed', 0)} changed"
        ), None
    return event.subject, None


def submit_spec(
    ctx: AppContext,
    slug: str,
    data: bytes | None,
    url: str | None,
    base_url: str | None,
    timeout: float,
    on_event: OnEvent | None = None,
    created_by: str = "cli",
    submission: str | None = None,
    credential_env: str | None = None,
    on_accepted: Callable[[str], None] | None = None,
) -> tuple[str, list[Event]]:
    """Submit a spec (bytes or a URL) and follow its stages; (submission id, this submission's
    events). `submission`: the id to submit under (a fresh one when not given);
    `credential_env`: the variable the skill's credential is read from, when not the default;
    `on_accepted`: told the id once the first check passed (a refused spec never has one).
    DeadLettered when one of its messages stopped it; StackError when nothing answered."""
    slug = first_check(slug, data)  # the API's first check, the same door
    submission = submission or uuid.uuid4().hex
    if on_accepted is not None:
        on_accepted(submission)

    async def work(pipeline: Pipeline) -> list[Event]:
        async with pipeline.connection() as nc:
            sent = await send_submission(
                ctx, nc, slug, data, url, base_url, created_by, submission, credential_env
            )
            await pipeline.say_if_nobody_takes(nc, EVENTS.spec_submitted, timeout)
            seen: list[Event] = []
            deadline = time.monotonic() + timeout
            heartbeat = min(3.0, timeout)
            events = submission_events(nc, ctx, slug, submission, sent.seq, heartbeat)
            async with contextlib.aclosing(events) as stages:
                async for item in stages:
                    if isinstance(item, Stopped):
                        raise DeadLettered(item.text)
                    if item is not None:
                        seen.append(item)
                        if on_event is not None:
                            on_event(item)
                        if item.subject in ENDINGS:
                            return seen
                    if time.monotonic() > deadline:
                        break
        raise pipeline.no_answer(timeout)

    return submission, with_pipeline(ctx, work)


ENDINGS = (
    EVENTS.version_proposed,
    EVENTS.revision_rejected,
    EVENTS.revision_unchanged,
)


async def submission_known(
    nc: NATS | None, ctx: AppContext, submission: str, after: int | None
) -> None:
    """NotFound unless `submission` is one the pipeline took: a stage recorded it, or the
    stream's message at `after` (the sequence its submission was given) is its submission. A
    mistyped id is a 404, never a page that waits for events that will not come."""
    from skillpress.errors import NotFound
    from skillpress.schemas.subjects import STREAM

    if await asyncio.to_thread(recorded_submission, ctx, submission):
        return
    if after and nc is not None:
        try:
            msg = await nc.jetstream().get_msg(STREAM, after)
        except Exception:  # noqa: BLE001 - a sequence the stream does not hold: not this one
            msg = None
        event = (
            parse_event(str(msg.subject), msg.data)
            if msg is not None and msg.subject and msg.data
            else None
        )
        if event is not None and event.submission == submission:
            return
    raise NotFound(
        f"no submission {submission[:64]!r} is known: it was never accepted, or the pipeline"
        " has not taken it in yet (the page an import opens carries ?after=<sequence>)"
    )


@dataclass(frozen=True)
class Stopped:
    """How a submission's story ended when one of its messages became a dead letter: the words
    (what stopped it, and what a person does next) and the dead letter's number."""

    text: str
    dead_letter: int


def _stopped(ctx: AppContext, submission: str) -> Stopped | None:
    """The submission's end at a dead letter not yet replayed, or None."""
    letters = unreplayed_letters(ctx, submission)
    if not letters:
        return None
    try:
        dead_lettered(ctx, submission)
    except DeadLettered as exc:
        return Stopped(str(exc), int(letters[0].id or 0))
    return None


async def submission_events(
    nc: NATS,
    ctx: AppContext,
    slug: str,
    submission: str,
    after: int | None,
    heartbeat: float = 3.0,
) -> AsyncGenerator[Event | Stopped | None, None]:
    """A submission's events as the pipeline publishes them, replayed from stream sequence
    `after` (the sequence its submission was given; None: from now), ending with its outcome,
    or with `Stopped` when one of its messages is a dead letter.
    Yields None every `heartbeat` seconds, and looks for the outcome in the records then (an
    event can be missed across a reconnect; the outcome is stored)."""
    async with contextlib.aclosing(follow(nc, after, heartbeat)) as events:
        async for event in events:
            if event is None:
                try:
                    found = await asyncio.to_thread(stored_outcome, ctx, slug, submission)
                    stopped = None if found else await asyncio.to_thread(_stopped, ctx, submission)
                except Unavailable:  # the records are down for now: the events may still come
                    found = stopped = None
                if found is not None:
                    yield found
                    return
                if stopped is not None:  # a dead letter ends the story: said, with what to do
                    yield stopped
                    return
                yield None
                continue
            if event.submission != submission:
                continue
            yield event
            if event.subject in ENDINGS:
                return
