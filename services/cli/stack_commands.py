"""`skillpress up` and `skillpress demo`: the embedded stack (nats-server from its wheel,
SQLite records, a local blob directory) with nothing to configure."""

from __future__ import annotations

import asyncio
import json
import signal
from importlib import resources
from typing import Annotated

import typer

from services.platform.settings import Settings

__all__ = ["register"]


def _nats(settings: Settings):  # type: ignore[no-untyped-def]
    """(the embedded server or None, the URL to use): a configured NATS wins over the embedded one."""
    from services.cli.main import fail
    from services.platform.localstack import LocalServerError, NatsServer

    if settings.nats_url:
        return None, settings.nats_url
    try:
        server = NatsServer(settings.nats_dir).start()
    except LocalServerError as exc:
        fail(str(exc))
    return server, server.url


def register(app: typer.Typer) -> None:
    @app.command()
    def up() -> None:
        """Start the embedded stack and every worker in the foreground (Ctrl-C stops it cleanly)."""
        from services.cli.main import fail
        from services.cli.stack import write_up_marker
        from services.platform.logging import configure_logging, get_logger
        from services.platform.records import RecordStoreUnavailable
        from services.workers.app import WORKERS, make_context, serve_workers

        settings = Settings()
        configure_logging(settings.log_format, settings.log_level)
        log = get_logger("up", home=str(settings.home))
        try:
            ctx = make_context(settings)
        except RecordStoreUnavailable as exc:
            fail(str(exc))
        server, nats_url = _nats(settings)
        marker = write_up_marker(settings, nats_url)

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)

            async def watch_server() -> None:
                while not stop.is_set():
                    if server is not None and not server.proc.running():  # type: ignore[union-attr]
                        log.error("up.nats_exited", log=str(settings.nats_dir / "nats.log"))
                        stop.set()
                    await asyncio.sleep(0.2)

            ready = asyncio.Event()
            watcher = asyncio.create_task(watch_server())
            workers = asyncio.create_task(
                serve_workers(ctx, nats_url, list(WORKERS), stop, ready, schedule=True)
            )
            await ready.wait()
            log.info(
                "up.ready",
                nats=nats_url,
                records=ctx.records.safe_url,
                blobs=settings.s3_endpoint or str(settings.blob_dir),
                workers=list(WORKERS),
            )
            typer.echo(
                f"skillpress is up: NATS {nats_url} (stream SKILLPRESS), records {ctx.records.safe_url}, "
                f"blobs {settings.s3_endpoint or settings.blob_dir}, workers {', '.join(WORKERS)}. Ctrl-C stops it.",
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
            ctx.records.close()
            log.info("up.stopped")
            typer.echo("skillpress stopped.", err=True)

    @app.command()
    def demo(
        as_json: Annotated[
            bool, typer.Option("--json", help="print what was made as JSON")
        ] = False,
    ) -> None:
        """Run the pipeline on the bundled Hollowbrook spec: submit, derive, propose, publish; print the skill."""
        from schemas.records import Version
        from schemas.subjects import EVENTS
        from services.cli.main import fail
        from services.cli.pipeline_commands import publish_and_follow, submit_and_follow
        from services.cli.stack import StackError
        from services.platform.ids import derived_id
        from services.platform.logging import configure_logging
        from services.workers.app import make_context
        from services.workers.versions import version_files

        settings = Settings()
        configure_logging(settings.log_format, "warning")
        spec = resources.files("services.examples").joinpath("hollowbrook.yaml").read_bytes()
        try:
            _, seen = submit_and_follow(
                settings,
                "hollowbrook",
                spec,
                None,
                None,
                120.0,
                progress=not as_json,
                created_by="demo",
            )
            subject, last = seen[-1]
            if subject == EVENTS["revision_rejected"]:
                fail(f"refused: {last['reason']}")
            ctx = make_context(settings)
            with ctx.records.session() as s:
                version = s.get(Version, last["version_id"]) if "version_id" in last else None
                if version is None:  # unchanged: the version this revision made before
                    version = (
                        s.query(Version).filter(Version.revision_id == last["revision_id"]).first()
                    )  # type: ignore[attr-defined]
                if version is None:
                    fail("the pipeline proposed no version; see `skillpress dead-letters`")
                s.expunge(version)
            published = publish_and_follow(
                settings, "hollowbrook", version.id, False, 60.0, requested_by="demo"
            )
            files = version_files(ctx.blobs, version)
            ctx.records.close()
        except (StackError, TimeoutError) as exc:
            fail(str(exc), 1)
        meta = json.loads(files["skill.json"])
        result = {
            "skill": "hollowbrook",
            "skill_id": derived_id("skill", "hollowbrook"),
            "version_id": version.id,
            "outcome": subject.rsplit(".", 1)[-1],
            "published": published,
            "operations": meta["stats"]["operations"],
            "tools": meta["stats"]["tools"],
            "body_bytes": meta["stats"]["body_bytes"],
            "home": str(settings.home),
        }
        if as_json:
            typer.echo(json.dumps(result, indent=2, sort_keys=True))
            return
        typer.echo(
            f"published hollowbrook version {version.id[:12]}: {meta['stats']['operations']} operations,"
            f" {meta['stats']['tools']} tools, body {meta['stats']['body_bytes']:,} bytes; state in {settings.home}"
        )
        typer.echo(
            "  try: skillpress show hollowbrook create_booking.md | skillpress versions hollowbrook"
        )
        typer.echo("")
        typer.echo(files["body.md"].decode())
