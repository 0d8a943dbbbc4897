"""Traces across a submission's stages (#44.1), off by default: with an OTLP endpoint set, the
span `serve` opens as it publishes a submission and every worker stage that handles it after
(fetch, parse, categorize, guess-approvals, render) reach the collector as one trace, carried
from stage to stage in the messages' `traceparent` header."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from skillpress.app.base.bus import send
from skillpress.app.base.context import AppContext
from skillpress.platform import tracing
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.subjects import EVENTS
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
        kept = []
        for posted in list(self.api.seen):
            request = trace_pb2.ExportTraceServiceRequest()
            request.ParseFromString(posted.body)
            for resource in request.resource_spans:
                service = next(
                    a.value.string_value
                    for a in resource.resource.attributes
                    if a.key == "service.name"
                )
                for scope in resource.scope_spans:
                    kept.extend((service, span.name, span.trace_id.hex()) for span in scope.spans)
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


async def test_a_submission_is_one_trace_across_its_stages(
    ctx: AppContext, settings: Settings, collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert settings.nats_url
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    proc, _, lines = worker_with_probes(settings, otel)
    try:
        for key, value in otel.items():
            monkeypatch.setenv(key, value)
        assert tracing.start_tracing("serve") is not None  # as `serve` starts it
        blob = ctx.blobs.put((SPECS / "oai-petstore-expanded.yaml").read_bytes())
        event = SpecSubmitted(submission="t1", skill="petstore", blob=blob, created_by="test")
        async with watching(settings.nats_url) as (watcher, nc):
            await send(nc, EVENTS.spec_submitted, event, "submitted:t1")
            await watcher.wait_for(EVENTS.version_proposed, timeout=60, submission="t1")
    finally:
        tracing.stop_tracing()
        proc.terminate()  # a stopping worker sends what it holds
        proc.wait(30)
    sent = [s for s in collector.spans if s[0] == "skillpress-serve"]
    assert [name for _, name, _ in sent] == [f"{EVENTS.spec_submitted} publish"]
    trace_id = sent[0][2]
    worked = [(name, t) for service, name, t in collector.spans if service == "skillpress-worker"]
    assert worked, f"the worker sent no spans: {lines[-5:]}"
    assert {t for _, t in worked} == {trace_id}, worked  # one trace, from serve's publish on
    names = {name for name, _ in worked}
    for subject in (EVENTS.spec_submitted, EVENTS.version_proposed):
        assert any(subject in name for name in names), (subject, sorted(names))
    assert len(names) >= 8, sorted(names)  # each stage's consume and what it publishes
