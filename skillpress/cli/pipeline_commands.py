"""The pipeline from the command line: import, revisions, status, follow, worker, refresh (a
skill's versions are `version_commands`, what an operator decides and watches
`operations_commands`); `register` adds them all in the order `skillpress --help` lists them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from skillpress.cli import operations_commands, version_commands
from skillpress.cli.common import (
    AsJson,
    Progress,
    Timeout,
    fail,
    failures,
    listing,
    open_ctx,
    settings,
)

__all__ = ["register"]


def import_(
    spec: Annotated[
        str,
        typer.Argument(
            metavar="SPEC_OR_URL",
            help="a file path, or an http(s) URL to fetch (GET, no redirects)",
        ),
    ],
    skill: Annotated[str, typer.Option("--skill", help="the skill's slug")],
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="where the API lives, when the spec does not say"),
    ] = None,
    credential_env: Annotated[
        str | None,
        typer.Option(
            "--credential-env",
            help="the environment variable the skill's credential is read from (kept with the skill; default <SLUG>_API_KEY)",
        ),
    ] = None,
    as_json: AsJson = False,
    timeout: Timeout = 300.0,
) -> None:
    """Submit a spec and follow it through the pipeline to a proposed version (or its refusal)."""
    # size: a typer command: its options are its signature
    from skillpress.app.operator.intake import check_slug
    from skillpress.app.operator.offline import read_spec_file
    from skillpress.app.operator.submissions import submit_spec
    from skillpress.errors import Retryable
    from skillpress.schemas.subjects import EVENTS

    with failures():
        slug = check_slug(skill, named="--skill") or ""
    ctx = open_ctx()
    is_url = spec.startswith(("http://", "https://"))
    shown = Progress(not as_json)
    submission = uuid.uuid4().hex

    def accepted(submission: str) -> None:
        if not as_json:  # the id to look for (skillpress status) whatever happens next
            typer.echo(f"submission {submission} ({slug})", err=True)

    try:
        with failures():
            data = None if is_url else read_spec_file(Path(spec), ctx.settings.max_spec_bytes)
            try:
                _, mine = submit_spec(
                    ctx,
                    slug,
                    data,
                    spec if is_url else None,
                    base_url,
                    timeout,
                    shown.on_event,
                    submission=submission,
                    credential_env=credential_env,
                    on_accepted=accepted,
                )
            except Retryable as exc:  # no ending seen (no answer, a dead letter, a store down)
                if as_json:
                    typer.echo(
                        json.dumps({"submission": submission, "outcome": None, "error": str(exc)})
                    )
                fail(f"{exc} (submission {submission}: skillpress status {submission})", 1)
    finally:
        shown.stop()
        ctx.close()
    last_subject, last = mine[-1].subject, mine[-1].body
    outcome = last_subject.rsplit(".", 1)[-1]
    same = last_subject == EVENTS.version_proposed and last.get("created") is False
    if same:  # a revision of its own whose version is one already stored: nothing new was made
        outcome = "unchanged"
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "submission": submission,
                    "outcome": outcome,
                    "events": [{"subject": e.subject, **e.body} for e in mine],
                },
                indent=2,
                sort_keys=True,
            )
        )
    if last_subject == EVENTS.revision_rejected:
        if not as_json:
            typer.echo(f"error: refused: {last['reason']}", err=True)
        raise typer.Exit(2)
    if as_json:
        return
    if last_subject == EVENTS.revision_unchanged:
        typer.echo(
            f"unchanged: {slug} already has revision {last['revision_id'][:12]} of these bytes; nothing new was made"
        )
        return
    if same:
        typer.echo(
            f"unchanged: {slug} already has version {last['version_id'][:12]}, which this spec"
            " derives to; nothing new was made"
        )
        return
    typer.echo(
        f"proposed {slug} version {last['version_id'][:12]}; it is not live until published:"
    )
    typer.echo(
        f"  skillpress diff {slug}        skillpress show {slug} --version {last['version_id'][:12]}"
    )
    typer.echo(f"  skillpress publish {slug} {last['version_id'][:12]}")


def revisions(
    slug: Annotated[str, typer.Argument(help="the skill's slug")], as_json: AsJson = False
) -> None:
    """A skill's revisions, newest first: when, from where, parsed or refused, what each made."""
    from skillpress.app.records.overview import revisions as listed

    with failures():
        rows = listed(open_ctx(), slug)
    listing(
        rows,
        as_json,
        f"{slug} has no revisions yet",
        lambda r: (
            f"{r['revision_id'][:12]} {r['fetched_at'][:19]} from {r['from']}: "
            + (
                f"refused: {r['refusal_reason']}"
                if r["status"] == "refused"
                else f"{r['status']}, {r['operations'] or 0} operations"
            )
            + (f"; versions {', '.join(v[:12] for v in r['versions'])}" if r["versions"] else "")
        ),
    )


def status(
    submission: Annotated[str, typer.Argument(help="a submission id (import prints it)")],
    as_json: AsJson = False,
) -> None:
    """Where a submission is now, stage by stage (and any dead letter it left)."""
    from skillpress.app.records.overview import submission_status

    with failures():
        found = submission_status(open_ctx(), submission)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    for stage in found["stages"]:
        detail = ", ".join(f"{k} {v}" for k, v in stage.items() if k != "stage" and v is not None)
        typer.echo(f"  ✓ {stage['stage']}" + (f": {detail}" if detail else ""))
    for d in found["dead_letters"]:
        if d["replayed_at"]:
            typer.echo(
                f"  ↻ dead letter #{d['id']} ({d['worker']}) replayed {d['replayed_at'][:19]}:"
                f" {d['error'][:200]}"
            )
        else:
            typer.echo(f"  ✗ dead letter #{d['id']} ({d['worker']}): {d['error'][:200]}")


def follow(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="where DIR/<slug> is kept live")],
    skill: Annotated[
        list[str] | None, typer.Option("--skill", help="only this skill (repeat for more)")
    ] = None,
    format: Annotated[
        str, typer.Option("--format", help="package | agent-skills (an Agent Skills folder)")
    ] = "package",
    pin: Annotated[
        list[str] | None, typer.Option("--pin", help="SLUG=VERSION: hold this skill at a version")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="catch up, then stop")] = False,
    api: Annotated[
        str | None,
        typer.Option(
            "--api",
            help="follow over a skillpress HTTP API (http://host:8787) instead of NATS and the store",
        ),
    ] = None,
    token_env: Annotated[
        str,
        typer.Option(
            "--token-env",
            help="with --api: the variable holding a runtime token (reading live versions is all it can do)",
        ),
    ] = "SKILLPRESS_RUNTIME_TOKEN",
    interval: Annotated[
        float, typer.Option("--interval", help="with --api: seconds between looks")
    ] = 2.0,
) -> None:
    """Keep DIR/<slug> equal to each skill's live version: catch up on start, then follow
    publications; each swap is atomic (a reader sees the old version or the new, never a mix)."""
    # size: a typer command: its options are its signature
    import asyncio
    import os
    import signal

    from skillpress.app.base.bus import running_up
    from skillpress.app.serving.api_follower import ApiFollower, follow_api
    from skillpress.app.serving.followers import follow_live

    pins = {}
    for item in pin or []:
        slug, sep, ref = item.partition("=")
        if not sep or not slug or not ref:
            fail(f"--pin {item!r}: write SLUG=VERSION")
        pins[slug] = ref
    token = os.environ.get(token_env, "") if api else ""
    if api and not token:
        fail(
            f"--api needs a runtime token in ${token_env}: an operator makes one for this"
            " follower (a runtime's token reads live versions and decides nothing)"
        )
    ctx = None if api else open_ctx()
    url = None if ctx is None else (ctx.settings.nats_url or running_up(ctx.settings, "follower"))
    if ctx is not None and not url:
        fail(
            "no NATS: set SKILLPRESS_NATS_URL, or start `skillpress up` first (or follow --api URL)"
        )

    def swapped(live: Any) -> None:
        typer.echo(
            f"{live.skill}: live version {live.version_id[:12]} → {folder / live.skill}", err=True
        )

    missing: list[str] = []

    def refused(line: str) -> None:
        typer.echo(line, err=True)

    def lost(slug: str, version_id: str) -> None:
        missing.append(slug)
        typer.echo(
            f"{slug}: the records say version {version_id[:12]} is live, but NATS has no live"
            " pointer for it (restored from an older backup?): run `skillpress reconcile`",
            err=True,
        )

    async def main() -> None:
        stop = None if once else asyncio.Event()
        if stop is not None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        wanted = set(skill) if skill else None
        if api:
            follower = ApiFollower(api, token)
            try:
                await follow_api(follower, folder, wanted, format, pins, stop, swapped, interval)
            finally:
                await follower.aclose()
            return
        assert ctx is not None and url is not None
        await follow_live(ctx, url, folder, wanted, format, pins, stop, swapped, lost, refused)

    try:
        with failures():
            asyncio.run(main())
    finally:
        if ctx is not None:
            ctx.close()
    if missing and once:
        raise typer.Exit(1)


def refresh() -> None:
    """Ask for the scheduled re-fetch of URL sources now (once per refresh interval, however many
    ask: what a cron job runs)."""
    from skillpress.app.operator.dispatch import request_refresh

    ctx = open_ctx()
    try:
        with failures():
            msg_id = request_refresh(ctx)
    finally:
        ctx.close()
    typer.echo(f"asked for a refresh ({msg_id}; asked again in the same slot, it is sent once)")


def worker(
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="NAME...",
            help="fetch, parse, categorize, guess-approvals, render, publish, refresh, or all",
        ),
    ],
    schedule: Annotated[
        bool,
        typer.Option(
            "--schedule",
            help="also ask for a refresh every SKILLPRESS_REFRESH_INTERVAL seconds (once per slot across replicas)",
        ),
    ] = False,
) -> None:
    """Run workers against SKILLPRESS_NATS_URL (or a running `skillpress up`); start several to share work."""
    import asyncio
    import signal

    from skillpress.app.base.bus import running_up
    from skillpress.app.base.context import open_app
    from skillpress.platform.logging import configure_logging
    from skillpress.stack.workers import run_workers, worker_names

    chosen = settings()
    configure_logging(chosen.log_format, chosen.log_level)
    known = worker_names()
    if "all" in names:
        names = list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        fail(f"unknown worker {unknown[0]!r}: choose from {', '.join(known)}, or all")
    url = chosen.nats_url or running_up(chosen)
    if not url:
        fail("no NATS: set SKILLPRESS_NATS_URL, or start `skillpress up` first")
    with failures():
        ctx = open_app(chosen)

    def url_for(role: str) -> str:  # each role's user on a running `up` (nats_roles)
        return chosen.nats_url or running_up(chosen, role) or str(url)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run_workers(ctx, url_for, names, stop, schedule=schedule, wait_for_nats=True)

    try:
        with failures():  # a refusal to start (a taken probe port, …) in one line, no traceback
            asyncio.run(main())
    finally:
        ctx.close()


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
    app.command()(version_commands.versions)
    app.command()(version_commands.show)
    app.command()(version_commands.diff)
    app.command()(version_commands.publish)
    app.command()(revisions)
    app.command()(status)
    app.command()(follow)
    operations_commands.register(app)  # in the order `skillpress --help` lists them
    app.command()(worker)
    app.command()(refresh)
