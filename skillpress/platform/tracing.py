"""OpenTelemetry traces across a submission's stages, off unless an OTLP endpoint is configured.

The standard SDK and its exporter read the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT` or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
`OTEL_TRACES_SAMPLER`, …); `OTEL_SDK_DISABLED=true` turns it off again. A message carries its
trace in the W3C `traceparent` header (FastStream's telemetry middleware on the workers, `inject`
where `serve` publishes), so every stage of one submission is one trace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = [
    "enabled",
    "inject",
    "mark_span",
    "start_tracing",
    "stop_tracing",
    "trace_ids",
    "tracing_started",
]

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


def start_tracing(role: str, stages: tuple[str, ...] = ()) -> Any | None:
    """The process's TracerProvider, exporting over OTLP/HTTP in batches and set as the global
    one (named `skillpress-<role>` unless OTEL_SERVICE_NAME says otherwise, its replica as
    `service.instance.id`, the stages a worker process runs as `skillpress.workers`); None when
    traces are off. Started once per process."""
    if not enabled():
        return None
    if _PROVIDERS:
        return _PROVIDERS[0]
    import socket

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or f"skillpress-{role}"
    resource = Resource.create(
        {
            SERVICE_NAME: name,
            # which replica: a worker's spans are told apart by the process that made them
            "service.instance.id": f"{socket.gethostname()}:{os.getpid()}",
            **({"skillpress.workers": ",".join(stages)} if stages else {}),
        }
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _PROVIDERS.append(provider)
    return provider


def tracing_started() -> bool:
    """Whether this process's TracerProvider runs (started, not yet stopped)."""
    return bool(_PROVIDERS)


def stop_tracing() -> None:
    """Send what is buffered and stop (a stopping process's last spans are not lost)."""
    while _PROVIDERS:
        _PROVIDERS.pop().shutdown()


def inject(headers: dict[str, str], subject: str, **ids: Any) -> dict[str, str]:
    """`headers` with the trace of a new producer span for a message sent on `subject`, the ids
    the message carries on it (nothing added when traces are off)."""
    if not _PROVIDERS:
        return headers
    from opentelemetry import propagate, trace

    tracer = _PROVIDERS[0].get_tracer("skillpress")
    with tracer.start_as_current_span(
        f"{subject} publish",
        kind=trace.SpanKind.PRODUCER,
        attributes={
            "messaging.system": "nats",
            "messaging.destination.name": subject,
            **{f"skillpress.{k}": str(v) for k, v in ids.items() if v},
        },
    ):
        carrier = dict(headers)
        propagate.inject(carrier)
    return carrier


def mark_span(**ids: Any) -> None:
    """The ids a message carries (submission, revision, version, skill) and its stage on the
    span now current (a stage's consume span): a trace found by the submission it served."""
    if not _PROVIDERS:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({f"skillpress.{k}": str(v) for k, v in ids.items() if v})


def trace_ids(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: the current trace and span ids on every line logged inside one
    (a log line found from its trace, and back)."""
    if not _PROVIDERS:
        return event
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event.setdefault("trace_id", format(context.trace_id, "032x"))
        event.setdefault("span_id", format(context.span_id, "016x"))
    return event
