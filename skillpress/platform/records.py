"""The record store: SQLModel over SQLite (embedded default) or PostgreSQL (by URL), migrated by Alembic."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlmodel import Session, create_engine

from skillpress.errors import Permanent, Retryable, Unavailable

__all__ = [
    "RecordStore",
    "RecordStoreUnavailable",
    "DuplicateRecord",
    "NoSuchSchema",
    "SchemaAhead",
    "SchemaBehind",
    "SchemaState",
    "normalise_url",
]

_MIGRATIONS = Path(__file__).parent / "migrations"


class RecordStoreUnavailable(Unavailable):
    """The database cannot be reached or opened."""


class DuplicateRecord(Retryable):
    """A record with the same identity exists already: a replica stored it first. Retried, the
    handler finds that record and goes on, so it is a race to try again, not a permanent fault."""


class SchemaBehind(Permanent):
    """The database's schema is older than this release's and this process does not migrate
    it: `skillpress migrate` (one explicit step, before the new release's processes start)."""

    problem = "schema-behind"


class SchemaAhead(Permanent):
    """The database was migrated by a newer release than this one: this release cannot know
    what its tables mean. Run the newer release, or restore the backup taken before it."""

    problem = "schema-ahead"


class NoSuchSchema(Permanent):
    """A schema asked for by name that this release's migrations do not have."""

    problem = "no-such-schema"


@dataclass(frozen=True)
class SchemaState:
    """Where the database's schema is against this release's migrations."""

    current: str | None  # None: nothing migrated yet
    head: str  # this release's newest migration
    known: bool  # whether this release has `current` among its migrations

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head


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
            # (created only where missing: closing a descriptor of a database this process
            # already has open drops every POSIX lock SQLite holds on it, across all its threads)
            if not db.exists():
                try:
                    os.close(os.open(db, os.O_CREAT | os.O_EXCL | os.O_RDONLY, 0o600))
                except FileExistsError:
                    pass  # another process created it this instant
            os.chmod(db, 0o600)
        sqlite = self.url.startswith("sqlite")
        # SQLite: a writer waits up to 30 s for another process's write (the library's 5 s is
        # shorter than a loaded machine's burst of concurrent callers in one home)
        args: dict[str, Any] = {"timeout": 30.0} if sqlite else {}
        self.engine: Engine = create_engine(self.url, pool_pre_ping=True, connect_args=args)
        if sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)

    def _scripts(self) -> tuple[Config, ScriptDirectory]:
        cfg = Config()
        cfg.set_main_option("script_location", str(_MIGRATIONS))
        return cfg, ScriptDirectory.from_config(cfg)

    def schema(self) -> SchemaState:
        """Where the database's schema is against this release's migrations (one query)."""
        from alembic.runtime.migration import MigrationContext

        _, scripts = self._scripts()
        head = scripts.get_current_head() or ""
        try:
            with self.engine.connect() as conn:
                current = MigrationContext.configure(conn).get_current_revision()
        except OperationalError as exc:
            raise RecordStoreUnavailable(
                f"cannot open the record store at {self.safe_url}: {exc.orig}"
            ) from None
        known = current is None or current in {r.revision for r in scripts.walk_revisions()}
        return SchemaState(current, head, known)

    def _refuse_ahead(self, state: SchemaState) -> None:
        if not state.known:
            raise SchemaAhead(
                f"this release is older than the database: the records at {self.safe_url} are at"
                f" schema {state.current}, which this release does not know (its newest is"
                f" {state.head}); run the release that migrated them, or restore the backup taken"
                " before that upgrade (README: Upgrades and rollbacks)"
            )

    def check(self, migrate: bool) -> SchemaState:
        """The schema as this process needs it: up to date, or migrated here when `migrate` (a
        SQLite file of one machine's); refused in one line when it is behind and this process
        does not migrate (SchemaBehind) or when a newer release migrated it (SchemaAhead)."""
        state = self.schema()
        if state.up_to_date:
            return state
        self._refuse_ahead(state)
        if not migrate:
            raise SchemaBehind(
                f"the records at {self.safe_url} are at schema {state.current or '(none)'} and this"
                f" release needs {state.head}: run `skillpress migrate` once, then start the"
                " processes (README: Upgrades and rollbacks)"
            )
        return self.migrate()

    def migrate(self, to: str | None = None) -> SchemaState:
        """Bring the schema to the newest migration, or to `to` (down, for a rollback, with the
        release that migrated up), idempotently; returns the state found before. A store already
        there costs one query; otherwise one process migrates while any other started at the
        same moment waits for it (a file lock beside a SQLite database, an advisory lock in
        PostgreSQL). A database a newer release migrated is refused (SchemaAhead), never
        touched; a `to` this release does not have is refused (NoSuchSchema names those it has)."""
        from alembic.runtime.migration import MigrationContext

        cfg, scripts = self._scripts()
        state = self.schema()
        order = [r.revision for r in scripts.walk_revisions()]  # newest first
        target = to or state.head
        if target not in order:
            raise NoSuchSchema(
                f"this release has no schema {target!r}: it has {', '.join(reversed(order))}"
            )
        if state.current == target:
            return state
        self._refuse_ahead(state)
        down = state.current is not None and order.index(target) > order.index(state.current)
        try:
            with self._migration_lock(), self.engine.begin() as conn:
                if MigrationContext.configure(conn).get_current_revision() == target:
                    return state  # another process migrated while this one waited
                cfg.attributes["connection"] = conn
                (command.downgrade if down else command.upgrade)(cfg, target)
        except OperationalError as exc:
            raise RecordStoreUnavailable(
                f"cannot open the record store at {self.safe_url}: {exc.orig}"
            ) from None
        return state

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
    # ask first: a database already in WAL (every one after its first open) needs no switch,
    # and a switch is a write every new connection would otherwise contend for
    if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        cur.execute("PRAGMA journal_mode=WAL")
    cur.close()
