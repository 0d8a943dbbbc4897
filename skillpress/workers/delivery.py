"""One delivery contract for every worker: effect, publish, ack; spaced retries; dead letters.

A step is a synchronous, idempotent function of (context, message) that stores its effect and
returns the events to publish. The shell runs it off the event loop, publishes what it returned
(each with its own deterministic `Nats-Msg-Id`, so a redelivered message's re-publish is
de-duplicated by JetStream), and returns; FastStream's NACK_ON_ERROR policy then acks. A step
that raises is retried after a spaced delay (`NackMessage(delay=...)`); on the last allowed
delivery, or at once for a `skillpress.errors.Permanent` one (a malformed message, a refusal, a
record or blob that does not exist, a corrupt blob), the message is stored as a dead letter with
its error and acked, so nothing loops forever and nothing disappears. Everything else (the
`Retryable` errors, and anything unforeseen) is retried: this is the one place errors are mapped
to reactions.
"""

from __future__ import annotations

import asyncio
import json
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from faststream import AckPolicy
from faststream.exceptions import NackMessage
from faststream.nats import ConsumerConfig, JStream, NatsBroker, NatsMessage, PullSub
from pydantic import BaseModel, ValidationError

from skillpress.app.base.context import AppContext
from skillpress.app.records.dead_letters import dead_letter, exhausted_letter
from skillpress.errors import Permanent, Retryable, Unavailable
from skillpress.platform.broker import EXHAUSTED_STREAM, EXHAUSTED_SUBJECTS
from skillpress.platform.logging import get_logger
from skillpress.platform.metrics import (
    known_stage,
    observe_dead_letter,
    observe_outage_wait,
    observe_stage,
)
from skillpress.platform.native_heap import trim
from skillpress.platform.tracing import mark_span
from skillpress.schemas.subjects import STREAM

__all__ = ["Outgoing", "Step", "publish_all", "subscribe", "subscribe_exhausted"]


@dataclass(frozen=True)
class Outgoing:
    subject: str
    payload: BaseModel
    msg_id: str


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Step(Generic[M]):
    """One worker's step: the subject it takes, the message model it parses, and the function
    that handles a message of that model (`(ctx, message) → outgoing`), typed by it."""

    worker: str
    subject: str
    model: type[M]
    run: Callable[[AppContext, M], list[Outgoing]]
    durable: str = ""  # the durable consumer, shared by replicas; default: the worker's name
    # a stage that derives (pure over its inputs): an error it did not foresee is a bug that
    # every try would meet again, so it is a dead letter at once, naming where it broke
    derives: bool = False

    @property
    def consumer(self) -> str:
        return self.durable or self.worker


async def publish_all(broker: NatsBroker, outgoing: list[Outgoing], patience: float = 30.0) -> None:
    """Publish each message (deduplicated by its id). A stream that does not answer — a cluster
    electing a new leader — is asked again for up to `patience` seconds, so a broker's moment of
    election does not spend the message's deliveries."""
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import NoStreamResponseError

    loop = asyncio.get_running_loop()
    for out in outgoing:
        # a key-value put is a publish to `$KV.<bucket>.<key>`, into the bucket's own stream
        kv = out.subject.split(".")[1] if out.subject.startswith("$KV.") else None
        deadline = loop.time() + patience
        while True:
            try:
                await broker.publish(
                    out.payload.model_dump(mode="json"),
                    out.subject,
                    headers={"Nats-Msg-Id": out.msg_id},
                    stream=f"KV_{kv}" if kv else STREAM,
                    timeout=10.0,
                )
                break
            except (NoStreamResponseError, NoRespondersError, NatsTimeout, TimeoutError):
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.5)


def _where(exc: BaseException) -> str:
    """Where an error was raised: the innermost frame of skillpress's own, as `path:line in f`."""
    import os

    # the package's folder, from this module's place in it (importing `skillpress` itself would
    # load every face it re-exports)
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(home)]
    if not frames:
        return "outside skillpress"
    last = frames[-1]
    return f"skillpress/{last.filename[len(home) :]}:{last.lineno} in {last.name}"


def _dead_letter(ctx: AppContext, step: Step[Any], msg: NatsMessage, error: str) -> None:
    observe_dead_letter(step.worker)
    headers = msg.raw_message.headers or {}
    dead_letter(
        ctx,
        step.subject,
        step.worker,
        headers.get("Nats-Msg-Id"),
        error,
        msg.body.decode("utf-8", "replace"),
    )


STILL_WORKING_EVERY = 30.0  # seconds between the lines saying a message is still being handled


async def _in_progress(
    msg: NatsMessage, every: float, bound: Any, worker: str, started: float
) -> None:
    """Tell JetStream the message is being worked on, every `every` seconds, so a handler slower
    than `ack_wait` (a 20 MB spec, a slow model, a dependency waited for) is not handed to another
    replica meanwhile; and say in the log, every STILL_WORKING_EVERY seconds, which message this
    worker holds and for how long. A signal that fails (a reconnecting client) is tried again at
    the next beat, never given up: redelivery takes over only if the worker is really gone."""
    said_at = started
    failing = False
    while True:
        await asyncio.sleep(every)
        try:
            await msg.raw_message.in_progress()
            failing = False
        except Exception as exc:  # noqa: BLE001 (logged once per run of failures; tried again)
            if not failing:
                bound.warning(f"{worker}.in_progress_failed", error=str(exc) or type(exc).__name__)
            failing = True
        now = time.monotonic()
        if now - said_at >= STILL_WORKING_EVERY:
            bound.info(f"{worker}.still_working", elapsed_s=round(now - started, 1))
            said_at = now


class OutageOutlasted(Exception):
    """A dependency stayed down past SKILLPRESS_OUTAGE_LIMIT while a message waited for it."""


def _run(step: Step[M], ctx: AppContext, payload: M) -> Any:
    try:
        return step.run(ctx, payload)
    finally:
        trim()  # what the step freed, back to the system (a derivation's is most of it)


async def _through_outages(ctx: AppContext, step: Step[M], payload: M, bound: Any) -> Any:
    """`step.run`, waited through a dependency's outage in place: the message is held (its
    in-progress heartbeat keeps it from another replica), its deliveries are not spent, and the
    step runs again on the outage schedule until it answers or the outage limit passes."""
    settings = ctx.settings
    delays = settings.outage_delays or (60.0,)
    waited, waits = 0.0, 0
    while True:
        try:
            return await asyncio.to_thread(_run, step, ctx, payload)
        except Unavailable as exc:
            if waited >= settings.outage_limit:
                raise OutageOutlasted(
                    f"{type(exc).__name__}: {exc} (waited {waited:.0f} s for it; the limit is"
                    f" SKILLPRESS_OUTAGE_LIMIT={settings.outage_limit:g} s)"
                ) from exc
            delay = min(delays[min(waits, len(delays) - 1)], settings.outage_limit - waited)
            bound.warning(
                f"{step.worker}.waiting_for_dependency", error=str(exc), delay=delay, waited=waited
            )
            observe_outage_wait(step.worker)
            await asyncio.sleep(delay)
            waited, waits = waited + delay, waits + 1


def _ids(payload: BaseModel) -> dict[str, Any]:
    """The ids a message's log lines are bound with."""
    return {
        k: v
        for k, v in payload.model_dump().items()
        if k in ("revision_id", "version_id", "skill", "submission")
    }


async def _handle(
    broker: NatsBroker,
    ctx: AppContext,
    step: Step[Any],
    payload: Any,
    msg: NatsMessage,
    bound: Any,
    delivered: int,
) -> None:
    """One message's handling: its step run through outages with the in-progress signal beating,
    what it makes published, and its end in the log with how long it took (`ms`); a failure
    retried on the schedule, or a dead letter when retrying cannot help or deliveries ran out."""
    settings = ctx.settings
    started = time.monotonic()
    mark_span(stage=step.worker, **_ids(payload))  # the trace found by what it served
    bound.info(f"{step.worker}.started", bytes=len(msg.body))
    bound = bound.bind(started_at=round(time.time(), 3))

    def ms(reaction: str | None = None, published: list[str] | None = None) -> int:
        """Milliseconds since the message was taken; its end counted in the metrics."""
        seconds = time.monotonic() - started
        observe_stage(step.worker, seconds, delivered, reaction, published or [])
        return round(seconds * 1000)

    working = asyncio.create_task(
        _in_progress(msg, max(settings.ack_wait / 3, 0.2), bound, step.worker, started)
    )
    try:
        outgoing = await _through_outages(ctx, step, payload, bound)
        await publish_all(broker, outgoing)
    except Permanent as exc:  # retrying cannot help: a dead letter at once
        bound.error(f"{step.worker}.failed_permanently", error=str(exc), ms=ms("permanent"))
        await asyncio.to_thread(_dead_letter, ctx, step, msg, f"{type(exc).__name__}: {exc}")
        return
    except OutageOutlasted as exc:
        bound.error(f"{step.worker}.dependency_gone", error=str(exc), ms=ms("dependency_gone"))
        await asyncio.to_thread(_dead_letter, ctx, step, msg, str(exc))
        return
    except Exception as exc:
        error = "".join(traceback.format_exception_only(exc)).strip()
        if step.derives and not isinstance(exc, Retryable):
            said = f"a bug in {step.worker}: {error} ({_where(exc)}); nothing retried"
            bound.error(f"{step.worker}.bug", error=said, ms=ms("permanent"))
            await asyncio.to_thread(_dead_letter, ctx, step, msg, said)
            return
        if delivered >= settings.max_deliver:
            bound.error(f"{step.worker}.dead_lettered", error=error, ms=ms("dead_lettered"))
            await asyncio.to_thread(
                _dead_letter, ctx, step, msg, f"{error} (after {delivered} deliveries)"
            )
            return
        delay = (
            settings.retry_delays[min(delivered - 1, len(settings.retry_delays) - 1)]
            if settings.retry_delays
            else 0.0
        )
        bound.warning(f"{step.worker}.retrying", error=error, delay=delay, ms=ms("retrying"))
        raise NackMessage(delay=delay) from exc
    finally:
        working.cancel()
    published = [o.subject for o in outgoing]
    bound.info(f"{step.worker}.done", published=published, ms=ms(None, published))


def subscribe(broker: NatsBroker, ctx: AppContext, step: Step[Any]) -> None:
    """Register `step` on `broker`: a durable pull consumer named for the worker, shared by replicas."""
    settings = ctx.settings
    log = get_logger(step.worker)
    known_stage(step.worker)  # its series at 0 from the start, before anything fails
    config = ConsumerConfig(max_deliver=settings.max_deliver, ack_wait=settings.ack_wait)

    @broker.subscriber(
        step.subject,
        stream=JStream(STREAM, declare=False),
        durable=step.consumer,
        # concurrency is the fetch's batch: every message fetched is handled at once (each
        # with its in-progress signal) and the next fetch waits for the batch to end. FastStream's
        # `max_workers` fetched ahead of its free handlers and held those messages silently, so
        # past ack_wait JetStream handed them to a replica too (#44.4)
        pull_sub=PullSub(batch_size=settings.worker_concurrency, timeout=1.0),
        max_workers=1,
        config=config,
        ack_policy=AckPolicy.NACK_ON_ERROR,
        title=f"{step.consumer}:{step.subject}",
    )
    async def handle(body: Any, msg: NatsMessage) -> None:
        delivered = msg.raw_message.metadata.num_delivered or 1
        bound = log.bind(
            subject=step.subject,
            delivered=delivered,
            stream_seq=msg.raw_message.metadata.sequence.stream,
        )
        try:
            payload = step.model.model_validate(
                body if isinstance(body, dict) else json.loads(msg.body)
            )
        except (ValidationError, ValueError) as exc:
            bound.error(f"{step.worker}.malformed_message", error=str(exc)[:500])
            await asyncio.to_thread(
                _dead_letter, ctx, step, msg, f"malformed {step.model.__name__}: {exc}"
            )
            return
        await _handle(broker, ctx, step, payload, msg, bound.bind(**_ids(payload)), delivered)


class _Exhausted(BaseModel):
    """JetStream's max-deliveries advisory (the fields skillpress reads)."""

    stream: str
    consumer: str
    stream_seq: int
    deliveries: int


Original = Callable[[int], Awaitable[tuple[str, bytes, dict[str, str]]]]


def _exhausted_letter(
    ctx: AppContext, advisory: _Exhausted, subject: str, data: bytes, headers: dict[str, str]
) -> bool:
    return exhausted_letter(
        ctx,
        subject,
        advisory.consumer,
        headers.get("Nats-Msg-Id"),
        f"exhausted: {advisory.deliveries} deliveries, none acknowledged (the worker holding the"
        f" last one died or ran past ack_wait; stream sequence {advisory.stream_seq})",
        data.decode("utf-8", "replace"),
    )


def subscribe_exhausted(broker: NatsBroker, ctx: AppContext, original: Original) -> None:
    """Turn every max-deliveries advisory into a dead letter with the message's subject and
    payload (`original` fetches them by stream sequence): a message whose last delivery died
    with its worker is recorded, never silently gone. Every worker process shares the consumer."""
    log = get_logger("exhausted")

    @broker.subscriber(
        EXHAUSTED_SUBJECTS,
        stream=JStream(EXHAUSTED_STREAM, declare=False),
        durable="exhausted",
        pull_sub=PullSub(batch_size=1, timeout=1.0),
        config=ConsumerConfig(max_deliver=20, ack_wait=ctx.settings.ack_wait),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        title="exhausted",
    )
    async def handle(body: Any, msg: NatsMessage) -> None:
        try:
            advisory = _Exhausted.model_validate(
                body if isinstance(body, dict) else json.loads(msg.body)
            )
        except (ValidationError, ValueError) as exc:
            log.error("exhausted.malformed_advisory", error=str(exc)[:500])
            return
        if advisory.stream != STREAM:
            return
        subject, data, headers = await original(advisory.stream_seq)
        written = await asyncio.to_thread(_exhausted_letter, ctx, advisory, subject, data, headers)
        log.error(
            "exhausted.dead_lettered" if written else "exhausted.already_recorded",
            subject=subject,
            worker=advisory.consumer,
            stream_seq=advisory.stream_seq,
            deliveries=advisory.deliveries,
        )
