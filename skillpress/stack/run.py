"""`skillpress up` and `serve` as one foreground process: NATS (configured, a running `up`'s, or
embedded: one server or a cluster on loopback), every worker, and the API and console."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skillpress.app.base.bus import StackError
from skillpress.errors import Refused

if TYPE_CHECKING:
    import asyncio

    from skillpress.api.auth import Operators
    from skillpress.api.server import Listening
    from skillpress.platform.embedded_nats import NatsCluster, NatsServer
    from skillpress.platform.settings import Settings

__all__ = ["embedded_nats", "run_stack"]


class EmbeddedNats:
    """The embedded nats-server, or a cluster of them on loopback (`up --cluster N`)."""

    def __init__(self, settings: Settings, cluster: int) -> None:
        from skillpress.platform.embedded_nats import NatsCluster, NatsServer
        from skillpress.platform.local_processes import LocalServerError

        self.server: NatsServer | None = None
        self.cluster: NatsCluster | None = None
        try:
            if cluster:
                self.home = settings.home / "nats-cluster"
                self.cluster = NatsCluster(self.home, cluster).start()
                self.url = self.cluster.url
            else:
                self.home = settings.nats_dir
                self.server = NatsServer(self.home).start(port=settings.nats_port or -1)
                self.url = self.server.url
        except LocalServerError as exc:
            raise StackError(str(exc)) from None

    def url_for(self, role: str) -> str:
        """The server's (or the cluster's) URL as `role`'s user (`nats_roles`)."""
        if self.cluster is not None:
            return self.cluster.url_for(role)
        assert self.server is not None
        return self.server.url_for(role)

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


def embedded_nats(settings: Settings, cluster: int = 0) -> tuple[EmbeddedNats | None, str]:
    """(the embedded server or None, the URL to use): a configured NATS wins over the embedded one."""
    if settings.nats_url:
        if cluster:
            raise Refused(
                "--cluster starts its own nodes: unset SKILLPRESS_NATS_URL, or leave --cluster out"
            )
        return None, settings.nats_url
    embedded = EmbeddedNats(settings, cluster)
    return embedded, embedded.url


def run_stack(
    chosen: Settings,
    *,
    workers: bool,
    http: tuple[str, int] | None,
    what: str,
    say: Callable[[str], None],
    cluster: int = 0,
) -> None:
    """Run the workers (when `workers`) and the API and console (when `http`) in the foreground
    on the configured NATS, a running `up`'s, or the embedded one; SIGINT or SIGTERM stops it
    cleanly. `say` tells a person what is up (and how to sign in). Refused or StackError when
    it cannot start."""
    _Foreground(chosen, workers=workers, http=http, what=what, say=say, cluster=cluster).run()


class _Foreground:
    """One foreground stack, started and stopped in order: NATS, the workers, the HTTP face."""

    def __init__(
        self,
        chosen: Settings,
        *,
        workers: bool,
        http: tuple[str, int] | None,
        what: str,
        say: Callable[[str], None],
        cluster: int,
    ) -> None:
        import secrets

        from skillpress.app.base.bus import running_up, write_up_marker
        from skillpress.app.base.context import open_app
        from skillpress.platform.local_api import local_operator
        from skillpress.platform.logging import configure_logging, get_logger
        from skillpress.platform.nats_urls import shown_url
        from skillpress.stack.workers import worker_names

        configure_logging(chosen.log_format, chosen.log_level)
        self.what, self.say = what, say
        self.log = get_logger(what, home=str(chosen.home))
        self.operators: Operators | None = None
        self.where: Listening | None = None
        self.link_token, self.link_operator = secrets.token_urlsafe(32), "cli"
        _shared_needs_nats(chosen, what)
        self.ctx = ctx = open_app(chosen)
        if http is not None:
            from skillpress.api.server import Listening, server_operators

            self.where = Listening(*http)
            self.operators = server_operators(ctx, self.where.host)
            # command lines on this home reach the API with a token of this run's own
            self.link_operator = local_operator(self.operators.tokens)
            self.operators.own[self.link_operator] = self.link_token
        if workers and not chosen.nats_url:
            other = running_up(chosen)
            if other:
                raise Refused(
                    f"skillpress up is already running on {chosen.home} (NATS {shown_url(other)});"
                    " stop it first, or use another SKILLPRESS_HOME"
                )
        joined = None if (workers or chosen.nats_url) else running_up(chosen)
        server: EmbeddedNats | None
        if joined:
            server, nats_url, workers = None, joined, False
        else:
            server, nats_url = embedded_nats(chosen, cluster)
            if cluster:  # every stream on every node
                chosen = chosen.model_copy(update={"stream_replicas": min(cluster, 5)})
            workers = workers or server is not None  # an embedded NATS needs its workers here
        self.chosen, self.server, self.nats_url = chosen, server, nats_url
        ctx.settings = chosen.model_copy(update={"nats_url": nats_url})
        nats_home = server.home if server is not None else None
        self.marker = write_up_marker(chosen, nats_url, nats_home) if workers else None
        self.url_for = server.url_for if server is not None else (lambda role: nats_url)
        self.names = list(worker_names()) if workers else []
        self.started = False

    def run(self) -> None:
        import asyncio

        from skillpress.platform.local_api import remove_link

        try:
            asyncio.run(self.main())
        except OSError as exc:
            where = self.where.base if self.where else "?"
            raise StackError(f"cannot serve on {where}: {exc}") from None
        finally:
            remove_link(self.chosen.home)
            if self.marker is not None:
                self.marker.unlink(missing_ok=True)
            if self.server is not None:
                self.server.stop()
            self.ctx.close()
            if self.started:  # one that never came up says why (the error), not that it stopped
                self.log.info(f"{self.what}.stopped")
                self.say("skillpress stopped.")

    async def main(self) -> None:
        import asyncio

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        tasks = [asyncio.create_task(self.watch_server(stop))]
        try:
            lines = []
            if self.names:
                lines.append(await self.workers_up(stop, tasks))
            if self.where is not None and self.operators is not None:
                lines.append(await self.http_up(self.where, self.operators, stop, tasks))
            self.say("\n".join(lines) + "\nCtrl-C stops it.")
            self.started = True
            await stop.wait()
            await asyncio.gather(*tasks[1:], return_exceptions=True)
            tasks[0].cancel()
        except BaseException:
            # whatever stopped the start (a port in use, …), the rest stop as on Ctrl-C
            stop.set()
            if tasks[1:]:
                await asyncio.wait(tasks[1:], timeout=10)
            for task in tasks:
                task.cancel()
            raise

    async def watch_server(self, stop: asyncio.Event) -> None:
        import asyncio

        while not stop.is_set():
            if self.server is not None and not self.server.alive():
                self.log.error(
                    f"{self.what}.nats_exited", log=str(self.chosen.nats_dir / "nats.log")
                )
                stop.set()
            await asyncio.sleep(0.2)

    async def workers_up(self, stop: asyncio.Event, tasks: list[asyncio.Task[Any]]) -> str:
        """The workers started and ready; what a person is told of them."""
        import asyncio

        from skillpress.platform.nats_urls import shown_url
        from skillpress.stack.workers import run_workers

        ready = asyncio.Event()
        tasks.append(
            asyncio.create_task(
                run_workers(self.ctx, self.url_for, self.names, stop, ready, schedule=True)
            )
        )
        await _first(ready, tasks[-1])
        chosen, nats_url = self.chosen, self.nats_url
        blobs = chosen.s3_endpoint or str(chosen.blob_dir)
        self.log.info(
            f"{self.what}.ready",
            nats=shown_url(nats_url),
            records=self.ctx.records.safe_url,
            blobs=blobs,
            workers=self.names,
        )
        return (
            f"skillpress is up: NATS {shown_url(nats_url)} (stream SKILLPRESS), records {self.ctx.records.safe_url}, "
            f"blobs {blobs}, workers {', '.join(self.names)}."
        )

    async def http_up(
        self,
        where: Listening,
        operators: Operators,
        stop: asyncio.Event,
        tasks: list[asyncio.Task[Any]],
    ) -> str:
        """The API and console listening (and this home's link to them written); how to sign in."""
        import asyncio

        from skillpress.api.server import console_url, serve_http
        from skillpress.platform.local_api import write_link
        from skillpress.platform.nats_urls import shown_url

        listening = asyncio.Event()
        bound: list[Listening] = []

        def on_listening(at: Listening) -> None:
            bound.append(at)
            listening.set()

        tasks.append(
            asyncio.create_task(
                serve_http(self.ctx, operators, self.nats_url, where, stop, on_listening)
            )
        )
        await _first(listening, tasks[-1])
        at = bound[0]
        write_link(self.chosen.home, at.loopback, self.link_token, self.link_operator)
        self.log.info(f"{self.what}.serving", url=at.base, nats=shown_url(self.nats_url))
        return (
            f"console and API at {at.base} (API under /v1, its document at /v1/openapi.json);"
            f" sign in: {console_url(at, operators)}"
        )


def _shared_needs_nats(chosen: Settings, what: str) -> None:
    """`serve` on shared records or blobs must join the pipeline's NATS, not start its own."""
    postgres = chosen.database_url and not chosen.database_url.startswith("sqlite")
    if what == "serve" and not chosen.nats_url and (postgres or chosen.s3_endpoint):
        shared = "PostgreSQL" if postgres else "S3"
        raise Refused(
            f"serve has records or blobs on shared servers ({shared}) but no SKILLPRESS_NATS_URL:"
            " set it to the pipeline's NATS (without it, serve would start a private NATS and"
            " workers no one else sees)"
        )


async def _first(ready: Any, task: Any) -> None:
    """Wait until `ready` is set, or raise what ended `task` before it was."""
    import asyncio

    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        task.result()
        raise OSError("stopped before it was ready")
