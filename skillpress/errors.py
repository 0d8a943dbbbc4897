"""The two reactions an error can need, shared by every layer (no imports: the pure core uses it too).

A failure is either worth trying again (`Retryable`: a network blip, a server restarting, a
replica racing for the same row) or not (`Permanent`: the input is wrong, or what it names does
not exist). Adapter and use-case errors subclass one of them; the delivery shell maps them once:
a permanent one becomes a dead letter at once, anything else is retried with spaced delays.
"""

from __future__ import annotations

__all__ = [
    "ChatFailed",
    "NotFound",
    "Permanent",
    "Refused",
    "Retryable",
    "SkillpressError",
    "Unavailable",
]


class SkillpressError(Exception):
    """Every error skillpress raises on purpose: one family to catch (an agent host's `except`),
    each either Retryable or Permanent."""


class Retryable(SkillpressError):
    """Trying again later may succeed."""

    # the stable name of this kind of failure in the HTTP API's problem `type`, and its status:
    # fixed per class here, so renaming a class never changes the public API
    problem = "unavailable"
    status = 503


class Unavailable(Retryable):
    """A dependency does not answer (the records, the blob store, NATS, a model): nothing is
    wrong with what was asked, so a message waits for it on a longer schedule of its own."""


class Permanent(SkillpressError):
    """Trying again cannot help; the message says what is wrong."""

    problem = "refused"
    status = 422


class NotFound(Permanent):
    """Something a request names does not exist (a skill, a version, a revision, a blob)."""

    problem = "not-found"
    status = 404


class Refused(Permanent):
    """A request that cannot be done as asked; the message says what to do instead."""

    problem = "refused"


class ChatFailed(Exception):
    """A chat model gave no usable answer (network, timeout, status, shape): a reason, no retry.
    Shared by the derivation's model grouping, the runtime's model runs and the platform's
    client, none of which imports another."""
