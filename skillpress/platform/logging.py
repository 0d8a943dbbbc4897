"""structlog set-up: JSON lines when not a terminal, a readable console otherwise."""

from __future__ import annotations

import logging
import sys

import structlog

from skillpress.platform.tracing import trace_ids

__all__ = ["configure_logging", "get_logger"]


def configure_logging(fmt: str = "auto", level: str = "info") -> None:
    """skillpress's events, and every library's records (uvicorn's, nats-py's, FastStream's)
    through one renderer: one JSON object per line when JSON is asked for (an exception's
    traceback a field of it), a readable console otherwise."""
    as_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(sort_keys=True)
        if as_json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.typing.Processor] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        trace_ids,  # a line logged inside a trace names it (nothing when traces are off)
    ]
    if as_json:  # the console renderer draws tracebacks itself
        shared.append(structlog.processors.format_exc_info)
    threshold = getattr(logging, level.upper(), logging.INFO)
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, *shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    setattr(handler, _OURS, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    # libraries speak from warnings up (their info is chatter), everything when debugging
    root.setLevel(threshold if threshold <= logging.DEBUG else max(threshold, logging.WARNING))
    # urllib3 warns of each retry it makes (an S3 probe every few seconds made 141 lines while S3
    # was down); the blob store says once when S3 stops answering and once when it is back
    logging.getLogger("urllib3.connectionpool").setLevel(
        threshold if threshold <= logging.DEBUG else logging.ERROR
    )


_OURS = "skillpress_handler"  # marks the handler configure_logging adds (replaced, never doubled)


def get_logger(name: str, **bound: object) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name).bind(**bound)
    return logger
