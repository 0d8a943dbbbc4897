"""What an operator decides and watches from the command line: approvals (approve, deny), action
items, dead letters and the pipeline's streams."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from skillpress.cli.common import (
    AsJson,
    failures,
    listing,
    open_ctx,
)

__all__ = ["register"]


def approvals(
    everything: Annotated[bool, typer.Option("--all", help="decided requests too")] = False,
    as_json: AsJson = False,
) -> None:
    """Calls to gated operations waiting for a person (oldest first), with the values they bind."""
    from skillpress.app.records.approval_requests import list_requests

    listing(
        list_requests(open_ctx(), everything),
        as_json,
        "no approval requests" if everything else "no call is waiting for approval",
        lambda r: (
            f"#{r['id']} {r['created_at'][:19]} {r['skill']} {r['operation']} (risk {r['risk']})"
            f" {json.dumps(r['bound'], ensure_ascii=False, sort_keys=True)}: {r['status']}"
            + (f" by {r['decided_by']}" if r["decided_by"] else "")
            + (f" (expires {r['expires_at'][:19]})" if r["expires_at"] else "")
        ),
    )


def _decide(request_id: int, grant: bool) -> None:
    import os

    from skillpress.app.base.roles import OPERATOR_TOKEN_ENV, operator_for
    from skillpress.app.records.approval_requests import decide

    ctx = open_ctx()
    with failures():
        who = operator_for(ctx.settings, os.environ.get(OPERATOR_TOKEN_ENV))
        row = decide(ctx, request_id, grant, who)
    typer.echo(
        f"{row.status} #{row.id}: {row.skill} {row.operation} {row.bound_json} (by {row.decided_by})"
    )


def approve(
    request_id: Annotated[int, typer.Argument(help="the request's number (skillpress approvals)")],
) -> None:
    """Grant a waiting call: exactly that call (its bound values) goes through, once. An
    operator's decision: SKILLPRESS_OPERATOR_TOKEN holds your token, and the grant is recorded
    under your name."""
    _decide(request_id, True)


def deny(
    request_id: Annotated[int, typer.Argument(help="the request's number (skillpress approvals)")],
) -> None:
    """Refuse a waiting call: it is not sent (an operator's decision, as for approve)."""
    _decide(request_id, False)


def actions(
    as_json: AsJson = False,
    resolve: Annotated[
        int | None, typer.Option("--resolve", help="mark action item ID handled")
    ] = None,
) -> None:
    """Open action items: proposals a scheduled refresh made, waiting for a person."""
    from skillpress.app.records.overview import open_actions, resolve_action

    if resolve is not None:
        with failures():
            done = resolve_action(open_ctx(), resolve)
        typer.echo(json.dumps(done) if as_json else f"action item #{resolve} resolved")
        return
    listing(
        open_actions(open_ctx()),
        as_json,
        "no open action items",
        lambda a: f"#{a['id']} {a['created_at'][:19]} {a['kind']}: {a['message']}",
    )


def streams(
    replicas: Annotated[
        int | None,
        typer.Option(
            "--replicas",
            help="change every stream and the live bucket to this many copies (1 on one server, 3 on a 3-node cluster)",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """The JetStream streams and how many copies each keeps. Clients never change an existing
    stream's copies (one started without SKILLPRESS_STREAM_REPLICAS warns instead); this does."""
    from dataclasses import asdict

    from skillpress.app.base.streams import stream_replicas

    ctx = open_ctx()
    with failures():
        states = stream_replicas(ctx, replicas)
    listing(
        [asdict(s) for s in states],
        as_json,
        "no streams yet",
        lambda s: (
            f"{s['name']}: {s['replicas']} replica{'s' if s['replicas'] != 1 else ''}"
            + (f" on {', '.join(s['nodes'])}" if s["nodes"] else "")
            + f", {s['messages']} messages"
        ),
    )


def dead_letters(
    as_json: AsJson = False,
    replay: Annotated[
        list[int] | None,
        typer.Option(
            "--replay", help="re-publish this dead letter's message (repeat for more), recorded"
        ),
    ] = None,
    replay_all: Annotated[
        bool, typer.Option("--replay-all", help="re-publish every dead letter not yet replayed")
    ] = False,
) -> None:
    """Messages no worker could handle, with their error; --replay sends one again once its
    cause is fixed (a fresh message id, so JetStream does not take it for a duplicate)."""
    from skillpress.app.records.overview import dead_letters as listed

    ctx = open_ctx()
    if replay or replay_all:
        from skillpress.app.operator.dispatch import replay_dead_letters

        with failures():
            done = replay_dead_letters(ctx, None if replay_all else list(replay or []))
        listing(
            done,
            as_json,
            "nothing to replay",
            lambda d: f"replayed #{d['id']} on {d['subject']} as {d['replayed_as']}",
        )
        return
    listing(
        listed(ctx),
        as_json,
        "no dead letters",
        lambda d: (
            f"#{d['id']} {d['created_at'][:19]} {d['worker']} on {d['subject']}"
            + (f" skill {d['skill']}" if d["skill"] else "")
            + (f" submission {d['submission']}" if d["submission"] else "")
            + (f" (replayed {d['replayed_at'][:19]})" if d["replayed_at"] else "")
            + f": {d['error'].splitlines()[0][:300]}"
        ),
    )


def register(app: typer.Typer) -> None:
    app.command()(approvals)
    app.command()(approve)
    app.command()(deny)
    app.command()(actions)
    app.command("dead-letters")(dead_letters)
    app.command()(streams)
