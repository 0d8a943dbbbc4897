"""`skillpress review`: the approval and identity suggestions walked, confirmed or dismissed,
in a terminal or by a script; what is confirmed proposes one version (`annotation_commands`)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from skillpress.cli.annotation_commands import propose, report
from skillpress.cli.common import AsJson, By, Timeout, failures, open_ctx

__all__ = ["register", "review"]


def review(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    accept_group: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-group", help="confirm a whole group: money, deletes, changes, reads"
        ),
    ] = None,
    confirm_ids: Annotated[
        list[str] | None,
        typer.Option("--confirm", help="confirm this suggestion (its id; repeat for more)"),
    ] = None,
    dismiss_ids: Annotated[
        list[str] | None,
        typer.Option(
            "--dismiss", help="dismiss this suggestion: decided, never offered again (repeat)"
        ),
    ] = None,
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Walk the approval and identity suggestions: money, deletes, changes, then reads; each
    confirmation becomes an annotation. Without a terminal: `--json` lists them, `--confirm ID`,
    `--dismiss ID` and `--accept-group GROUP` decide them."""
    # size: a typer command: its options are its signature, its body one decision batch
    from skillpress.app.operator.annotations import Stored
    from skillpress.app.operator.review import (
        confirm,
        confirm_suggestions,
        dismiss_suggestions,
        open_suggestions,
    )
    from skillpress.app.records.versions import find_skill
    from skillpress.errors import Refused

    groups = accept_group or []
    ids = confirm_ids or []
    deciding = bool(groups or ids or dismiss_ids)
    interactive = not deciding and not as_json and sys.stdin.isatty()
    ctx = open_ctx()
    confirmed: list[str] = []
    skipped: list[str] = []
    with failures():
        skill = find_skill(ctx, slug)
        if not deciding and not interactive:  # a script asks what is open
            listed = [
                {
                    "id": p.id,
                    "group": p.group,
                    "operation": p.operation,
                    "kind": p.kind,
                    "annotation": p.annotation,
                    "why": p.why,
                    "bindable": p.confirmable,  # the API's word for it
                }
                for p in open_suggestions(ctx, skill)
            ]
            ctx.close()
            if as_json:
                typer.echo(json.dumps(listed, indent=2))
                return
            for row in listed:
                typer.echo(
                    f"{row['id']}  [{row['group']}] {row['operation']} {row['kind']}"
                    f" {json.dumps(row['annotation'])} — {row['why']}"
                )
            typer.echo(
                f"{len(listed)} open; decide with --confirm ID, --dismiss ID or --accept-group GROUP",
                err=True,
            )
            return
        if dismiss_ids:
            gone = dismiss_suggestions(ctx, skill, ids=dismiss_ids, by=by)
            if not as_json:
                typer.echo(f"  dismissed {gone}")
        if groups or ids:
            done = confirm_suggestions(ctx, skill, ids=ids, groups=groups, by=by)
            confirmed = done.annotation_ids
            skipped = [f"{x['operation']}: {x['reason']}" for x in done.skipped]
            remaining = done.remaining
            if not as_json:
                typer.echo(f"  confirmed {len(confirmed)}")
        else:
            pending = [] if deciding else open_suggestions(ctx, skill)
            remaining = len(open_suggestions(ctx, skill)) if deciding else len(pending)
    for sug in [] if deciding else pending:
        answer = typer.prompt(
            f"[{sug.group}] {sug.operation} {sug.kind} {json.dumps(sug.annotation)} — ({sug.why}) confirm? [y/n/q]",
            default="y",
        )
        if answer.lower().startswith("q"):
            break
        if not answer.lower().startswith("y"):
            continue
        try:
            aid = confirm(ctx, skill, sug, by)
        except Refused as exc:
            skipped.append(f"{sug.operation}: {exc}")
            continue
        confirmed.append(aid)
        remaining -= 1
        if not as_json:
            typer.echo(
                f"  confirmed {sug.operation} {sug.kind} → annotation {aid} ({remaining} suggestion(s) left)"
            )
    if not as_json:
        for line in skipped:
            typer.echo(f"  skipped {line}", err=True)
    if not confirmed:
        ctx.close()
        if as_json:
            typer.echo(
                json.dumps({"confirmed": [], "skipped": skipped, "remaining": remaining}, indent=2)
            )
        else:
            typer.echo("nothing confirmed")
        return
    proposal = propose(ctx, Stored(confirmed, skill, ctx.clock()), "reviewed", timeout)
    report(
        proposal,
        as_json,
        f"confirmed {len(confirmed)} suggestion(s), {remaining} left",
        {"confirmed": confirmed, "skipped": skipped, "remaining": remaining},
    )


def register(app: typer.Typer) -> None:
    app.command()(review)
