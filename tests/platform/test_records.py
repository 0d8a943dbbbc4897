"""One contract for the record store, run on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import select

from skillpress.platform.records import (
    DuplicateRecord,
    RecordStore,
    RecordStoreUnavailable,
)
from skillpress.schemas.records import Skill, Source, SourceRevision

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    if request.param == "sqlite":
        store = RecordStore(f"sqlite:///{tmp_path / 'records.db'}")
    else:
        base = request.getfixturevalue("postgres_url")
        name = "t_" + uuid.uuid4().hex[:12]
        admin = RecordStore(base)
        with admin.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.close()
        store = RecordStore(base.rsplit("/", 1)[0] + "/" + name)
    store.migrate()
    yield store
    store.close()


def _skill(records: RecordStore, slug: str = "pets") -> str:
    now = datetime.now(UTC)
    with records.session() as s:
        s.add(Skill(id=f"sk-{slug}", slug=slug, title="Pets", created_at=now))
        s.add(Source(id=f"src-{slug}", skill_id=f"sk-{slug}", kind="upload"))
    return f"src-{slug}"


def test_migrations_are_idempotent(records: RecordStore) -> None:
    records.migrate()
    with records.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0010"


def test_the_migrated_tables_are_the_models(records: RecordStore) -> None:
    from sqlalchemy import inspect
    from sqlmodel import SQLModel

    import skillpress.schemas.records  # noqa: F401  (registers the tables)

    found = inspect(records.engine)
    for table in SQLModel.metadata.sorted_tables:
        columns = {c["name"] for c in found.get_columns(table.name)}
        assert columns == {c.name for c in table.columns}, table.name


def test_a_revision_of_the_same_bytes_is_refused_as_duplicate(records: RecordStore) -> None:
    source = _skill(records)
    now = datetime.now(UTC)
    with records.session() as s:
        s.add(
            SourceRevision(
                id="r1", source_id=source, spec_sha256="a" * 64, fetched_at=now, created_by="t"
            )
        )
    with pytest.raises(DuplicateRecord), records.session() as s:
        s.add(
            SourceRevision(
                id="r2", source_id=source, spec_sha256="a" * 64, fetched_at=now, created_by="t"
            )
        )
    with records.session() as s:
        rows = s.exec(select(SourceRevision)).all()
    assert [r.id for r in rows] == ["r1"], "the failed insert left nothing behind"


def test_refusal_reason_round_trips(records: RecordStore) -> None:
    source = _skill(records, "refused")
    reason = "duplicate key 'paths' at lines 3 and 4: a document with duplicate keys is ambiguous; remove one"
    with records.session() as s:
        s.add(
            SourceRevision(
                id="rr",
                source_id=source,
                spec_sha256="b" * 64,
                fetched_at=datetime.now(UTC),
                created_by="t",
                status="refused",
                refusal_reason=reason,
            )
        )
    with records.session() as s:
        got = s.get(SourceRevision, "rr")
    assert got is not None and got.status == "refused" and got.refusal_reason == reason


def test_unreachable_database_is_a_specific_error() -> None:
    from skillpress.platform.local_processes import free_port

    store = RecordStore(f"postgresql://nobody@127.0.0.1:{free_port()}/none?connect_timeout=2")
    with pytest.raises(RecordStoreUnavailable, match="cannot open the record store"):
        store.migrate()


def test_the_home_and_the_records_are_the_operators_alone(tmp_path: Path) -> None:
    import stat

    from skillpress.app.base.context import open_app
    from skillpress.platform.settings import Settings

    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    ctx = open_app(Settings(home=home))
    try:
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        assert stat.S_IMODE((home / "skillpress.db").stat().st_mode) == 0o600
    finally:
        ctx.close()


def test_opening_the_store_again_keeps_the_locks_this_process_holds(tmp_path: Path) -> None:
    """A second store on the same SQLite file in one process (a call opening its context while
    another call reads) must not drop the first one's locks: another process could then switch
    the journal or delete the WAL under it ("database is locked" seen in CI with MCP calls)."""
    import subprocess
    import sys

    db = tmp_path / "records.db"
    first = RecordStore(f"sqlite:///{db}")
    first.migrate()
    with first.engine.connect() as reading:
        reading.execute(text("SELECT version_num FROM alembic_version")).all()
        RecordStore(f"sqlite:///{db}").close()
        probe = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=0.2)\n"
            "try: print(c.execute('PRAGMA journal_mode=DELETE').fetchone()[0])\n"
            "except sqlite3.OperationalError as e: print(e)"
        )
        said = subprocess.run(
            [sys.executable, "-c", probe, str(db)], capture_output=True, text=True, check=True
        ).stdout.strip()
    first.close()
    assert said == "database is locked", said


def test_a_schema_behind_or_ahead_is_refused_and_never_touched(records: RecordStore) -> None:
    """#44.2 on both databases: a process that does not migrate refuses an older schema, and no
    process (nor `migrate`) touches one a newer release stamped."""
    from skillpress.platform.records import SchemaAhead, SchemaBehind

    assert records.check(migrate=False).up_to_date
    with records.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0006'"))
    behind = records.schema()
    assert (behind.current, behind.head, behind.known) == ("0006", "0010", True)
    with pytest.raises(SchemaBehind, match="are at schema 0006 and this release needs 0010"):
        records.check(migrate=False)
    with records.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0042'"))
    for attempt in (lambda: records.check(migrate=True), records.migrate):
        with pytest.raises(SchemaAhead, match="this release is older than the database"):
            attempt()
    with records.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0042"
