"""The pipeline's bus, as every room reaches it: where NATS is, a connection with the streams in
place, sending one message, and following the events it leads to until a story ends.

A server lends its one connection to the use-cases it runs (`AppContext.bus`): they send and
follow on it, never on a connection of their own per request. Otherwise, with
`SKILLPRESS_NATS_URL` set, workers run elsewhere (`skillpress worker NAME`); without it, a
`skillpress up` on the same home is found through `<home>/up.json` (mode 0600: the URL carries
the embedded server's credentials); failing that, the embedded pipeline the context was given
(the stack's: a nats-server and every worker in-process) runs for the use-case's duration. A
story is followed one way (`follow`: an ordered consumer from the sequence its message was
given), by every face.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from skillpress.app.base.context import AppContext
from skillpress.errors import Retryable
from skillpress.platform.nats_urls import shown_url
from skillpress.platform.settings import Settings
from skillpress.platform.tracing import inject

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

__all__ = [
    "Event",
    "OnEvent",
    "Pipeline",
    "StackError",
    "follow",
    "observe_queues",
    "parse_event",
    "pipeline_ready",
    "running_up",
    "send",
    "send_and_follow",
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


@dataclass
class Pipeline:
    """Where a use-case sends: the NATS it reaches (`mode`: configured, up, embedded, or the
    server's `shared` connection it runs on)."""

    ctx: AppContext
    nats_url: str
    mode: str  # configured | up | embedded | shared
    shared: NATS | None = None

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[NATS]:
        """A connection to this pipeline's NATS with its streams in place: the server's own
        (kept open), or one made for this use-case and closed after."""
        if self.shared is not None:
            yield self.shared
            return
        from skillpress.platform.broker import connect, ensure_stream, nats_options

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

    async def say_if_nobody_takes(self, nc: NATS, subject: str, waits: float) -> None:
        """On a NATS the workers share with others (configured, or a server's), nobody may run a
        worker yet: said at once (one log line), before the wait."""
        if self.mode not in ("configured", "shared"):
            return
        nobody = await _taken_by_nobody(nc, subject)
        if nobody is not None:
            from skillpress.platform.logging import get_logger

            get_logger("pipeline").warning("pipeline.no_worker_yet", said=nobody, waits=waits)

    def no_answer(self, timeout: float) -> StackError:
        """What a wait that heard no ending in `timeout` seconds says, naming who should have
        answered."""
        where = {
            "configured": f"workers on {shown_url(self.nats_url)} (skillpress worker NAME)",
            "shared": f"workers on {shown_url(self.nats_url)} (skillpress worker NAME)",
            "up": "the running `skillpress up`",
            "embedded": "the in-process workers",
        }[self.mode]
        return StackError(
            f"no answer from {where} within {timeout:g} s, and no dead letter: is every"
            " worker running (`skillpress worker all`)?"
        )


def _marker(settings: Settings) -> Path:
    return settings.home / "up.json"


def write_up_marker(settings: Settings, nats_url: str, nats_home: Path | None = None) -> Path:
    """`<home>/up.json` (mode 0600: the URL carries the embedded NATS's operator credentials),
    what a command line on the same home finds a running `up` by; `nats_home` is where the
    embedded server keeps each role's credentials."""
    from skillpress.platform.operator_tokens import write_private

    path = _marker(settings)
    info: dict[str, Any] = {"nats_url": nats_url, "pid": os.getpid()}
    if nats_home is not None:
        info["nats_home"] = str(nats_home)
    write_private(path, json.dumps(info))
    return path


def running_up(settings: Settings, role: str = "operator") -> str | None:
    """The NATS URL of a live `skillpress up` on this home, if one is running, as `role`'s user
    (`platform.nats_roles`: a follower's or a runtime's can publish no command, write no
    pointer)."""
    path = _marker(settings)
    try:
        info = json.loads(path.read_text())
        os.kill(int(info["pid"]), 0)
        url = str(info["nats_url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if role == "operator" or not info.get("nats_home"):
        return url
    from skillpress.platform.embedded_nats import credentials
    from skillpress.platform.nats_urls import as_user

    return as_user(url, *credentials(Path(str(info["nats_home"])), role))


def with_pipeline(ctx: AppContext, work: Callable[[Pipeline], Coroutine[Any, Any, T]]) -> T:
    """Run `work` against the pipeline: the server's own connection (`AppContext.bus`: a
    use-case `serve` runs in a thread), the configured NATS, a running `skillpress up`, or the
    embedded one the context was given (`AppContext.embedded`: a command line's) for its
    duration."""
    settings = ctx.settings
    shared = ctx.bus
    if shared is not None:  # a server's use-case, run in a thread: on the server's connection
        with contextlib.suppress(RuntimeError):  # RuntimeError: no loop runs here (a thread)
            if asyncio.get_running_loop() is shared.loop:
                raise AssertionError("a use-case that sends is run in a thread, not on the loop")
        pipeline = Pipeline(ctx, shared.url, "shared", shared.connection)
        return asyncio.run_coroutine_threadsafe(work(pipeline), shared.loop).result()
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


SEND_PATIENCE = 10.0  # seconds a face waits for JetStream to take a message (an election)


async def send(
    nc: NATS, subject: str, payload: BaseModel, msg_id: str, patience: float | None = None
) -> int:
    """Publish one message into the stream (deduplicated by `msg_id`, so asking again is safe);
    its stream sequence. A stream that does not answer (a cluster electing its leader, or short
    of a quorum) is asked again every half second for up to `patience` seconds, as a worker's
    publish is; then BrokerUnavailable, which every face answers as a wait (503, Retry-After),
    never as a crash."""
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

    from skillpress.platform.broker import BrokerUnavailable
    from skillpress.schemas.subjects import STREAM

    # the submission's trace starts here, named by the submission it serves
    headers = inject(
        {"Nats-Msg-Id": msg_id}, subject, submission=getattr(payload, "submission", None)
    )
    data = payload.model_dump_json().encode()
    patience = SEND_PATIENCE if patience is None else patience
    deadline = time.monotonic() + patience
    while True:
        try:
            ack = await nc.jetstream().publish(subject, data, headers=headers, stream=STREAM)
            return int(ack.seq)
        except (
            NoStreamResponseError,
            NoRespondersError,
            ServiceUnavailableError,
            NatsTimeout,
            TimeoutError,
        ) as exc:
            if time.monotonic() > deadline:
                raise BrokerUnavailable(
                    f"JetStream did not take the message for {patience:g} s (a cluster electing"
                    f" its leader, or without a quorum: {type(exc).__name__}); try again shortly"
                ) from None
            await asyncio.sleep(0.5)


async def follow(
    nc: NATS, after: int | None, heartbeat: float = 3.0
) -> AsyncGenerator[Event | None, None]:
    """The pipeline's events as the stream holds them, from stream sequence `after` (None: from
    now) in order, whatever the client missed while reconnecting (an ordered consumer), and None
    every `heartbeat` seconds (a tick: the follower looks elsewhere, in the records, or gives
    up). The one way every face follows a story."""
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
    quiet_since = time.monotonic()
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=heartbeat)
            except TimeoutError:
                msg = None
            event = parse_event(msg.subject, msg.data) if msg is not None else None
            if event is not None:
                yield event
            if time.monotonic() - quiet_since >= heartbeat:
                quiet_since = time.monotonic()
                yield None
    finally:
        with contextlib.suppress(Exception):  # a connection closing under us: nothing to undo
            await sub.unsubscribe()


async def send_and_follow(
    pipeline: Pipeline,
    subject: str,
    payload: BaseModel,
    msg_id: str,
    done: Callable[[Event], bool],
    timeout: float,
) -> list[Event]:
    """Publish one message, then collect the events from its place in the stream on until
    `done(event)` says the story ended (StackError after `timeout` seconds without)."""
    seen: list[Event] = []
    async with pipeline.connection() as nc:
        seq = await send(nc, subject, payload, msg_id)
        await pipeline.say_if_nobody_takes(nc, subject, timeout)
        deadline = time.monotonic() + timeout
        async with contextlib.aclosing(follow(nc, seq, min(3.0, timeout))) as events:
            async for event in events:
                if event is not None:
                    seen.append(event)
                    if done(event):
                        return seen
                if time.monotonic() > deadline:
                    break
    raise pipeline.no_answer(timeout)


async def pipeline_ready(nc: NATS | None, consumers: Sequence[str] = (), wait: float = 2.0) -> str:
    """ "ok" when JetStream takes the pipeline's work: the connection is up, the stream answers
    (a cluster has its leader and a quorum) and each of `consumers` exists (a worker is ready
    only once its own do); else why not, in one line. Each question waits `wait` seconds."""
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import NotFoundError, ServiceUnavailableError

    from skillpress.schemas.subjects import STREAM

    if nc is None or not nc.is_connected:
        return "the pipeline's connection is down"
    js = nc.jetstream(timeout=wait)
    asking = f"stream {STREAM}"
    try:
        info = await js.stream_info(STREAM)
        if info.cluster is not None and not info.cluster.leader:  # a replica answers for it
            return (
                f"JetStream's stream {STREAM} has no leader: a cluster electing one, or without"
                " a quorum"
            )
        for consumer in consumers:
            asking = f"consumer {consumer}"
            await js.consumer_info(STREAM, consumer)
    except NotFoundError:
        return f"JetStream has no {asking}"
    except (NoRespondersError, ServiceUnavailableError, NatsTimeout, TimeoutError) as exc:
        return (
            f"JetStream does not answer for its {asking} ({type(exc).__name__}): a cluster"
            " electing its leader, or without a quorum"
        )
    return "ok"


async def observe_queues(nc: NATS | None, consumers: Sequence[str] | None = None) -> None:
    """Each stage's queue into the scrape (`skillpress_consumer_*`): what its durable consumer
    has pending, what it holds unacknowledged, and how old the oldest message it has not
    finished is. `consumers`: only these (a worker's own); None: every durable one (serve). A
    stream that does not answer leaves the last values (readiness says why)."""
    from nats.errors import Error as NatsError
    from nats.js.errors import NotFoundError

    from skillpress.platform.metrics import observe_consumer
    from skillpress.schemas.subjects import STREAM

    if nc is None or not nc.is_connected:
        return
    js = nc.jetstream(timeout=2.0)
    found = []
    if consumers is None:
        try:
            found = await js.consumers_info(STREAM)
        except (NatsError, TimeoutError):
            return
    # a worker asks for its own by name (its NATS role may not list the stream's); one not
    # made yet, or that does not answer now, is left out of this scrape
    for consumer in consumers or ():
        with contextlib.suppress(NatsError, TimeoutError):
            found.append(await js.consumer_info(STREAM, consumer))
    now = datetime.now(UTC)
    for info in found:
        name = info.config.durable_name
        if not name:
            continue  # an ordered consumer (an event stream a client follows) is no stage
        pending, unacked = int(info.num_pending or 0), int(info.num_ack_pending or 0)
        oldest = 0.0
        if pending or unacked:
            floor = info.ack_floor.stream_seq if info.ack_floor else 0
            try:
                first = await js.get_msg(
                    STREAM, seq=(floor or 0) + 1, subject=info.config.filter_subject, next=True
                )
                at = first.time
                if at is not None:
                    at = at if at.tzinfo else at.replace(tzinfo=UTC)
                    oldest = max(0.0, (now - at).total_seconds())
            except (NotFoundError, NatsError, TimeoutError):
                oldest = 0.0
        observe_consumer(name, pending, unacked, oldest)


async def _taken_by_nobody(nc: NATS, subject: str) -> str | None:
    """Why nothing will take a message on `subject` (no worker ever made a consumer for it on
    this NATS, or none is asking for work now), or None. Asked once, right after sending, so a
    person hears it at once rather than after the whole wait."""
    from nats.errors import Error as NatsError
    from nats.js.errors import NotFoundError

    from skillpress.schemas.subjects import STREAM

    js = nc.jetstream(timeout=2.0)
    try:
        found = await js.consumers_info(STREAM)
    except (NotFoundError, NatsError, TimeoutError):
        return None  # the stream or this user cannot say: the wait says what it can
    takers = [c for c in found if c.config.durable_name and c.config.filter_subject == subject]
    if not takers:
        return (
            f"no worker takes {subject} on this NATS yet (no consumer for it): start the"
            " workers (`skillpress worker all`); what was sent waits in the stream for them"
        )
    return None
