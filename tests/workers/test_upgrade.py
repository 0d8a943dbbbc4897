"""A rolling upgrade on PostgreSQL and NATS, in the order README gives (#44.2): the next release's
`skillpress migrate` runs first (here: this release's migrations and one more, additive, as every
migration of ours is), while this release's workers keep running; a worker of the next release
starts beside them and the two handle a submission to its end together; a process of the older
release that starts now refuses in one line; and the rollback (`migrate --to` with the newer
release) lets it start again."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from sqlmodel import select

from skillpress.app.base.context import open_app
from skillpress.platform import records as records_module
from skillpress.platform.records import RecordStore
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import DeadLetter, Version
from skillpress.schemas.subjects import EVENTS
from tests.cli_process import COMMAND
from tests.workers.conftest import SPECS, settings_env, submit, watching, workers

pytestmark = pytest.mark.integration  # starts real servers

NEXT = '''"""The next release's migration: a column it reads and this release never does.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.add_column(sa.Column("next_release_note", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("skills") as batch:
        batch.drop_column("next_release_note")
'''


def _next_release(tmp: Path) -> Path:
    migrations = tmp / "next-migrations"
    shutil.copytree(
        records_module._MIGRATIONS, migrations, ignore=shutil.ignore_patterns("__pycache__")
    )
    (migrations / "versions" / "0011_next.py").write_text(NEXT)
    return migrations


def _older_worker(settings: Settings) -> subprocess.CompletedProcess[str]:
    """A worker of this (now older) release starting: a process, as Kubernetes would restart one."""
    return subprocess.run(
        [*COMMAND, "worker", "all"],
        env=settings_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_a_rolling_upgrade_keeps_both_releases_working_and_an_older_start_is_refused(
    settings: Settings, tmp_path: Path
) -> None:
    assert settings.nats_url
    older = open_app(settings)  # this release's workers, started before the upgrade
    spec = (SPECS / "oai-petstore-expanded.yaml").read_bytes()
    release = pytest.MonkeyPatch()  # the next release's migrations, while it is patched in
    try:
        async with (
            watching(settings.nats_url) as (watcher, nc),
            workers(older, settings.nats_url, ["fetch", "parse", "categorize"]),
        ):
            # the upgrade's first step: the next release's `skillpress migrate`
            release.setattr(records_module, "_MIGRATIONS", _next_release(tmp_path))
            store = RecordStore(settings.records_url)
            assert store.migrate().current == "0010" and store.schema().current == "0011"
            store.close()
            newer = open_app(settings)  # a process of the next release: its schema, it starts
            async with workers(newer, settings.nats_url, ["guess-approvals", "render"]):
                blob = older.blobs.put(spec)
                event = SpecSubmitted(submission="u1", skill="pets", blob=blob, created_by="t")
                await submit(nc, event, "submitted:u1")
                proposed = await watcher.wait_for(
                    EVENTS.version_proposed, timeout=90, submission="u1"
                )
                release.undo()  # an older process from here on
                refused = _older_worker(settings)
            newer.close()
    finally:
        release.undo()
    with older.records.session() as s:
        assert [v.id for v in s.exec(select(Version)).all()] == [proposed["version_id"]]
        assert s.exec(select(DeadLetter)).all() == []
    older.close()
    err = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and not any("Traceback" in line for line in err), err
    assert err[-1].startswith(
        "error: this release is older than the database: the records at postgresql"
    ), err
    assert "are at schema 0011, which this release does not know (its newest is 0010)" in err[-1]
    # the rollback: the next release takes the schema back down, and the older one starts again
    with pytest.MonkeyPatch.context() as again:
        again.setattr(records_module, "_MIGRATIONS", _next_release(tmp_path / "again"))
        store = RecordStore(settings.records_url)
        assert store.migrate("0010").current == "0011"
        store.close()
    open_app(settings).close()
