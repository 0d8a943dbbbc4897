"""`skillpress up` and `skillpress demo`: the embedded stack (nats-server from its wheel,
SQLite records, a local blob directory) with nothing to configure."""

from __future__ import annotations

import json
import signal
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any

import typer

from services.cli.common import Progress, fail, failures, open_ctx, settings

if TYPE_CHECKING:
    from services.api.server import Listening
    from services.platform.embedded_nats import NatsCluster, NatsServer
    from services.platform.settings import Settings

__all__ = ["register"]


class _EmbeddedNats:
    """The embedded nats-server, or a cluster of them on loopback (`up --cluster N`)."""

    def __init__(self, settings: Settings, cluster: int) -> None:
        from services.platform.embedded_nats import LocalServerError, NatsCluster, NatsServer

        self.server: NatsServer | None = None
        self.cluster: NatsCluster | None = None
        try:
            if cluster:
                self.cluster = NatsCluster(settings.home / "nats-cluster", cluster).start()
                self.url = self.cluster.url
            else:
                self.server = NatsServer(settings.nats_dir).start()
                self.url = self.server.url
        except LocalServerError as exc:
            fail(str(exc))

    def alive(self) -> bool:
        """Still serving: the server runs, or a majority of the cluster's nodes do."""
        if self.cluster is not None:
            running = sum(node.running() for node in self.cluster.nodes)
            return running > self.cluster.size // 2
        return (
            self.server is not None and self.server.proc is not None and self.server.proc.running()
        )

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self.server is not None:
            self.server.stop()


def _nats(settings: Settings, cluster: int = 0) -> tuple[_EmbeddedNats | None, str]:
    """(the embedded server or None, the URL to use): a configured NATS wins over the embedded one."""
    if settings.nats_url:
        if cluster:
            fail(
                "--cluster starts its own nodes: unset SKILLPRESS_NATS_URL, or leave --cluster out"
            )
        return None, settings.nats_url
    embedded = _EmbeddedNats(settings, cluster)
    return embedded, embedded.url


Host = Annotated[
    str | None,
    typer.Option("--host", help="address for the API and console (default 127.0.0.1)"),
]
Port = Annotated[
    int | None, typer.Option("--port", help="port for the API and console (default 8787)")
]


def _run_stack(
    chosen: Settings, *, workers: bool, http: tuple[str, int] | None, what: str, cluster: int = 0
) -> None:
    """Run the workers (when `workers`) and the API and console (when `http`) in the foreground
    on the configured NATS, a running `up`'s, or the embedded one; Ctrl-C stops it cleanly."""
    import asyncio

    from services.app.context import open_app
    from services.app.pipeline import run_workers, running_up, worker_names, write_up_marker
    from services.platform.local_api import local_operator, remove_link, write_link
    from services.platform.logging import configure_logging, get_logger

    configure_logging(chosen.log_format, chosen.log_level)
    log = get_logger(what, home=str(chosen.home))
    from services.api.server import Listening

    operators = where = None
    import secrets

    link_token, link_operator = secrets.token_urlsafe(32), "cli"
    with failures():
        ctx = open_app(chosen)
        if http is not None:
            from services.api.server import server_operators

            where = Listening(*http)
            operators = server_operators(ctx, where.host)
            # command lines on this home reach the API with a token of this run's own
            link_operator = local_operator(operators.tokens)
            operators.tokens[link_operator] = link_token
    joined = None if (workers or chosen.nats_url) else running_up(chosen)
    if joined:
        server, nats_url, workers = None, joined, False
    else:
        server, nats_url = _nats(chosen, cluster)
        if cluster:  # every stream on every node
            chosen = chosen.model_copy(update={"stream_replicas": min(cluster, 5)})
        workers = workers or server is not None  # an embedded NATS needs its workers here
    ctx.settings = chosen.model_copy(update={"nats_url": nats_url})
    marker = write_up_marker(chosen, nats_url) if workers else None
    names = list(worker_names()) if workers else []

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

        async def watch_server() -> None:
            while not stop.is_set():
                if server is not None and not server.alive():
                    log.error(f"{what}.nats_exited", log=str(chosen.nats_dir / "nats.log"))
                    stop.set()
                await asyncio.sleep(0.2)

        tasks = [asyncio.create_task(watch_server())]
        lines = []
        if names:
            ready = asyncio.Event()
            tasks.append(
                asyncio.create_task(run_workers(ctx, nats_url, names, stop, ready, schedule=True))
            )
            await _first(ready, tasks[-1])
            blobs = chosen.s3_endpoint or str(chosen.blob_dir)
            log.info(
                f"{what}.ready",
                nats=nats_url,
                records=ctx.records.safe_url,
                blobs=blobs,
                workers=names,
            )
            lines.append(
                f"skillpress is up: NATS {nats_url} (stream SKILLPRESS), records {ctx.records.safe_url}, "
                f"blobs {blobs}, workers {', '.join(names)}."
            )
        if where is not None and operators is not None:
            from services.api.server import console_url, serve_http

            listening = asyncio.Event()
            bound: list[Listening] = []

            def on_listening(at: Listening) -> None:
                bound.append(at)
                listening.set()

            tasks.append(
                asyncio.create_task(serve_http(ctx, operators, nats_url, where, stop, on_listening))
            )
            await _first(listening, tasks[-1])
            at = bound[0]
            write_link(chosen.home, at.loopback, link_token, link_operator)
            log.info(f"{what}.serving", url=at.base, nats=nats_url)
            lines.append(
                f"console and API at {at.base} (API under /v1, its document at /v1/openapi.json);"
                f" sign in: {console_url(at, operators)}"
            )
        typer.echo("\n".join(lines) + "\nCtrl-C stops it.", err=True)
        await stop.wait()
        await asyncio.gather(*tasks[1:], return_exceptions=True)
        tasks[0].cancel()

    try:
        asyncio.run(main())
    except OSError as exc:
        fail(f"cannot serve on {where.base if where else '?'}: {exc}", 1)
    finally:
        remove_link(chosen.home)
        if marker is not None:
            marker.unlink(missing_ok=True)
        if server is not None:
            server.stop()
        ctx.close()
        log.info(f"{what}.stopped")
        typer.echo("skillpress stopped.", err=True)


async def _first(ready: Any, task: Any) -> None:
    """Wait until `ready` is set, or raise what ended `task` before it was."""
    import asyncio

    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        task.result()
        raise OSError("stopped before it was ready")


def up(
    host: Host = None,
    port: Port = None,
    console: Annotated[
        bool, typer.Option("--console/--no-console", help="serve the API and console too")
    ] = True,
    cluster: Annotated[
        int,
        typer.Option(
            "--cluster",
            help="run N nats-servers as a JetStream cluster on loopback, every stream on each (3 to try it out)",
        ),
    ] = 0,
) -> None:
    """Start the embedded stack, every worker, and the API and console, in the foreground (Ctrl-C stops it)."""
    chosen = settings()
    http = (host or chosen.api_host, port or chosen.api_port) if console else None
    _run_stack(chosen, workers=True, http=http, what="up", cluster=cluster)


def serve(host: Host = None, port: Port = None) -> None:
    """Serve the API and console: on the configured NATS, beside a running `skillpress up`, or on
    the embedded stack with every worker in this process."""
    chosen = settings()
    _run_stack(
        chosen, workers=False, http=(host or chosen.api_host, port or chosen.api_port), what="serve"
    )


token_app = typer.Typer(help="Operator tokens for the API and console.", no_args_is_help=True)


@token_app.command("add")
def token_add(
    name: Annotated[str, typer.Argument(help="the operator's name, recorded as created_by")],
) -> None:
    """Make a token for an operator (printed once; stored in <home>/operator-tokens, mode 0600)."""
    from services.api.auth import add_token

    chosen = settings()
    path = chosen.operator_tokens_file or chosen.home / "operator-tokens"
    with failures():
        secret = add_token(path, name)
    typer.echo(secret)
    typer.echo(f"stored for {name} in {path}; sign in with it on the console", err=True)


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
    app.command()(serve)
    app.command()(demo)
    app.add_typer(token_app, name="token")
