"""The record store: SQLModel over SQLite (embedded default) or PostgreSQL (by URL), migrated by Alembic."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlmodel import Session, create_engine

from skillpress.services.errors import Retryable, Unavailable

__all__ = ["RecordStore", "RecordStoreUnavailable", "DuplicateRecord", "normalise_url"]

_MIGRATIONS = Path(__file__).parent / "migrations"


class RecordStoreUnavailable(Unavailable):
    """The database cannot be reached or opened."""


class DuplicateRecord(Retryable):
    """A record with the same identity exists already: a replica stored it first. Retried, the
    handler finds that record and goes on, so it is a race to try again, not a permanent fault."""


def normalise_url(url: str) -> str:
    """`postgresql://` → the psycopg 3 driver; other URLs as given."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


class RecordStore:
    def __init__(self, url: str) -> None:
        self.url = normalise_url(url)
        if self.url.startswith("sqlite:///"):
            db = Path(self.url[len("sqlite:///") :])
            db.parent.mkdir(parents=True, exist_ok=True)
            # the records hold approval values and fixed headers: the operator's alone (SQLite
            # gives its -wal and -shm files the database file's own mode)
            os.close(os.open(db, os.O_CREAT | os.O_RDONLY, 0o600))
            os.chmod(db, 0o600)
        self.engine: Engine = create_engine(self.url, pool_pre_ping=True)
        if self.url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)

    def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent). A store already there costs
        one query; otherwise one process migrates while any other started at the same moment
        waits for it (a file lock beside a SQLite database, an advisory lock in PostgreSQL)."""
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(_MIGRATIONS))
        head = ScriptDirectory.from_config(cfg).get_current_head()
        try:
            with self.engine.connect() as conn:
                if MigrationContext.configure(conn).get_current_revision() == head:
                    return
            with self._migration_lock(), self.engine.begin() as conn:
                if MigrationContext.configure(conn).get_current_revision() == head:
                    return  # another process migrated while this one waited
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except OperationalError as exc:
            raise RecordStoreUnavailable(
                f"cannot open the record store at {self.safe_url}: {exc.orig}"
            ) from None

    @contextmanager
    def _migration_lock(self) -> Iterator[None]:
        if self.url.startswith("sqlite:///"):
            import fcntl

            with open(self.url[len("sqlite:///") :] + ".migrate-lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        elif self.engine.dialect.name == "postgresql":
            from sqlalchemy import text

            with self.engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(7421001)"))
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(7421001)"))
        else:
            yield

    @property
    def safe_url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except IntegrityError as exc:
                session.rollback()
                raise DuplicateRecord(str(exc.orig).splitlines()[0]) from None
            except (OperationalError, InterfaceError) as exc:  # the database went away
                _quietly(session.rollback)
                first = str(exc.orig or exc).strip().splitlines()[0][:300]
                raise RecordStoreUnavailable(
                    f"the records at {self.safe_url} do not answer ({first})"
                ) from None
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        self.engine.dispose()


def _quietly(action: Callable[[], object]) -> None:
    try:
        action()
    except Exception:  # noqa: BLE001 (a rollback on a dead connection: nothing to undo)
        pass


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.close()
