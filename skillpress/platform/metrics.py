"""What a Prometheus scrape of any skillpress process reads (`/metrics` on `serve`, and on each
worker's probe port): per pipeline stage, messages handled, failed (by the reaction they got),
redelivered, and how long each took; submissions by how they ended; dead letters; waits for a
dependency that stopped answering; each stage's queue (messages pending, unacknowledged, the oldest
one's age); HTTP requests by route and status; approvals waiting. Names
and labels only: never a slug, a spec or a value (the label sets stay small and say nothing
private)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = [
    "CONTENT_TYPE",
    "approvals_waiting_from",
    "REACTIONS",
    "exposition",
    "known_stage",
    "observe_consumer",
    "observe_dead_letter",
    "observe_http",
    "observe_outage_wait",
    "observe_stage",
]

CONTENT_TYPE = CONTENT_TYPE_LATEST

_STAGE_SECONDS = Histogram(
    "skillpress_stage_duration_seconds",
    "How long a pipeline stage took over one message, however it ended",
    ["stage"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600),
)
_HANDLED = Counter(
    "skillpress_stage_handled_total", "Messages a stage handled to their end", ["stage"]
)
_FAILED = Counter(
    "skillpress_stage_failed_total",
    "Messages a stage failed on, by the reaction: retrying, dead_lettered (deliveries spent),"
    " permanent (retrying cannot help), dependency_gone (an outage past the limit)",
    ["stage", "reaction"],
)
_REDELIVERED = Counter(
    "skillpress_stage_redelivered_total",
    "Messages a stage received again (a retry, or a worker that died holding it)",
    ["stage"],
)
_SUBMISSIONS = Counter(
    "skillpress_submissions_total",
    "Submissions by how they ended: proposed, unchanged (bytes already stored), refused",
    ["outcome"],
)
_DEAD_LETTERS = Counter(
    "skillpress_dead_letters_total", "Dead letters recorded, by the worker", ["worker"]
)
_OUTAGE_WAITS = Counter(
    "skillpress_outage_waits_total",
    "Times a stage waited for a dependency (the records, the blob store, a model)",
    ["stage"],
)
_HTTP = Counter(
    "skillpress_http_requests_total",
    "HTTP requests by route template, method and status",
    ["route", "method", "status"],
)
_HTTP_SECONDS = Histogram(
    "skillpress_http_request_duration_seconds",
    "How long HTTP requests took, by route template",
    ["route"],
    buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
# a stage's queue, read from its durable consumer at each scrape (is it behind?)
_PENDING = Gauge(
    "skillpress_consumer_pending",
    "Messages on the stream a stage's consumer has not been given yet",
    ["consumer"],
)
_UNACKED = Gauge(
    "skillpress_consumer_unacknowledged",
    "Messages a stage's consumer was given and has not finished (acknowledged) yet",
    ["consumer"],
)
_OLDEST = Gauge(
    "skillpress_consumer_oldest_seconds",
    "Age of the oldest message a stage's consumer has not finished (0: none waiting)",
    ["consumer"],
)

# what a stage's published subject says about the submission it ends
_ENDINGS = {
    "skillpress.version.proposed": "proposed",
    "skillpress.revision.unchanged": "unchanged",
    "skillpress.revision.rejected": "refused",
}


def observe_stage(
    stage: str, seconds: float, delivered: int, reaction: str | None, published: list[str]
) -> None:
    """One message's end at `stage`: `reaction` None when handled, else how it failed."""
    _STAGE_SECONDS.labels(stage).observe(seconds)
    if delivered > 1:
        _REDELIVERED.labels(stage).inc()
    if reaction is None:
        _HANDLED.labels(stage).inc()
    else:
        _FAILED.labels(stage, reaction).inc()
    for subject in published:
        if subject in _ENDINGS:
            _SUBMISSIONS.labels(_ENDINGS[subject]).inc()


def observe_dead_letter(worker: str) -> None:
    _DEAD_LETTERS.labels(worker).inc()


def observe_outage_wait(stage: str) -> None:
    _OUTAGE_WAITS.labels(stage).inc()


# the methods a label names; any other a client makes up is counted as `other`, so no request
# can grow the scrape (every label's values are a closed set)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_http(route: str, method: str, status: int, seconds: float) -> None:
    """One request, by its route's template (the caller gives "unmatched" for none), its method
    (or `other`) and its status class's code (or `other`)."""
    shown = method if method in _METHODS else "other"
    code = str(status) if 100 <= status <= 599 else "other"
    _HTTP.labels(route, shown, code).inc()
    _HTTP_SECONDS.labels(route).observe(seconds)


def observe_consumer(consumer: str, pending: int, unacked: int, oldest_seconds: float) -> None:
    """A stage's queue as its consumer says it now (set at each scrape)."""
    _PENDING.labels(consumer).set(pending)
    _UNACKED.labels(consumer).set(unacked)
    _OLDEST.labels(consumer).set(oldest_seconds)


# how a message a stage failed on was met (the label values of skillpress_stage_failed_total)
REACTIONS = ("retrying", "dead_lettered", "permanent", "dependency_gone")


def known_stage(stage: str) -> None:
    """Every series of a stage this process runs, at 0 from its start: a rate over a series
    that appears only with the first failure misses that failure."""
    _HANDLED.labels(stage)
    _REDELIVERED.labels(stage)
    _OUTAGE_WAITS.labels(stage)
    _DEAD_LETTERS.labels(stage)
    _STAGE_SECONDS.labels(stage)
    for reaction in REACTIONS:
        _FAILED.labels(stage, reaction)


class _ApprovalsWaiting(Collector):
    """`skillpress_approvals_waiting`, read from the records at each scrape: only the process
    that serves people (`serve`) has it, and while the records do not answer it is absent (a
    gap, never a number Prometheus would store as one)."""

    def __init__(self, count: Callable[[], int | None]) -> None:
        self.count = count

    def collect(self) -> Iterator[GaugeMetricFamily]:
        found = self.count()
        if found is None:
            return
        family = GaugeMetricFamily(
            "skillpress_approvals_waiting", "Gated calls waiting for a person's decision"
        )
        family.add_metric([], found)
        yield family


_WAITING: list[_ApprovalsWaiting] = []


def approvals_waiting_from(count: Callable[[], int | None]) -> None:
    """Read the approvals waiting at each scrape from `count` (the records; None when they do
    not answer): only a process that serves people (`serve`) calls this."""
    while _WAITING:
        REGISTRY.unregister(_WAITING.pop())
    _WAITING.append(_ApprovalsWaiting(count))
    REGISTRY.register(_WAITING[0])


def exposition() -> bytes:
    """The text a scrape reads."""
    return generate_latest(REGISTRY)
