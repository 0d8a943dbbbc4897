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


def _blobs(settings: Settings):  # type: ignore[no-untyped-def]
    from services.platform.blobs import LocalBlobStore, S3BlobStore

    if settings.s3_endpoint:
        return S3BlobStore.from_env(settings.s3_endpoint, settings.s3_access_key_env, settings.s3_secret_key_env,
                                    settings.s3_bucket, secure=settings.s3_secure)
    return LocalBlobStore(settings.blob_dir)


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
        """Start the embedded stack in the foreground (Ctrl-C stops it cleanly)."""
        from services.cli.main import fail
        from services.platform.logging import configure_logging, get_logger
        from services.platform.records import RecordStore, RecordStoreUnavailable

        settings = Settings()
        configure_logging(settings.log_format, settings.log_level)
        log = get_logger("up", home=str(settings.home))
        try:
            records = RecordStore(settings.records_url)
            records.migrate()
        except RecordStoreUnavailable as exc:
            fail(str(exc))
        server, nats_url = _nats(settings)
        try:
            stream = asyncio.run(_ensure(nats_url))
            log.info("up.ready", nats=nats_url, stream=stream, records=records.safe_url,
                     blobs=settings.s3_endpoint or str(settings.blob_dir))
            typer.echo(f"skillpress is up: NATS {nats_url} (stream {stream}), records {records.safe_url}, "
                       f"blobs {settings.s3_endpoint or settings.blob_dir}. Ctrl-C stops it.", err=True)
            stop = {"now": False}

            def on_signal(*_: object) -> None:
                stop["now"] = True

            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
            import time

            while not stop["now"]:
                if server is not None and not server.proc.running():  # type: ignore[union-attr]
                    fail("nats-server exited unexpectedly; see " + str(settings.nats_dir / "nats.log"))
                time.sleep(0.2)
        finally:
            if server is not None:
                server.stop()
            records.close()
            log.info("up.stopped")
            typer.echo("skillpress stopped.", err=True)

    @app.command()
    def demo(
        as_json: Annotated[bool, typer.Option("--json", help="print what was made as JSON")] = False,
    ) -> None:
        """Start the embedded stack, derive the bundled example spec, store and announce it, print what was made."""
        from services.cli.main import print_summary
        from services.derive import DeriveOptions, derive_package
        from services.platform.logging import configure_logging
        from services.platform.packages import store_package
        from services.platform.records import RecordStore

        settings = Settings()
        configure_logging(settings.log_format, "warning")
        spec = resources.files("services.examples").joinpath("hollowbrook.yaml").read_bytes()
        package = derive_package(spec, DeriveOptions())
        records = RecordStore(settings.records_url)
        records.migrate()
        blobs = _blobs(settings)
        stored = store_package(records, blobs, spec, package, created_by="demo")
        server, nats_url = _nats(settings)
        try:
            ack = asyncio.run(_announce(nats_url, stored.version_id, package.meta["slug"]))
        finally:
            if server is not None:
                server.stop()
            records.close()
        result = {**package.summary(), "stored_version": stored.version_id, "new_version": stored.created,
                  "announced": ack, "home": str(settings.home)}
        if as_json:
            typer.echo(json.dumps(result, indent=2, sort_keys=True))
            return
        print_summary(package.summary(), None)
        typer.echo(f"  stored    version {stored.version_id} ({'new' if stored.created else 'already stored'}) in {settings.home}")
        typer.echo(f"  announced skillpress.version.proposed on NATS, stream seq {ack['seq']}"
                   + (" (duplicate: deduplicated by Nats-Msg-Id)" if ack["duplicate"] else ""))
        typer.echo("")
        typer.echo(package.files["body.md"].decode())


async def _ensure(url: str) -> str:
    from services.platform.broker import connect, ensure_stream

    nc = await connect(url)
    try:
        cfg = await ensure_stream(nc)
        return str(cfg.name)
    finally:
        await nc.close()


async def _announce(url: str, version_id: str, slug: str) -> dict[str, object]:
    from schemas.subjects import EVENTS, STREAM
    from services.platform.broker import connect, ensure_stream

    nc = await connect(url)
    try:
        await ensure_stream(nc)
        js = nc.jetstream()
        payload = json.dumps({"version_id": version_id, "skill": slug}).encode()
        ack = await js.publish(EVENTS["version_proposed"], payload, stream=STREAM,
                               headers={"Nats-Msg-Id": f"version.proposed:{version_id}"})
        return {"stream": ack.stream, "seq": ack.seq, "duplicate": bool(ack.duplicate)}
    finally:
        await nc.close()
