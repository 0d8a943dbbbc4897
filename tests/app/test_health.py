"""Readiness names the store that does not answer (#44.1, part): a records store that is gone, a
blob store that cannot be read (JetStream's readiness, the stream and the consumers, is asked of
a real nats-server: tests/api/test_stream_away.py, tests/workers/test_probes.py)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.records.health import readiness
from skillpress.platform.settings import Settings


def test_readiness_names_what_does_not_answer(tmp_path: Path) -> None:
    ctx: AppContext = open_app(Settings(home=tmp_path / "home"))
    try:
        assert readiness(ctx) == {"records": "ok", "blobs": "ok"}
        # the database file's folder gone: no connection can be made
        ctx.records.engine.dispose()
        gone = ctx.records.engine.url.set(database=str(tmp_path / "gone" / "no.db"))
        ctx.records.engine = create_engine(gone)
        said = readiness(ctx)
        assert said["records"] != "ok" and said["records"].startswith("RecordStoreUnavailable")
        assert said["blobs"] == "ok"
    finally:
        ctx.close()
