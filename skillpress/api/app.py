"""The ASGI application: the JSON API, the console, their static files, problems and the body cap,
and one NATS connection (a FastStream broker's) shared by every request that talks to the stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles

from skillpress.api import (
    annotation_routes,
    approvals_routes,
    console,
    console_kit,
    console_operations,
    operations_routes,
    problems,
    publication_routes,
    v1,
)
from skillpress.api.access_log import AccessLog
from skillpress.api.auth import Operators
from skillpress.api.deps import ServerState
from skillpress.api.headers import SecurityHeaders
from skillpress.api.limits import BodyCap
from skillpress.app.base.context import AppContext, SharedBus
from skillpress.platform.tracing import start_tracing, stop_tracing

__all__ = ["API_VERSION", "create_app", "openapi_document"]

API_VERSION = "1.0.0"
_FORM_OVERHEAD = 256 * 1024  # multipart boundaries and the small fields beside a spec
# the console's icon: one letter, so a browser's request for it is not a 404 on every page
_ICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16"'
    b' rx="3" fill="#1f4e79"/><text x="8" y="12" font-size="11" text-anchor="middle"'
    b' fill="#fff" font-family="sans-serif">s</text></svg>'
)


def _fixed_routes(app: FastAPI) -> None:
    """The routes outside the API's schema: the console's icon, the two probes and the scrape."""
    app.add_api_route("/favicon.ico", _favicon, include_in_schema=False)
    app.add_api_route("/healthz", _alive, include_in_schema=False)
    app.add_api_route("/readyz", _ready, include_in_schema=False)
    app.add_api_route("/metrics", _metrics, include_in_schema=False)


async def _metrics(request: Request) -> Response:
    """The Prometheus scrape: names and counts only (no slug, spec or value), so no token; each
    stage's queue read from its consumer first (when this server keeps a pipeline connection)."""
    from skillpress.app.base.bus import observe_queues
    from skillpress.platform.metrics import CONTENT_TYPE, exposition

    st = request.app.state.skillpress
    if st.keeps_nats:
        await observe_queues(st.nc)
    return Response(exposition(), media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})


def _alive() -> Response:
    """Liveness: the process answers (nothing else is asked: a store that is down is
    readiness's question, and restarting this process would not bring it back)."""
    return Response(b'{"status":"alive"}', media_type="application/json")


async def _ready(request: Request) -> Response:
    """Readiness: the records, the blob store and (when this server keeps a connection to the
    pipeline) JetStream each answer, its stream included (a connection to a cluster without a
    quorum is no readiness); 503 naming the ones that do not."""
    from starlette.concurrency import run_in_threadpool

    from skillpress.app.base.bus import pipeline_ready
    from skillpress.app.records.health import readiness

    st = request.app.state.skillpress
    checks = await run_in_threadpool(readiness, st.ctx)
    if st.keeps_nats:
        checks["nats"] = await pipeline_ready(st.nc)
    ready = all(v == "ok" for v in checks.values())
    body = {"status": "ready" if ready else "not ready", "checks": checks}
    return Response(
        json.dumps(body).encode(),
        status_code=200 if ready else 503,
        media_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def _favicon() -> Response:
    return Response(_ICON, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


def _count_approvals(ctx: AppContext) -> None:
    """The scrape's `skillpress_approvals_waiting`, read from the records (absent while they do
    not answer: a gap on the dashboard, never a wrong number)."""
    from skillpress.app.records.approval_requests import pending_count
    from skillpress.platform.metrics import approvals_waiting_from

    def count() -> int | None:
        try:
            return pending_count(ctx)
        except Exception:  # noqa: BLE001 (a scrape must answer; readiness says what is down)
            return None

    approvals_waiting_from(count)


async def _reconcile(ctx: AppContext, nc: Any) -> None:
    """The live pointers made to say what the records say, as the server starts (#44.3)."""
    from skillpress.app.operator.reconcile import reconcile_live, said
    from skillpress.platform.logging import get_logger

    log = get_logger("serve")
    try:
        for d in await reconcile_live(ctx, nc, repair=True):
            log.warning("live.repaired", skill=d.slug, detail=said(d, repaired=True))
    except Exception as exc:  # noqa: BLE001 (the server serves; `skillpress reconcile` retries)
        log.warning("live.reconcile_failed", error=str(exc) or type(exc).__name__)


def _lifespan(
    ctx: AppContext, st: ServerState, nats_url: str | None
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """The server's start and stop: with `nats_url`, one NATS connection for its requests."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        broker: Any = None
        st.keeps_nats = bool(nats_url)
        start_tracing("serve")  # off unless an OTLP endpoint is configured
        if nats_url:
            from faststream.nats import NatsBroker

            from skillpress.platform.broker import (
                broker_options,
                ensure_stream,
                server_list,
            )

            broker = NatsBroker(
                server_list(nats_url),
                logger=None,
                connect_timeout=5,
                **broker_options(ctx.settings, nats_url),
            )
            await broker.connect()
            st.nc = broker.connection
            await ensure_stream(st.nc, ctx.settings.stream_replicas)
            await _reconcile(ctx, st.nc)
            # the use-cases this server runs send and follow on its connection, not their own
            ctx.bus = SharedBus(st.nc, asyncio.get_running_loop(), nats_url)
        try:
            yield
        finally:
            ctx.bus = None
            st.nc = None
            if broker is not None:
                from skillpress.platform.broker import stop_broker

                await stop_broker(broker, "serve")
            stop_tracing()

    return lifespan


def create_app(ctx: AppContext, operators: Operators, nats_url: str | None) -> FastAPI:
    """The API and console over `ctx`; with `nats_url`, submissions and their live stages go
    through one connection opened at start-up (use-cases that wait for the pipeline reach it
    through `ctx.settings.nats_url`)."""
    st = ServerState(ctx, operators)

    lifespan = _lifespan(ctx, st, nats_url)

    app = FastAPI(
        title="skillpress",
        version=API_VERSION,
        summary="Turn an OpenAPI document into an agent skill, and keep it.",
        description=(
            "Operators import specs, review what the pipeline proposes, annotate and publish."
            " Every request needs a token, `Authorization: Bearer TOKEN`: an operator's for"
            " everything; a runtime's (a follower, an MCP server, a host) reads published"
            " versions, asks for approvals and waits on them, and decides nothing."
        ),
        lifespan=lifespan,
        openapi_url="/v1/openapi.json",
        docs_url=None,  # its page loads a third-party script; the document itself is served
        redoc_url=None,
        servers=[{"url": "http://127.0.0.1:8787", "description": "skillpress serve (default)"}],
        generate_unique_id_function=lambda route: route.name,
        # a pasted spec is a form field: up to SKILLPRESS_MAX_SPEC_BYTES, not the parser's 1 MB
        form_limits={"max_part_size": ctx.settings.max_spec_bytes + _FORM_OVERHEAD},
    )
    app.state.skillpress = st
    _count_approvals(ctx)
    problems.install(app)
    console_kit.install(app)
    app.include_router(v1.router)
    app.include_router(annotation_routes.router)
    app.include_router(approvals_routes.router)
    app.include_router(publication_routes.router)
    app.include_router(operations_routes.router)
    app.include_router(console.router)
    app.include_router(console_operations.router)
    app.mount("/static", StaticFiles(packages=[("skillpress.api", "static")]), name="static")
    app.add_middleware(
        BodyCap,
        max_bytes=ctx.settings.max_spec_bytes + _FORM_OVERHEAD,
        spec_bytes=ctx.settings.max_spec_bytes,
    )
    _fixed_routes(app)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(AccessLog)  # outermost: it sees every answer, refusals included
    plain_openapi = app.openapi
    cached: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not cached:
            cached.update(openapi_document(plain_openapi()))
        return cached

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def openapi_document(generated: dict[str, Any]) -> dict[str, Any]:
    """The API's OpenAPI document (what FastAPI generates, /v1 only) with the bearer scheme
    every operation requires."""
    doc = dict(generated)
    doc["paths"] = {p: v for p, v in doc["paths"].items() if p.startswith("/v1/")}
    for item in doc["paths"].values():
        for op in item.values():
            for code, answer in op.get("responses", {}).items():
                media = answer.get("content", {})
                if int(code) >= 400 and "application/json" in media:  # what is served
                    answer["content"] = {problems.PROBLEM: media["application/json"]}
            content = op.get("requestBody", {}).get("content", {})
            if "application/x-www-form-urlencoded" in content:  # the form any client can send first
                op["requestBody"]["content"] = dict(
                    sorted(
                        content.items(), key=lambda kv: kv[0] != "application/x-www-form-urlencoded"
                    )
                )
    components = dict(doc.get("components") or {})
    schemas = dict(components.get("schemas") or {})
    for unused in ("HTTPValidationError", "ValidationError"):  # never served: problems are
        if unused not in json.dumps(doc["paths"]):
            schemas.pop(unused, None)
    components["schemas"] = schemas
    components["securitySchemes"] = {
        "operatorToken": {"type": "http", "scheme": "bearer", "description": "an operator token"}
    }
    doc["components"] = components
    doc["security"] = [{"operatorToken": []}]
    return doc


def api_document() -> dict[str, Any]:
    """The API's OpenAPI document as served (built without a store or a broker)."""
    from pathlib import Path

    from skillpress.app.base.context import AppContext
    from skillpress.platform.blobs import LocalBlobStore
    from skillpress.platform.settings import Settings

    settings = Settings(home=Path("/nonexistent"))
    ctx = AppContext(settings=settings, records=None, blobs=LocalBlobStore(settings.blob_dir))  # type: ignore[arg-type]
    return create_app(ctx, Operators({}, b""), None).openapi()


def main() -> None:
    import json
    import sys
    from pathlib import Path

    out = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).parents[1] / "schemas" / "openapi.json"
    )
    out.write_text(json.dumps(api_document(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
