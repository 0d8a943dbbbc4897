"""The pipeline's steps run in-process, in publish order, with no broker: the fast layer's bus.

Each message goes to every step subscribed to its subject (as the workers' durable consumers
would take it), through the same step functions the workers run; what they return is queued in
turn. It proves the chain of effects and events on SQLite and a local blob folder in a fraction
of a second; delivery guarantees (redelivery, dead letters, dedup) stay with the real NATS tests.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pydantic import BaseModel

from skillpress.app.base.context import AppContext
from skillpress.workers.app import WORKERS
from skillpress.workers.delivery import Outgoing, Step

Event = tuple[str, dict[str, Any]]


def _steps() -> dict[str, list[Step]]:
    by_subject: dict[str, list[Step]] = {}
    for steps in WORKERS.values():
        for step in steps:
            by_subject.setdefault(step.subject, []).append(step)
    return by_subject


def run(ctx: AppContext, subject: str, payload: BaseModel) -> list[Event]:
    """Deliver one message and everything it leads to; every event published, in order."""
    steps = _steps()
    queue: deque[Outgoing] = deque([Outgoing(subject, payload, "first")])
    seen: list[Event] = []
    while queue:
        out = queue.popleft()
        seen.append((out.subject, out.payload.model_dump(mode="json")))
        for step in steps.get(out.subject, []):
            message = step.model.model_validate(out.payload.model_dump(mode="json"))
            queue.extend(step.run(ctx, message))
    return seen
