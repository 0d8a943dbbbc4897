"""Traces across a submission's stages (#44.1), off by default: with an OTLP endpoint set, the
span `serve` opens as it publishes a submission and every worker stage that handles it after
(fetch, parse, categorize, guess-approvals, render) reach the collector as one trace, carried
from stage to stage in the messages' `traceparent` header."""

from __future__ import annotations

import json
from asyncio import Event
from collections.abc import Iterator

import httpx
import pytest

from skillpress.app.base.bus import send
from skillpress.app.base.context import AppContext
from skillpress.platform import tracing
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.subjects import EVENTS
from skillpress.workers import app as worker_app
from tests.fake_api import FakeApi, Reply, fake_api
from tests.workers.conftest import SPECS, watching
from tests.workers.test_probes import worker_with_probes

pytestmark = pytest.mark.integration  # starts real servers

trace_pb2 = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")


class Collector:
    """An OTLP/HTTP endpoint that keeps every span it is sent: (service, name, trace id)."""

    def __init__(self, api: FakeApi) -> None:
        self.api, self.url = api, api.url

    @property
    def spans(self) -> list[tuple[str, str, str]]:
        return [(service, name, t) for service, name, t, _, _ in self.detailed]

    @property
    def detailed(self) -> list[tuple[str, str, str, dict[str, str], dict[str, str]]]:
        """Each span: service, name, trace id, its attributes, its resource's attributes."""
        kept = []
        for posted in list(self.api.seen):
            request = trace_pb2.ExportTraceServiceRequest()
            request.ParseFromString(posted.body)
            for resource in request.resource_spans:
                held = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        said = {a.key: a.value.string_value for a in span.attributes}
                        kept.append(
                            (held["service.name"], span.name, span.trace_id.hex(), said, held)
                        )
        return kept


@pytest.fixture
def collector() -> Iterator[Collector]:
    with fake_api(lambda r: Reply(200, b"", {"Content-Type": "application/x-protobuf"})) as api:
        yield Collector(api)


def test_traces_are_off_unless_an_endpoint_is_named() -> None:
    assert not tracing.enabled({})
    assert tracing.enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.enabled({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert not tracing.enabled(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    )
    assert tracing.inject({"Nats-Msg-Id": "x"}, "s") == {"Nats-Msg-Id": "x"}  # off: nothing


async def test_a_process_of_several_roles_is_one_resource_naming_every_stage(
    ctx: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`worker all` runs the publish stage on its own connection beside the other stages: the
    process's trace resource names every stage it runs whichever role's group starts first (it
    was started by the first, so a process whose publish group won named only `publish`), and
    it is stopped once, when the process ends."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    seen: list[tuple[list[str], object]] = []

    async def group(
        _ctx: AppContext, _url: str, names: list[str], *_: object, **__: object
    ) -> None:
        provider = tracing.start_tracing("worker", tuple(names))
        assert provider is not None
        seen.append((names, provider.resource.attributes.get("skillpress.workers")))

    monkeypatch.setattr(worker_app, "serve_workers", group)
    try:
        await worker_app.serve_roles(ctx, lambda role: "nats://x", ["publish", "fetch"], Event())
    finally:
        tracing.stop_tracing()
    assert seen == [(["publish"], "publish,fetch"), (["fetch"], "publish,fetch")]
    assert not tracing.tracing_started()  # stopped with the process's last role


async def test_a_submission_is_one_trace_across_its_stages(
    ctx: AppContext, settings: Settings, collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert settings.nats_url
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    proc, port, lines = worker_with_probes(settings, otel)
    try:
        for key, value in otel.items():
            monkeypatch.setenv(key, value)
        assert tracing.start_tracing("serve") is not None  # as `serve` starts it
        blob = ctx.blobs.put((SPECS / "oai-petstore-expanded.yaml").read_bytes())
        event = SpecSubmitted(submission="t1", skill="petstore", blob=blob, created_by="test")
        async with watching(settings.nats_url) as (watcher, nc):
            await send(nc, EVENTS.spec_submitted, event, "submitted:t1")
            await watcher.wait_for(EVENTS.version_proposed, timeout=60, submission="t1")
        for probe in ("/readyz", "/metrics", "/healthz"):  # scraped and probed: never traced
            assert httpx.get(f"http://127.0.0.1:{port}{probe}", timeout=10).status_code == 200
    finally:
        tracing.stop_tracing()
        proc.terminate()  # a stopping worker sends what it holds
        proc.wait(30)
    sent = [s for s in collector.spans if s[0] == "skillpress-serve"]
    serve_said = [a for service, *_, a, _ in collector.detailed if service == "skillpress-serve"]
    assert [a.get("skillpress.submission") for a in serve_said] == ["t1"]
    assert [name for _, name, _ in sent] == [f"{EVENTS.spec_submitted} publish"]
    trace_id = sent[0][2]
    worked = [(name, t) for service, name, t in collector.spans if service == "skillpress-worker"]
    assert worked, f"the worker sent no spans: {lines[-5:]}"
    assert {t for _, t in worked} == {trace_id}, worked  # one trace, from serve's publish on
    names = {name for name, _ in worked}
    for subject in (EVENTS.spec_submitted, EVENTS.version_proposed):
        assert any(subject in name for name in names), (subject, sorted(names))
    assert len(names) >= 8, sorted(names)  # each stage's consume and what it publishes
    # #57.8: a stage's spans say the submission they served and the stage, the replica is in
    # the resource, the log lines name the trace, and no probe or scrape is traced
    mine = [d for d in collector.detailed if d[0] == "skillpress-worker"]
    served = {
        (a["skillpress.stage"], a.get("skillpress.submission"))
        for *_, a, _ in mine
        if "skillpress.stage" in a
    }
    for stage in ("fetch", "parse", "categorize", "guess-approvals", "render"):
        assert (stage, "t1") in served, (stage, sorted(served))
    assert all(r["service.instance.id"].endswith(f":{proc.pid}") for *_, r in mine), mine[0]
    assert all("fetch" in r["skillpress.workers"] for *_, r in mine)
    started = [json.loads(line) for line in lines if '"event": "fetch.started"' in line]
    assert started and started[0]["trace_id"] == trace_id, started
    assert not [n for _, n, _ in collector.spans if "readyz" in n or "metrics" in n]
