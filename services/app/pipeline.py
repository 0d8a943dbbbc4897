"""Talking to the pipeline: where NATS is, sending a message and following its story to the end.

With `SKILLPRESS_NATS_URL` set, workers run elsewhere (`skillpress worker NAME`). Without it, a
`skillpress up` on the same home is found through `<home>/up.json`; failing that, the embedded
pipeline the context was given (the stack's: a nats-server and every worker in-process) runs for
the use-case's duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from skillpress.schemas.subjects import COMMANDS, EVENTS
from skillpress.services.app.context import AppContext
from skillpress.services.app.views import Replayed
from skillpress.services.errors import Refused, Retryable, Unavailable
from skillpress.services.platform.nats_urls import shown_url
from skillpress.services.platform.settings import Settings

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

    from skillpress.schemas.events import SpecSubmitted

__all__ = [
    "ENDINGS",
    "DeadLettered",
    "Event",
    "OnEvent",
    "Pipeline",
    "StackError",
    "check_base_url",
    "describe_event",
    "follow",
    "parse_event",
    "propose_change",
    "request_publish",
    "request_refresh",
    "running_up",
    "send",
    "spec_submitted",
    "submission_events",
    "submit_spec",
    "with_pipeline",
    "write_up_marker",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Event:
    """One event of a story as it arrived: its subject and its message, parsed into the
    catalogue's model for that subject (`schemas.events.MESSAGES`)."""

    subject: str
    message: BaseModel

    @property
    def body(self) -> dict[str, Any]:
        """The message as JSON, what a face prints or streams."""
        return self.message.model_dump(mode="json")

    @property
    def submission(self) -> str | None:
        """The submission the event descends from, when it does."""
        found = getattr(self.message, "submission", None)
        return found if isinstance(found, str) else None


OnEvent = Callable[[Event], None]


def parse_event(subject: str, data: bytes) -> Event | None:
    """The event a message on `subject` carries, or None for one outside the catalogue (a
    subject it does not list, a body its model refuses): never half-read."""
    from skillpress.schemas.events import MESSAGES

    model = MESSAGES.get(subject)
    if model is None:
        return None
    try:
        return Event(subject, model.model_validate_json(data))
    except ValidationError:
        return None


class StackError(Retryable):
    """No NATS to talk to, or it did not answer in time; the message says what to do."""


class DeadLettered(Retryable):
    """A story stopped: a worker could not handle one of its messages, which is now a dead
    letter (replayable once what broke is fixed); the message names it."""

    problem = "dead-lettered"


def dead_lettered(ctx: AppContext, submission: str) -> None:
    """DeadLettered when a message of `submission` is a dead letter not yet replayed."""
    from skillpress.services.app.queries import submission_letters

    with ctx.records.session() as s:
        letters = submission_letters(s, submission, unreplayed=True)
        if not letters:
            return
        letter = letters[0]
        error = letter.error.strip().splitlines()[0][:300] if letter.error else "no error recorded"
        raise DeadLettered(
            f"stopped at {letter.worker}: dead letter #{letter.id} ({letter.subject}): {error};"
            f" once that is fixed: skillpress dead-letters --replay {letter.id}"
        )


@dataclass
class Pipeline:
    ctx: AppContext
    nats_url: str
    mode: str  # configured | up | embedded

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[NATS]:
        """A connection to this pipeline's NATS with its streams in place, closed after."""
        from skillpress.services.platform.broker import connect, ensure_stream, nats_options

        nc = await connect(
            self.nats_url,
            name="skillpress-cli",
            attempts=2,
            options=nats_options(self.ctx.settings, self.nats_url),
        )
        try:
            await ensure_stream(nc, self.ctx.settings.stream_replicas)
            yield nc
        finally:
            await nc.close()


def _marker(settings: Settings) -> Path:
    return settings.home / "up.json"


def write_up_marker(settings: Settings, nats_url: str) -> Path:
    """`<home>/up.json` (mode 0600: the URL carries the embedded NATS's credentials), what a
    command line on the same home finds a running `up` by."""
    from skillpress.services.platform.operator_tokens import write_private

    path = _marker(settings)
    write_private(path, json.dumps({"nats_url": nats_url, "pid": os.getpid()}))
    return path


def running_up(settings: Settings) -> str | None:
    """The NATS URL of a live `skillpress up` on this home, if one is running."""
    path = _marker(settings)
    try:
        info = json.loads(path.read_text())
        os.kill(int(info["pid"]), 0)
        return str(info["nats_url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def with_pipeline(ctx: AppContext, work: Callable[[Pipeline], Coroutine[Any, Any, T]]) -> T:
    """Run `work` against the pipeline: the configured NATS, a running `skillpress up`, or the
    embedded one the context was given (`AppContext.embedded`: a command line's) for its duration."""
    settings = ctx.settings
    if settings.nats_url:
        return asyncio.run(work(Pipeline(ctx, settings.nats_url, "configured")))
    url = running_up(settings)
    if url:
        return asyncio.run(work(Pipeline(ctx, url, "up")))
    starter = ctx.embedded
    if starter is None:
        raise StackError(
            "no NATS to send on: set SKILLPRESS_NATS_URL, or start `skillpress up` on this home"
        )

    async def embedded() -> T:
        async with starter(ctx) as nats_url:
            return await work(Pipeline(ctx, nats_url, "embedded"))

    return asyncio.run(embedded())


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


async def follow(
    pipeline: Pipeline,
    subject: str,
    payload: BaseModel,
    msg_id: str,
    done: Callable[[Event], bool],
    timeout: float,
    on_event: OnEvent | None = None,
    recover: Callable[[], Event | None] | None = None,
) -> list[Event]:
    """Publish one message, then collect events until `done(event)` says the story ended;
    `on_event` hears each one as it arrives. `recover` looks for the ending in the record store
    (every few seconds while nothing arrives): an event published while this client was
    reconnecting is lost to it, but the outcome it announced is stored."""
    seen: list[Event] = []
    queue: asyncio.Queue[Event] = asyncio.Queue()

    async def on_message(msg: Any) -> None:
        event = parse_event(msg.subject, msg.data)
        if event is not None:
            await queue.put(event)

    async with pipeline.connection() as nc:
        await nc.subscribe("skillpress.>", cb=on_message)
        await nc.flush()
        await send(nc, subject, payload, msg_id)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if recover is not None and (left <= 0 or queue.empty()):
                try:
                    found = await asyncio.to_thread(recover)
                except Unavailable:  # the records are down for now: the events may still come
                    found = None
                if found is not None:
                    seen.append(found)
                    if on_event is not None:
                        on_event(found)
                    return seen
            if left <= 0:
                where = {
                    "configured": f"workers on {shown_url(pipeline.nats_url)} (skillpress worker NAME)",
                    "up": "the running `skillpress up`",
                    "embedded": "the in-process workers",
                }[pipeline.mode]
                raise StackError(
                    f"no answer from {where} within {timeout:g} s; see `skillpress dead-letters`"
                )
            try:
                wait = left if recover is None else min(left, 3.0)
                event = await asyncio.wait_for(queue.get(), timeout=wait)
            except TimeoutError:
                continue
            seen.append(event)
            if on_event is not None:
                on_event(event)
            if done(event):
                return seen


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
) -> tuple[str, list[Event]]:
    """Submit a spec (bytes or a URL) and follow its stages; (submission id, this submission's
    events). `submission`: the id to submit under (a fresh one when not given);
    `credential_env`: the variable the skill's credential is read from, when not the default."""
    submission = submission or uuid.uuid4().hex
    endings = ENDINGS

    def ours(event: Event) -> None:
        if on_event is not None and event.submission == submission:
            on_event(event)

    def ended() -> Event | None:
        """Its ending as stored, or DeadLettered when one of its messages stopped it."""
        found = stored_outcome(ctx, slug, submission)
        if found is None:
            dead_lettered(ctx, submission)
        return found

    async def work(pipeline: Pipeline) -> list[Event]:
        event = await asyncio.to_thread(
            spec_submitted, ctx, slug, data, url, base_url, created_by, submission, credential_env
        )
        return await follow(
            pipeline,
            EVENTS.spec_submitted,
            event,
            f"submitted:{submission}",
            lambda e: e.submission == submission and e.subject in endings,
            timeout,
            ours,
            ended,
        )

    seen = with_pipeline(ctx, work)
    return submission, [e for e in seen if e.submission == submission]


ENDINGS = (
    EVENTS.version_proposed,
    EVENTS.revision_rejected,
    EVENTS.revision_unchanged,
)


def spec_submitted(
    ctx: AppContext,
    slug: str,
    data: bytes | None,
    url: str | None,
    base_url: str | None,
    created_by: str,
    submission: str,
    credential_env: str | None = None,
) -> SpecSubmitted:
    """The message that submits a spec (its bytes stored first as a blob, or its URL to fetch);
    Refused for a base URL that is not an absolute http(s) address, or a credential variable
    that is not an environment variable's name."""
    from skillpress.schemas.events import SpecSubmitted
    from skillpress.services.derive.auth import credential_env_refusal, default_credential_env

    check_base_url(base_url)
    if credential_env == default_credential_env(slug):
        credential_env = None  # the default is not a choice worth keeping
    if credential_env and (why := credential_env_refusal(credential_env)) is not None:
        raise Refused(f"credential variable {why}")
    blob = ctx.blobs.put(data) if data is not None else None
    return SpecSubmitted(
        submission=submission,
        skill=slug,
        blob=blob,
        url=url,
        base_url=base_url,
        created_by=created_by,
        credential_env=credential_env or None,
    )


def check_base_url(base_url: str | None) -> None:
    """A base URL a person gives: an absolute http(s) URL with a host, no credentials, no query
    (a `javascript:` or `file:` one is refused before anything is stored)."""
    if not base_url:
        return
    from urllib.parse import urlsplit

    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(
            f"base URL {base_url!r} is not an absolute http(s) URL, like https://api.example.com"
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise Refused(f"base URL {base_url!r} carries credentials, a query or a fragment")


async def send(nc: NATS, subject: str, payload: BaseModel, msg_id: str) -> int:
    """Publish one message into the stream (deduplicated by `msg_id`); its stream sequence."""
    from skillpress.schemas.subjects import STREAM

    ack = await nc.jetstream().publish(
        subject, payload.model_dump_json().encode(), headers={"Nats-Msg-Id": msg_id}, stream=STREAM
    )
    return int(ack.seq)


async def submission_events(
    nc: NATS,
    ctx: AppContext,
    slug: str,
    submission: str,
    after: int | None,
    heartbeat: float = 3.0,
) -> AsyncIterator[Event | None]:
    """A submission's events as the pipeline publishes them, replayed from stream sequence
    `after` (the sequence its submission was given; None: from now), ending with its outcome.
    Yields None every `heartbeat` seconds of quiet, and looks for the outcome in the records then
    (an event can be missed across a reconnect; the outcome is stored)."""
    from nats.js.api import ConsumerConfig, DeliverPolicy

    from skillpress.schemas.subjects import STREAM

    config = (
        ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after)
        if after
        else ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
    )
    sub = await nc.jetstream().subscribe(
        "skillpress.>", stream=STREAM, ordered_consumer=True, config=config
    )
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=heartbeat)
            except TimeoutError:
                found = await asyncio.to_thread(stored_outcome, ctx, slug, submission)
                if found is not None:
                    yield found
                    return
                yield None
                continue
            event = parse_event(msg.subject, msg.data)
            if event is None or event.submission != submission:
                continue
            yield event
            if event.subject in ENDINGS:
                return
    finally:
        await sub.unsubscribe()


def stored_outcome(ctx: AppContext, slug: str, submission: str) -> Event | None:
    """A submission's ending as the record store has it (its revision refused, or the version
    its revision made), or None while it has none."""
    from sqlmodel import col, select

    from skillpress.schemas.events import RevisionRejected, VersionProposed
    from skillpress.schemas.records import SourceRevision, SubmissionOutcome, Version

    with ctx.records.session() as s:
        rev = s.exec(
            select(SourceRevision).where(SourceRevision.submission == submission[:128])
        ).first()
        ended = s.get(SubmissionOutcome, submission[:128])
        if ended is not None and ended.outcome == "refused":
            rejected = RevisionRejected(
                revision_id=ended.revision_id or "",
                skill=slug,
                reason=ended.reason or "refused",
                submission=submission,
            )
            return Event(EVENTS.revision_rejected, rejected)
        if ended is not None and ended.revision_id:  # the same bytes again: their version
            rev = s.get(SourceRevision, ended.revision_id)
        if rev is None:
            return None
        if rev.status == "refused":
            rejected = RevisionRejected(
                revision_id=rev.id,
                skill=slug,
                reason=rev.refusal_reason or "refused",
                submission=submission,
            )
            return Event(EVENTS.revision_rejected, rejected)
        version = s.exec(
            select(Version).where(Version.revision_id == rev.id).order_by(col(Version.created_at))
        ).first()
        if version is None:
            return None
        proposed = VersionProposed(
            version_id=version.id,
            skill=slug,
            revision_id=rev.id,
            created=ended is None,  # unchanged: the version these bytes made before
            summary=json.loads(version.diff_json).get("summary", {}),
            submission=submission,
        )
        return Event(EVENTS.version_proposed, proposed)


def request_publish(
    ctx: AppContext,
    slug: str,
    version_id: str,
    remove_gates: bool,
    timeout: float,
    requested_by: str = "cli",
) -> dict[str, Any]:
    """Send the publish command and wait for its `version.published`; returns that event."""
    from skillpress.schemas.events import PublishVersion

    command = PublishVersion(
        skill=slug, version_id=version_id, remove_gates=remove_gates, requested_by=requested_by
    )

    async def work(pipeline: Pipeline) -> list[Event]:
        return await follow(
            pipeline,
            COMMANDS.publish_version,
            command,
            f"publish:{version_id}:{uuid.uuid4().hex}",
            lambda e: (
                e.subject == EVENTS.version_published
                and getattr(e.message, "version_id", None) == version_id
            ),
            timeout,
        )

    return with_pipeline(ctx, work)[-1].body


def replay_dead_letters(ctx: AppContext, ids: list[int] | None) -> list[Replayed]:
    """Re-publish dead letters' original messages (those numbered `ids`, or every one not yet
    replayed) under fresh message ids, and record when and as what; NotFound for an unknown id."""
    from sqlmodel import col, select

    from skillpress.schemas.records import DeadLetter
    from skillpress.schemas.subjects import STREAM
    from skillpress.services.errors import NotFound

    with ctx.records.session() as s:
        if ids is None:
            query = select(DeadLetter).where(col(DeadLetter.replayed_at).is_(None))
        else:
            query = select(DeadLetter).where(col(DeadLetter.id).in_(ids))
        rows = list(s.exec(query.order_by(col(DeadLetter.id))).all())
        for row in rows:
            s.expunge(row)
    missing = sorted(set(ids or []) - {r.id for r in rows if r.id is not None})
    if missing:
        raise NotFound(f"no dead letter #{missing[0]} (skillpress dead-letters lists them)")

    async def work(pipeline: Pipeline) -> list[str]:
        async with pipeline.connection() as nc:
            js = nc.jetstream()
            sent = []
            for row in rows:
                msg_id = f"replay:{row.id}:{uuid.uuid4().hex}"
                await js.publish(
                    row.subject,
                    row.payload.encode(),
                    headers={"Nats-Msg-Id": msg_id},
                    stream=STREAM,
                )
                sent.append(msg_id)
            return sent

    sent = with_pipeline(ctx, work) if rows else []
    now = ctx.clock()
    out: list[Replayed] = []
    with ctx.records.session() as s:
        for row, msg_id in zip(rows, sent, strict=True):
            stored = s.get(DeadLetter, row.id)
            assert stored is not None
            stored.replayed_at, stored.replayed_as = now, msg_id
            out.append({"id": row.id, "subject": row.subject, "replayed_as": msg_id})
    return out


def propose_change(
    ctx: AppContext, slug: str, ids: list[str], change: str, as_of: datetime, timeout: float
) -> Event:
    """Announce changed annotations and wait for the version they propose (or the refusal)."""
    from skillpress.schemas.events import AnnotationChanged

    submission = uuid.uuid4().hex
    event = AnnotationChanged(
        skill=slug,
        annotation_ids=ids,
        change=change,
        as_of=as_of.isoformat(),
        submission=submission,
    )
    endings = (EVENTS.version_proposed, EVENTS.revision_rejected)

    async def work(pipeline: Pipeline) -> list[Event]:
        return await follow(
            pipeline,
            EVENTS.annotation_changed,
            event,
            f"annotation:{submission}",
            lambda e: e.submission == submission and e.subject in endings,
            timeout,
        )

    return with_pipeline(ctx, work)[-1]


def request_refresh(ctx: AppContext, interval: float | None = None) -> str:
    """Ask the refresh worker to re-fetch the URL sources that are due, once per slot of
    `interval` seconds (default: the refresh interval) however many schedulers ask: the message
    id names the slot. Returns that id."""
    import time

    from skillpress.schemas.events import RefreshSources

    every = interval or ctx.settings.refresh_interval or 3600.0
    msg_id = f"refresh-slot:{int(time.time() // every)}"

    async def work(pipeline: Pipeline) -> None:
        async with pipeline.connection() as nc:
            await send(nc, COMMANDS.refresh_sources, RefreshSources(), msg_id)

    with_pipeline(ctx, work)
    return msg_id
