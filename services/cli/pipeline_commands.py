"""The pipeline from the command line: import, versions, show, diff, publish, actions, dead-letters, worker."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from services.platform.settings import Settings

__all__ = ["register"]

AsJson = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
Timeout = Annotated[float, typer.Option("--timeout", help="seconds to wait for the pipeline")]
STAGES = ("submitted", "stored", "parsed", "categorized", "suggestions", "proposed")


def _fail(reason: str, code: int = 2) -> Any:
    from services.cli.main import fail

    return fail(reason, code)


def _quiet_logs(settings: Settings) -> None:
    from services.platform.logging import configure_logging

    configure_logging(
        settings.log_format, "warning" if settings.log_level == "info" else settings.log_level
    )


class _Progress:
    """Stage lines on stderr as the events arrive (a spinner on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.monotonic()
        self.status: Any = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status("submitted; waiting for the fetch worker…")
            self.status.start()

    def line(self, text: str, next_wait: str | None = None) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        if self.status is not None:
            self.status.console.print(f"  [green]✓[/green] {text} [dim]({elapsed:.2f} s)[/dim]")
            if next_wait:
                self.status.update(next_wait)
        else:
            typer.echo(f"  ✓ {text} ({elapsed:.2f} s)", err=True)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


def _describe(subject: str, body: dict[str, Any]) -> tuple[str, str | None]:
    if subject.endswith("revision.stored"):
        return (
            f"stored revision {body['revision_id'][:12]} (spec {body['spec_sha256'][:12]})",
            "parsing…",
        )
    if subject.endswith("revision.parsed"):
        return f"parsed: {body['operations']} operations", "categorizing and guessing approvals…"
    if subject.endswith("revision.categorized"):
        how = (
            "flat manifest"
            if body["categories"] == 0
            else f"{body['categories']} categories from {body['source']}"
        )
        why = (
            f" ({body['note']})"
            if body.get("note")
            else (f" (tags failed: {body['tag_failure']})" if body.get("tag_failure") else "")
        )
        return how + why, "rendering…"
    if subject.endswith("suggestions.made"):
        rules = f"{body['approvals']} approval rule{'' if body['approvals'] == 1 else 's'}"
        ids = f"{body['identities']} identit{'y' if body['identities'] == 1 else 'ies'}"
        return f"suggested {rules} and {ids} (for review; none applied)", None
    if subject.endswith("version.proposed"):
        s = body.get("summary", {})
        fresh = "" if body.get("created", True) else " (identical to a version already stored)"
        return (
            f"proposed version {body['version_id'][:12]}{fresh}: {s.get('added', 0)} added, {s.get('removed', 0)} removed,"
            f" {s.get('changed', 0)} changed"
        ), None
    return subject, None


async def _follow(
    pipeline: Any,
    subject: str,
    payload: Any,
    msg_id: str,
    done: Any,
    timeout: float,
    progress: _Progress | None = None,
    ours: Any = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Publish one message, then collect events until `done(subject, body)` says the story ended."""
    from schemas.subjects import STREAM
    from services.platform.broker import connect, ensure_stream

    nc = await connect(pipeline.nats_url, name="skillpress-cli")
    seen: list[tuple[str, dict[str, Any]]] = []
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    async def on_message(msg: Any) -> None:
        try:
            await queue.put((msg.subject, json.loads(msg.data)))
        except ValueError:
            pass

    try:
        await ensure_stream(nc)
        await nc.subscribe("skillpress.>", cb=on_message)
        await nc.flush()
        await nc.jetstream().publish(
            subject,
            payload.model_dump_json().encode(),
            headers={"Nats-Msg-Id": msg_id},
            stream=STREAM,
        )
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                where = {
                    "configured": f"workers on {pipeline.nats_url} (skillpress worker NAME)",
                    "up": "the running `skillpress up`",
                    "embedded": "the in-process workers",
                }[pipeline.mode]
                raise TimeoutError(
                    f"no answer from {where} within {timeout:g} s; see `skillpress dead-letters`"
                )
            try:
                subj, body = await asyncio.wait_for(queue.get(), timeout=left)
            except TimeoutError:
                continue
            seen.append((subj, body))
            if progress is not None and ours is not None and ours(body):
                text, nxt = _describe(subj, body)
                if text != subj:
                    progress.line(text, nxt)
            if done(subj, body):
                return seen
    finally:
        await nc.close()


def submit_and_follow(
    settings: Settings,
    slug: str,
    data: bytes | None,
    url: str | None,
    base_url: str | None,
    timeout: float,
    progress: bool = True,
    created_by: str = "cli",
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """Submit a spec (bytes or a URL) and follow its stages; (submission id, the events seen)."""
    from schemas.events import SpecSubmitted
    from schemas.subjects import EVENTS
    from services.cli.stack import Pipeline, with_pipeline

    submission = uuid.uuid4().hex

    def finished(subject: str, body: dict[str, Any]) -> bool:
        return body.get("submission") == submission and subject in (
            EVENTS["version_proposed"],
            EVENTS["revision_rejected"],
            EVENTS["revision_unchanged"],
        )

    async def work(pipeline: Pipeline) -> list[tuple[str, dict[str, Any]]]:
        blob = await asyncio.to_thread(pipeline.ctx.blobs.put, data) if data is not None else None
        event = SpecSubmitted(
            submission=submission,
            skill=slug,
            blob=blob,
            url=url,
            base_url=base_url,
            created_by=created_by,
        )
        shown = _Progress(progress)
        try:
            return await _follow(
                pipeline,
                EVENTS["spec_submitted"],
                event,
                f"submitted:{submission}",
                finished,
                timeout,
                shown,
                ours=lambda b: b.get("submission") == submission,
            )
        finally:
            shown.stop()

    return submission, with_pipeline(settings, work)


def publish_and_follow(
    settings: Settings,
    slug: str,
    version_id: str,
    remove_gates: bool,
    timeout: float,
    requested_by: str = "cli",
) -> dict[str, Any]:
    """Send the publish command and wait for its `version.published`."""
    from schemas.events import PublishVersion
    from schemas.subjects import COMMANDS, EVENTS
    from services.cli.stack import Pipeline, with_pipeline

    command = PublishVersion(
        skill=slug, version_id=version_id, remove_gates=remove_gates, requested_by=requested_by
    )

    async def work(pipeline: Pipeline) -> list[tuple[str, dict[str, Any]]]:
        return await _follow(
            pipeline,
            COMMANDS["publish_version"],
            command,
            f"publish:{version_id}:{uuid.uuid4().hex}",
            lambda subj, body: (
                subj == EVENTS["version_published"] and body.get("version_id") == version_id
            ),
            timeout,
        )

    return with_pipeline(settings, work)[-1][1]


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
    as_json: AsJson = False,
    timeout: Timeout = 300.0,
) -> None:
    """Submit a spec and follow it through the pipeline to a proposed version (or its refusal)."""
    from schemas.subjects import EVENTS
    from services.cli.stack import StackError
    from services.derive.naming import slugify

    settings = Settings()
    _quiet_logs(settings)
    slug = slugify(skill)
    if not slug or slug != skill:
        _fail(
            f"--skill {skill!r}: a slug is lowercase letters, digits and '-' (try {slug or 'my-api'!r})"
        )
    is_url = spec.startswith(("http://", "https://"))
    data = b""
    if not is_url:
        path = Path(spec)
        try:
            size = path.stat().st_size
            if size > settings.max_spec_bytes:
                _fail(
                    f"{spec} is {size:,} bytes, over the {settings.max_spec_bytes:,}-byte limit (SKILLPRESS_MAX_SPEC_BYTES)"
                )
            data = path.read_bytes()
        except OSError as exc:
            _fail(f"cannot read {spec}: {exc.strerror or exc}")
    try:
        submission, seen = submit_and_follow(
            settings,
            slug,
            data if not is_url else None,
            spec if is_url else None,
            base_url,
            timeout,
            progress=not as_json,
        )
    except (StackError, TimeoutError) as exc:
        _fail(str(exc), 1)
    mine = [(s, b) for s, b in seen if b.get("submission") == submission]
    last_subject, last = mine[-1]
    outcome = last_subject.rsplit(".", 1)[-1]
    if as_json:
        typer.echo(
            json.dumps(
                {"outcome": outcome, "events": [{"subject": s, **b} for s, b in mine]},
                indent=2,
                sort_keys=True,
            )
        )
    if last_subject == EVENTS["revision_rejected"]:
        if not as_json:
            typer.echo(f"error: refused: {last['reason']}", err=True)
        raise typer.Exit(2)
    if as_json:
        return
    if last_subject == EVENTS["revision_unchanged"]:
        typer.echo(
            f"unchanged: {slug} already has revision {last['revision_id'][:12]} of these bytes; nothing new was made"
        )
        return
    typer.echo(
        f"proposed {slug} version {last['version_id'][:12]}; it is not live until published:"
    )
    typer.echo(
        f"  skillpress diff {slug}        skillpress show {slug} --version {last['version_id'][:12]}"
    )
    typer.echo(f"  skillpress publish {slug} {last['version_id'][:12]}")


def _open(settings: Settings) -> Any:
    from services.workers.app import make_context

    _quiet_logs(settings)
    return make_context(settings)


def _skill(ctx: Any, slug: str) -> Any:
    from schemas.records import Skill
    from services.platform.ids import derived_id

    with ctx.records.session() as s:
        skill = s.get(Skill, derived_id("skill", slug))
        if skill is None:
            _fail(f"no skill {slug!r} (import one: skillpress import SPEC --skill {slug})")
        s.expunge(skill)
    return skill


def versions(
    slug: Annotated[str, typer.Argument(help="the skill's slug")], as_json: AsJson = False
) -> None:
    """A skill's versions, newest first, with what each changed and which is live."""
    from sqlmodel import col, select

    from schemas.records import Version

    ctx = _open(Settings())
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        rows = s.exec(
            select(Version)
            .where(Version.skill_id == skill.id)
            .order_by(col(Version.created_at).desc())
        ).all()
        out = [
            {
                "version_id": v.id,
                "status": v.status,
                "live": v.id == skill.live_version_id,
                "revision_id": v.revision_id,
                "created_at": v.created_at.isoformat(),
                "diff": json.loads(v.diff_json).get("summary", {}),
                "base_version_id": v.base_version_id,
            }
            for v in rows
        ]
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
        )


def _pick(ctx: Any, skill: Any, ref: str | None) -> Any:
    """A version by reference; by default the live one, else the newest proposal."""

    from schemas.records import Version
    from services.workers.versions import PublishRefused, find_version, newest_version

    with ctx.records.session() as s:
        if ref:
            try:
                v = find_version(s, skill, ref)
            except PublishRefused as exc:
                _fail(str(exc))
        elif skill.live_version_id:
            v = s.get(Version, skill.live_version_id)
        else:
            v = newest_version(s, skill.id)
        if v is None:
            _fail(f"{skill.slug} has no versions yet")
        s.expunge(v)
    return v


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
    from services.workers.versions import version_files

    ctx = _open(Settings())
    skill = _skill(ctx, slug)
    v = _pick(ctx, skill, version)
    keys: dict[str, str] = json.loads(v.files_json)
    if file is None:
        if as_json:
            typer.echo(
                json.dumps({"version_id": v.id, "status": v.status, "files": keys}, indent=2)
            )
        else:
            typer.echo(
                f"{slug} version {v.id[:12]} ({'live' if v.id == skill.live_version_id else v.status}), {len(keys)} files:"
            )
            for path in keys:
                typer.echo(f"  {path}")
        return
    if file not in keys:
        _fail(f"version {v.id[:12]} has no file {file!r} (skillpress show {slug} lists them)")
    content = version_files(ctx.blobs, v)[file]
    if as_json:
        typer.echo(
            json.dumps(
                {"version_id": v.id, "file": file, "content": content.decode("utf-8", "replace")}
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

    from services.derive.diff import diff_packages
    from services.workers.versions import newest_version, version_files

    ctx = _open(Settings())
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        newest = newest_version(s, skill.id)
    to_v = _pick(ctx, skill, b) if b else newest
    if to_v is None:
        _fail(f"{slug} has no versions yet")
    from_v = (
        _pick(ctx, skill, a) if a else (_pick(ctx, skill, None) if skill.live_version_id else None)
    )
    result = diff_packages(
        version_files(ctx.blobs, from_v) if from_v else None, version_files(ctx.blobs, to_v)
    )
    result = {
        "from": from_v.id if from_v else None,
        "to": to_v.id,
        **result,
        "orphaned": json.loads(to_v.diff_json).get("orphaned", []),
    }
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    typer.echo(f"{slug}: {from_v.id[:12] if from_v else '(nothing live)'} → {to_v.id[:12]}")
    for name in result["added"]:
        typer.echo(f"  + {name}")
    for name in result["removed"]:
        typer.echo(f"  - {name}")
    for ch in result["changed"]:
        typer.echo(
            f"  ~ {ch['operation']}: {', '.join(ch['what'])}"
            + (f" ({ch['before']} → {ch['after']})" if ch["before"] != ch["after"] else "")
        )
    s_ = result["summary"]
    typer.echo(
        f"  {s_['added']} added, {s_['removed']} removed, {s_['changed']} changed; {s_['files_changed']} files differ"
    )
    for orphan in json.loads(to_v.diff_json).get("orphaned", []):
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
    from services.cli.stack import StackError
    from services.workers.versions import PublishRefused, check_publish, find_version

    settings = Settings()
    ctx = _open(settings)
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        try:
            v = find_version(s, skill, version)
            check_publish(s, ctx.blobs, skill, v, remove_gates)
        except PublishRefused as exc:
            _fail(str(exc))
        version_id = v.id
    ctx.records.close()
    try:
        event = publish_and_follow(settings, slug, version_id, remove_gates, timeout)
    except (StackError, TimeoutError) as exc:
        _fail(str(exc), 1)
    if as_json:
        typer.echo(json.dumps(event, indent=2))
    else:
        prev = event.get("previous_version_id")
        typer.echo(
            f"published {slug} version {version_id[:12]}"
            + (f" (replacing {prev[:12]})" if prev else "")
            + f": {len(event['files'])} files, hosts {', '.join(event['hosts']) or '(none)'}"
        )


def actions(as_json: AsJson = False) -> None:
    """Open action items: proposals a scheduled refresh made, waiting for a person."""
    from sqlmodel import col, select

    from schemas.records import ActionItem

    ctx = _open(Settings())
    with ctx.records.session() as s:
        rows = s.exec(
            select(ActionItem)
            .where(col(ActionItem.resolved_at).is_(None))
            .order_by(col(ActionItem.id))
        ).all()
        out = [
            {
                "id": a.id,
                "kind": a.kind,
                "version_id": a.version_id,
                "created_at": a.created_at.isoformat(),
                "message": a.message,
            }
            for a in rows
        ]
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    if not out:
        typer.echo("no open action items")
    for a in out:
        typer.echo(f"#{a['id']} {a['created_at'][:19]} {a['kind']}: {a['message']}")


def dead_letters(as_json: AsJson = False) -> None:
    """Messages no worker could handle, with their error."""
    from sqlmodel import col, select

    from schemas.records import DeadLetter

    ctx = _open(Settings())
    with ctx.records.session() as s:
        rows = s.exec(select(DeadLetter).order_by(col(DeadLetter.id))).all()
        out = [
            {
                "id": d.id,
                "worker": d.worker,
                "subject": d.subject,
                "msg_id": d.msg_id,
                "error": d.error,
                "created_at": d.created_at.isoformat(),
                "payload": d.payload,
            }
            for d in rows
        ]
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    if not out:
        typer.echo("no dead letters")
    for d in out:
        typer.echo(
            f"#{d['id']} {d['created_at'][:19]} {d['worker']} on {d['subject']}: {d['error'].splitlines()[0][:300]}"
        )


def worker(
    names: Annotated[
        list[str],
        typer.Argument(help="fetch, parse, categorize, guess-approvals, render, publish, refresh"),
    ],
) -> None:
    """Run workers against SKILLPRESS_NATS_URL (or a running `skillpress up`); start several to share work."""
    import signal

    from services.cli.stack import running_up
    from services.platform.logging import configure_logging
    from services.workers.app import WORKERS, make_context, serve_workers

    settings = Settings()
    configure_logging(settings.log_format, settings.log_level)
    unknown = [n for n in names if n not in WORKERS]
    if unknown:
        _fail(f"unknown worker {unknown[0]!r}: choose from {', '.join(WORKERS)}")
    url = settings.nats_url or running_up(settings)
    if not url:
        _fail("no NATS: set SKILLPRESS_NATS_URL, or start `skillpress up` first")
    ctx = make_context(settings)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve_workers(ctx, url, names, stop)

    try:
        asyncio.run(main())
    finally:
        ctx.records.close()


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
    app.command()(versions)
    app.command()(show)
    app.command()(diff)
    app.command()(publish)
    app.command()(actions)
    app.command("dead-letters")(dead_letters)
    app.command()(worker)
