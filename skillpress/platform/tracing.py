"""OpenTelemetry traces across a submission's stages, off unless an OTLP endpoint is configured.

The standard SDK and its exporter read the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT` or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
`OTEL_TRACES_SAMPLER`, …); `OTEL_SDK_DISABLED=true` turns it off again. A message carries its
trace in the W3C `traceparent` header (FastStream's telemetry middleware on the workers, `inject`
where `serve` publishes), so every stage of one submission is one trace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["enabled", "inject", "start_tracing", "stop_tracing"]

_PROVIDERS: list[Any] = []  # the process's one TracerProvider, once started


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether traces are sent: an OTLP endpoint is named and the SDK is not disabled."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(
        env.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def start_tracing(role: str) -> Any | None:
    """The process's TracerProvider, exporting over OTLP/HTTP in batches and set as the global
    one (named `skillpress-<role>` unless OTEL_SERVICE_NAME says otherwise); None when traces are
    off. Started once per process."""
    if not enabled():
        return None
    if _PROVIDERS:
        return _PROVIDERS[0]
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or f"skillpress-{role}"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _PROVIDERS.append(provider)
    return provider


def stop_tracing() -> None:
    """Send what is buffered and stop (a stopping process's last spans are not lost)."""
    while _PROVIDERS:
        _PROVIDERS.pop().shutdown()


def inject(headers: dict[str, str], subject: str) -> dict[str, str]:
    """`headers` with the trace of a new producer span for a message sent on `subject` (nothing
    added when traces are off)."""
    if not _PROVIDERS:
        return headers
    from opentelemetry import propagate, trace

    tracer = _PROVIDERS[0].get_tracer("skillpress")
    with tracer.start_as_current_span(
        f"{subject} publish",
        kind=trace.SpanKind.PRODUCER,
        attributes={"messaging.system": "nats", "messaging.destination.name": subject},
    ):
        carrier = dict(headers)
        propagate.inject(carrier)
    return carrier
