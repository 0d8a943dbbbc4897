"""Whether this process can do its work: each store asked the cheapest question it answers (the
records a query, the blob store whether a key exists; JetStream is `bus.pipeline_ready`'s). What a
probe reads: never a secret, never an address with its credentials."""

from __future__ import annotations

from sqlalchemy import text

from skillpress.app.base.context import AppContext

__all__ = ["readiness"]

_PROBE_KEY = "0" * 64  # a blob key no content has: `exists` answers without reading anything


def readiness(ctx: AppContext) -> dict[str, str]:
    """Each store → "ok", or why it is not (one line)."""
    checks: dict[str, str] = {}
    try:
        with ctx.records.session() as s:
            s.connection().execute(text("SELECT 1"))
        checks["records"] = "ok"
    except Exception as exc:  # noqa: BLE001 - a probe reports every failure, named
        checks["records"] = _said(exc)
    try:
        ctx.blobs.exists(_PROBE_KEY)
        checks["blobs"] = "ok"
    except Exception as exc:  # noqa: BLE001
        checks["blobs"] = _said(exc)
    return checks


def _said(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"{type(exc).__name__}: {first[:300]}"
