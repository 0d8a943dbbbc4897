"""Who may publish and subscribe to what on the message bus: one NATS user per role, each with
allow lists (NATS authorization), so no credential but an operator's face can send a command
that publishes, and none but the publish stage's and the operator's can write a live pointer.

- `operator`: the faces an operator uses (`serve`/`up`'s API and console, the command line's
  pipeline commands, `reconcile`, `streams`, a dead letter's replay): everything.
- `stage`: the pipeline's stages before publishing (fetch, parse, categorize, guess-approvals,
  render, refresh): its own events, consuming, and asking for a refresh (which only proposes).
- `publisher`: the publish stage: consuming its command, `version.published`, and the live
  pointers (`$KV.SKILLPRESS_LIVE.*`).
- `follower`: `skillpress follow` over NATS: reading and watching the live pointers, nothing else.
- `runtime`: a process that calls skills (`call`, `run`, `mcp`, a host): announcing an approval
  request, nothing else.

The embedded nats-server is configured from this table (`authorization`); a production NATS is
given the same (README, `infra/nats/permissions.conf`, held equal to this by a test). Standard
library only, and no skillpress import but the subjects: the server's configuration is text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from skillpress.schemas.subjects import COMMANDS, EVENTS, STREAM

__all__ = [
    "EXHAUSTED_STREAM",
    "LIVE_BUCKET",
    "ROLES",
    "WORKER_ROLE",
    "authorization",
    "password_variable",
    "permissions",
    "production_config",
    "role_of_worker",
    "user_of",
]

LIVE_BUCKET = "SKILLPRESS_LIVE"
EXHAUSTED_STREAM = f"{STREAM}_EXHAUSTED"
_KV = f"KV_{LIVE_BUCKET}"
ROLES = ("operator", "stage", "publisher", "follower", "runtime")
# the role a worker runs as, by its name (every other worker is a `stage`)
WORKER_ROLE = {"publish": "publisher"}


def role_of_worker(name: str) -> str:
    return WORKER_ROLE.get(name, "stage")


def user_of(role: str) -> str:
    """The NATS user a role is (the operator's keeps the name an earlier release gave its one
    user, so a running `up`'s URL still works)."""
    return "skillpress" if role == "operator" else f"skillpress-{role}"


def _consuming(stream: str) -> list[str]:
    """What a durable pull consumer of `stream` asks of JetStream: the stream's info, its
    consumer made or found, its next messages, and each message's ack."""
    return [
        f"$JS.API.STREAM.INFO.{stream}",
        f"$JS.API.CONSUMER.CREATE.{stream}",
        f"$JS.API.CONSUMER.CREATE.{stream}.>",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.>",
        f"$JS.API.CONSUMER.INFO.{stream}.>",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.>",
        f"$JS.ACK.{stream}.>",
    ]


def _keeping(stream: str) -> list[str]:
    """Making a stream where it is missing and bringing its subjects up to date."""
    return [f"$JS.API.STREAM.CREATE.{stream}", f"$JS.API.STREAM.UPDATE.{stream}"]


def _reading(stream: str) -> list[str]:
    """Reading one message of `stream` by its sequence or its subject."""
    return [
        f"$JS.API.STREAM.MSG.GET.{stream}",
        f"$JS.API.DIRECT.GET.{stream}",
        f"$JS.API.DIRECT.GET.{stream}.>",
    ]


_WATCHING_LIVE = [
    f"$JS.API.STREAM.INFO.{_KV}",
    f"$JS.API.CONSUMER.CREATE.{_KV}",
    f"$JS.API.CONSUMER.CREATE.{_KV}.>",
    f"$JS.API.CONSUMER.DELETE.{_KV}.>",
    f"$JS.API.CONSUMER.INFO.{_KV}.>",
    f"$JS.FC.{_KV}.>",  # a push consumer's flow control, answered
    *_reading(_KV),
]
_EVERY_CLIENT = ["$JS.API.INFO"]
_WORKER = [
    *_EVERY_CLIENT,
    "$JS.API.STREAM.NAMES",
    *_consuming(STREAM),
    *_consuming(EXHAUSTED_STREAM),
    *_keeping(STREAM),
    *_keeping(EXHAUSTED_STREAM),
    *_reading(STREAM),
    COMMANDS.refresh_sources,  # the refresh schedule asks; a refresh only ever proposes
]
_STAGE_EVENTS = [
    EVENTS.spec_submitted,  # a refresh submits a source's spec again
    EVENTS.revision_stored,
    EVENTS.revision_unchanged,
    EVENTS.revision_parsed,
    EVENTS.revision_rejected,
    EVENTS.revision_categorized,
    EVENTS.suggestions_made,
    EVENTS.version_proposed,
]

_PUBLISH: dict[str, list[str]] = {
    "operator": [">"],
    "stage": [*_WORKER, *_STAGE_EVENTS],
    "publisher": [
        *_WORKER,
        EVENTS.version_published,
        f"$KV.{LIVE_BUCKET}.>",
        *_keeping(_KV),
        *_WATCHING_LIVE,
    ],
    "follower": [*_EVERY_CLIENT, *_WATCHING_LIVE],
    "runtime": [*_EVERY_CLIENT, EVENTS.approval_requested],
}
_SUBSCRIBE: dict[str, list[str]] = {
    "operator": [">"],
    "stage": ["_INBOX.>"],
    "publisher": ["_INBOX.>"],
    "follower": ["_INBOX.>"],
    "runtime": ["_INBOX.>"],
}


def permissions(role: str) -> dict[str, dict[str, list[str]]]:
    """The role's NATS permissions: what it may publish to and subscribe to (nothing else)."""
    if role not in ROLES:
        raise ValueError(f"no NATS role {role!r}: one of {', '.join(ROLES)}")
    return {"publish": {"allow": _PUBLISH[role]}, "subscribe": {"allow": _SUBSCRIBE[role]}}


def authorization(passwords: Mapping[str, str]) -> str:
    """A nats-server `authorization` block: one user per role given a password, with the role's
    permissions."""
    users = [
        {"user": user_of(role), "password": passwords[role], "permissions": permissions(role)}
        for role in ROLES
        if role in passwords
    ]
    return (
        "authorization {\n  users: " + json.dumps(users, indent=2).replace("\n", "\n  ") + "\n}\n"
    )


def password_variable(role: str) -> str:
    """The environment variable a production NATS reads `role`'s password from."""
    return f"SKILLPRESS_NATS_{role.upper()}_PASSWORD"


def production_config() -> str:
    """`infra/nats/permissions.conf`: the same users for a NATS skillpress does not start, each
    password read by the server from its environment (`password_variable`)."""
    marks = {role: f"@@{role}@@" for role in ROLES}
    text = authorization(marks)
    for role, mark in marks.items():
        text = text.replace(json.dumps(mark), "$" + password_variable(role))
    return (
        "# skillpress's NATS users, one per role, each with what it may publish and subscribe to\n"
        "# (written from skillpress/services/platform/nats_roles.py by `just nats-permissions`; a\n"
        "# test keeps the two equal). Include it in the server's configuration and set each\n"
        "# SKILLPRESS_NATS_<ROLE>_PASSWORD in the server's environment; give each skillpress\n"
        "# process its role's user (SKILLPRESS_NATS_USER) and password.\n" + text
    )


if __name__ == "__main__":  # `just nats-permissions`
    import sys

    out = sys.argv[1] if len(sys.argv) > 1 else "infra/nats/permissions.conf"
    with open(out, "w") as f:
        f.write(production_config())
    print(f"wrote {out}")
