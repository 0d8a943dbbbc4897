"""The pipeline from the command line: import, versions, show, diff, publish, actions, dead-letters, worker."""
# size: one typer command per pipeline verb; each command's options are its signature

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from skillpress.cli.common import (
    AsJson,
    Progress,
    Timeout,
    fail,
    failures,
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


def versions(
    slug: Annotated[str, typer.Argument(help="the skill's slug")], as_json: AsJson = False
) -> None:
    """A skill's versions, newest first, with what each changed and which is live."""
    from skillpress.app.base.views import VersionRow
    from skillpress.cli.remote import through_api

    out = through_api(lambda api: api.get(f"/skills/{slug}/versions", list[VersionRow]))
    if out is None:
        from skillpress.app.records.versions import list_versions

        with failures():
            out = list_versions(open_ctx(), slug)
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    if not out:
        typer.echo(f"{slug} has no versions yet")
    for v in out:
        d = v["diff"]
        mark = "* live" if v["live"] else f"  {v['status']}"
        typer.echo(
            f"{v['version_id'][:12]}  {mark:<12} {v['created_at'][:19]}  +{d.get('added', 0)} -{d.get('removed', 0)} ~{d.get('changed', 0)}"
            + (f"  {d['workflows']} workflow change(s)" if d.get("workflows") else "")
        )


def show(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    file: Annotated[
        str | None, typer.Argument(help="a file of the version (default: list them)")
    ] = None,
    version: Annotated[
        str | None,
        typer.Option("--version", help="a version id or prefix (default: live, else newest)"),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """A version's files, or one file's content."""
    from skillpress.app.base.views import VersionView
    from skillpress.cli.remote import Remote, through_api

    def remotely(api: Remote) -> tuple[Mapping[str, Any], Callable[[str], bytes]]:
        view = api.get(f"/skills/{slug}/versions/{version or 'current'}", VersionView)
        path = f"/skills/{slug}/versions/{view['version_id']}/files/"
        return view, lambda name: api.request("GET", path + name)

    found = through_api(remotely)
    if found is None:
        from skillpress.app.records.versions import version_file, version_view

        ctx = open_ctx()
        with failures():
            local: Mapping[str, Any] = version_view(ctx, slug, version or "current")
        found = local, lambda name: version_file(ctx, slug, local["version_id"], name)
    view, read = found
    version_id, keys = str(view["version_id"]), dict(view["files"])
    if file is None:
        if as_json:
            typer.echo(
                json.dumps(
                    {"version_id": version_id, "status": view["status"], "files": keys}, indent=2
                )
            )
        else:
            state = "live" if view["live"] else view["status"]
            typer.echo(f"{slug} version {version_id[:12]} ({state}), {len(keys)} files:")
            for path in keys:
                typer.echo(f"  {path}")
        return
    if file not in keys:
        fail(f"version {version_id[:12]} has no file {file!r} (skillpress show {slug} lists them)")
    content = read(file)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "version_id": version_id,
                    "file": file,
                    "content": content.decode("utf-8", "replace"),
                }
            )
        )
    else:
        typer.echo(content.decode("utf-8", "replace"), nl=False)


def diff(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    a: Annotated[str | None, typer.Argument(help="from (default: the live version)")] = None,
    b: Annotated[str | None, typer.Argument(help="to (default: the newest version)")] = None,
    as_json: AsJson = False,
) -> None:
    """What changed between two versions: operations added, removed, and whose call changed."""
    from skillpress.app.base.views import VersionDiff
    from skillpress.cli.remote import through_api

    ends = {k: v for k, v in (("from", a), ("to", b)) if v is not None}
    result = through_api(lambda api: api.get(f"/skills/{slug}/diff", VersionDiff, **ends))
    if result is None:
        from skillpress.app.records.versions import diff_versions

        with failures():
            result = diff_versions(open_ctx(), slug, a, b)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    _changes(result, slug)


def _proposals(result: Mapping[str, Any]) -> None:
    """When a diff spans several proposals: each, why it was made, and what it brings."""
    proposals = result.get("proposals") or []
    if len(proposals) < 2:
        return
    came: Mapping[str, str] = result.get("came_from") or {}
    typer.echo(f"  from {len(proposals)} proposals (publishing puts live what each made):")
    for p in proposals:
        brings = sorted(n for n, v in came.items() if v == p["version_id"])
        this = " (this one)" if p["version_id"] == result["to"] else ""
        typer.echo(f"    {p['version_id'][:12]}{this}: {p['because']}")
        if brings:
            typer.echo(f"      brings: {', '.join(brings)}")


def _changes(result: Mapping[str, Any], slug: str | None = None) -> None:
    """A diff as lines: operations added, removed, changed (with what changed), orphans."""
    if slug is not None:
        typer.echo(
            f"{slug}: {result['from'][:12] if result['from'] else '(nothing live)'} → {result['to'][:12]}"
        )
    for name in result["added"]:
        typer.echo(f"  + {name}")
    for name in result["removed"]:
        typer.echo(f"  - {name}")
    for ch in result["changed"]:
        typer.echo(
            f"  ~ {ch['operation']}: {', '.join(ch['what'])}"
            + (f" ({ch['before']} → {ch['after']})" if ch["before"] != ch["after"] else "")
        )
        for detail in ch.get("details") or []:
            typer.echo(f"      {detail}")
    for flow in result.get("workflows") or []:
        typer.echo(f"  {flow[0]} workflow {flow[2:]}")
    s_ = result["summary"]
    described = result.get("described") or []
    if described:  # a note, a description: live once published, though no call changes
        more = s_.get("described", len(described)) - len(described)
        typer.echo(
            f"  described anew: {', '.join(described)}" + (f" … and {more} more" if more else "")
        )
    if result.get("other_files"):
        typer.echo(f"  also changes: {', '.join(result['other_files'])}")
    typer.echo(
        f"  {s_['added']} added, {s_['removed']} removed, {s_['changed']} changed"
        + (f", {s_['described']} described anew" if s_.get("described") else "")
        + f"; {s_['files_changed']} files differ"
    )
    _proposals(result)
    for orphan in result["orphaned"]:
        offer = (
            f"; its method and path are now {orphan['rekey_to']}: skillpress rekey {orphan['id']} {orphan['rekey_to']}"
            if orphan.get("rekey_to")
            else ""
        )
        typer.echo(
            f"  ! annotation {orphan['id']} ({orphan['kind']}) is orphaned: {orphan['operation']} is gone{offer}"
        )


def publish(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    version: Annotated[str, typer.Argument(help="a version id or prefix")],
    remove_gates: Annotated[
        bool, typer.Option("--remove-gates", help="allow dropping gates the live version has")
    ] = False,
    as_json: AsJson = False,
    timeout: Timeout = 60.0,
) -> None:
    """Make a version live: the one version agents read, announced on version.published."""
    from skillpress.app.base.views import PublicationView
    from skillpress.cli.remote import through_api

    asked = {"remove_gates": remove_gates, "timeout": min(timeout, 600.0)}
    event = through_api(
        lambda api: api.post(
            f"/skills/{slug}/versions/{version}/publish", asked, PublicationView, wait=timeout
        )
    )
    if event is None:
        from skillpress.app.operator.changes import publish as published

        ctx = open_ctx()
        try:
            with failures():
                event = published(ctx, slug, version, remove_gates, timeout, "cli")
        finally:
            ctx.close()
    version_id = str(event["version_id"])
    if as_json:
        typer.echo(json.dumps(event, indent=2))
    else:
        prev = event.get("previous_version_id")
        typer.echo(
            f"published {slug} version {version_id[:12]}"
            + (
                " (live already: its live pointer written again)"
                if event.get("already_live")
                else (f" (replacing {prev[:12]})" if prev else "")
            )
            + f": {len(event['files'])} files, hosts {', '.join(event['hosts']) or '(none)'}"
        )
        if event.get("changes"):
            _changes(event["changes"])


def revisions(
    slug: Annotated[str, typer.Argument(help="the skill's slug")], as_json: AsJson = False
) -> None:
    """A skill's revisions, newest first: when, from where, parsed or refused, what each made."""
    from skillpress.app.records.overview import revisions as listed

    with failures():
        rows = listed(open_ctx(), slug)
    _listing(
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


def approvals(
    everything: Annotated[bool, typer.Option("--all", help="decided requests too")] = False,
    as_json: AsJson = False,
) -> None:
    """Calls to gated operations waiting for a person (oldest first), with the values they bind."""
    from skillpress.app.records.approval_requests import list_requests

    _listing(
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
    _listing(
        open_actions(open_ctx()),
        as_json,
        "no open action items",
        lambda a: f"#{a['id']} {a['created_at'][:19]} {a['kind']}: {a['message']}",
    )


def _listing(
    rows: Sequence[Mapping[str, Any]],
    as_json: bool,
    empty: str,
    line: Callable[[Mapping[str, Any]], str],
) -> None:
    """A list as JSON, or a line per row (`empty` when there is none)."""
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo(empty)
    for row in rows:
        typer.echo(line(row))


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
    _listing(
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
        _listing(
            done,
            as_json,
            "nothing to replay",
            lambda d: f"replayed #{d['id']} on {d['subject']} as {d['replayed_as']}",
        )
        return
    _listing(
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
    from skillpress.app.serving.followers import ApiFollower, follow_api, follow_live

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
                follower.close()
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
        asyncio.run(main())
    finally:
        ctx.close()


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
    app.command()(versions)
    app.command()(show)
    app.command()(diff)
    app.command()(publish)
    app.command()(revisions)
    app.command()(status)
    app.command()(follow)
    app.command()(approvals)
    app.command()(approve)
    app.command()(deny)
    app.command()(actions)
    app.command("dead-letters")(dead_letters)
    app.command()(streams)
    app.command()(worker)
    app.command()(refresh)
