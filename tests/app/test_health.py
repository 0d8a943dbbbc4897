"""Readiness names the dependency that does not answer (#44.1, part): a records store that is
gone, a blob store that cannot be read, a pipeline connection that is down."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.records.health import readiness
from skillpress.platform.settings import Settings


class _Down:
    is_connected = False


class _Up:
    is_connected = True


def test_readiness_names_what_does_not_answer(tmp_path: Path) -> None:
    ctx: AppContext = open_app(Settings(home=tmp_path / "home"))
    try:
        assert readiness(ctx, _Up(), True) == {"records": "ok", "blobs": "ok", "nats": "ok"}
        assert readiness(ctx, None, False) == {"records": "ok", "blobs": "ok"}
        assert readiness(ctx, _Down(), True)["nats"] == "the pipeline's connection is down"
        # the database file's folder gone: no connection can be made
        ctx.records.engine.dispose()
        gone = ctx.records.engine.url.set(database=str(tmp_path / "gone" / "no.db"))
        ctx.records.engine = create_engine(gone)
        said = readiness(ctx, _Up(), True)
        assert said["records"] != "ok" and said["records"].startswith("RecordStoreUnavailable")
        assert (said["blobs"], said["nats"]) == ("ok", "ok")
    finally:
        ctx.close()
