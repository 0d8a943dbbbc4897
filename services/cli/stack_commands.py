"""`skillpress up` and `skillpress demo`: the embedded stack (nats-server from its wheel,
SQLite records, a local blob directory) with nothing to configure."""

from __future__ import annotations

import json
import signal
from importlib import resources
from typing import TYPE_CHECKING, Annotated

import typer

from services.cli.common import Progress, fail, failures, open_ctx, settings

if TYPE_CHECKING:
    from services.platform.embedded_nats import NatsServer
    from services.platform.settings import Settings

__all__ = ["register"]


def _nats(settings: Settings) -> tuple[NatsServer | None, str]:
    """(the embedded server or None, the URL to use): a configured NATS wins over the embedded one."""
    from services.platform.embedded_nats import LocalServerError, NatsServer

    if settings.nats_url:
        return None, settings.nats_url
    try:
        server = NatsServer(settings.nats_dir).start()
    except LocalServerError as exc:
        fail(str(exc))
    return server, server.url


def up() -> None:
    """Start the embedded stack and every worker in the foreground (Ctrl-C stops it cleanly)."""
    import asyncio

    from services.app.context import open_app
    from services.app.pipeline import run_workers, worker_names, write_up_marker
    from services.platform.logging import configure_logging, get_logger

    chosen = settings()
    configure_logging(chosen.log_format, chosen.log_level)
    log = get_logger("up", home=str(chosen.home))
    with failures():
        ctx = open_app(chosen)
    server, nats_url = _nats(chosen)
    marker = write_up_marker(chosen, nats_url)
    names = list(worker_names())

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

        async def watch_server() -> None:
            while not stop.is_set():
                if server is not None and server.proc is not None and not server.proc.running():
                    log.error("up.nats_exited", log=str(chosen.nats_dir / "nats.log"))
                    stop.set()
                await asyncio.sleep(0.2)

        ready = asyncio.Event()
        watcher = asyncio.create_task(watch_server())
        workers = asyncio.create_task(run_workers(ctx, nats_url, names, stop, ready, schedule=True))
        await ready.wait()
        blobs = chosen.s3_endpoint or str(chosen.blob_dir)
        log.info(
            "up.ready", nats=nats_url, records=ctx.records.safe_url, blobs=blobs, workers=names
        )
        typer.echo(
            f"skillpress is up: NATS {nats_url} (stream SKILLPRESS), records {ctx.records.safe_url}, "
            f"blobs {blobs}, workers {', '.join(names)}. Ctrl-C stops it.",
            err=True,
        )
        await workers
        watcher.cancel()

    try:
        asyncio.run(main())
    finally:
        marker.unlink(missing_ok=True)
        if server is not None:
            server.stop()
        ctx.close()
        log.info("up.stopped")
        typer.echo("skillpress stopped.", err=True)


def demo(
    as_json: Annotated[bool, typer.Option("--json", help="print what was made as JSON")] = False,
) -> None:
    """Run the pipeline on the bundled Hollowbrook spec: submit, derive, propose, publish; print the skill."""
    from schemas.subjects import EVENTS
    from services.app.pipeline import request_publish, submit_spec
    from services.app.versions import find_skill, version_files, version_for_outcome
    from services.derive.manifest import Manifest

    spec = resources.files("services.examples").joinpath("hollowbrook.yaml").read_bytes()
    ctx = open_ctx()
    shown = Progress(not as_json)
    try:
        with failures():
            _, seen = submit_spec(
                ctx, "hollowbrook", spec, None, None, 120.0, shown.on_event, created_by="demo"
            )
            shown.stop()
            subject, last = seen[-1]
            if subject == EVENTS["revision_rejected"]:
                fail(f"refused: {last['reason']}")
            skill = find_skill(ctx, "hollowbrook")
            version = version_for_outcome(ctx, skill, last)
            published = request_publish(
                ctx, "hollowbrook", version.id, False, 60.0, requested_by="demo"
            )
            files = version_files(ctx.blobs, version)
    finally:
        shown.stop()
        ctx.close()
    meta = Manifest.from_json(files["skill.json"])
    stats = meta.stats
    result = {
        "skill": "hollowbrook",
        "skill_id": skill.id,
        "version_id": version.id,
        "outcome": subject.rsplit(".", 1)[-1],
        "published": published,
        "operations": stats.operations,
        "tools": stats.tools,
        "body_bytes": stats.body_bytes,
        "home": str(ctx.settings.home),
    }
    if as_json:
        typer.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    typer.echo(
        f"published hollowbrook version {version.id[:12]}: {stats.operations} operations,"
        f" {stats.tools} tools, body {stats.body_bytes:,} bytes; state in {ctx.settings.home}"
    )
    typer.echo(
        "  try: skillpress show hollowbrook create_booking.md | skillpress versions hollowbrook"
    )
    typer.echo("")
    typer.echo(files["body.md"].decode())


def register(app: typer.Typer) -> None:
    app.command()(up)
    app.command()(demo)
