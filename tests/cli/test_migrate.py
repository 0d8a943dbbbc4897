"""Upgrades from the operator's side (#44.2): migrating is one explicit step, and a process that
meets a schema older than its release's (where it does not migrate) or newer (a newer release
migrated it) refuses to start in one line, never a traceback, and leaves the database as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli.test_up import home_env
from tests.cli_process import skillpress
from tests.workers.conftest import SPECS

pytestmark = pytest.mark.integration  # runs the command line as processes

HEAD = "0010"


def _run(home: Path, *args: str, **settings: str) -> tuple[int, list[str], str]:
    done = skillpress(*args, env=home_env(home, **settings), replace_env=True, timeout=120)
    return done.returncode, done.stderr.strip().splitlines(), done.stdout


def _stamp(home: Path) -> str | None:
    with sqlite3.connect(home / "skillpress.db") as db:
        row = db.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


def test_a_process_that_does_not_migrate_refuses_an_older_schema_until_migrate_runs(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    db = f"sqlite:///{home / 'skillpress.db'}"
    code, err, _ = _run(home, "versions", "pets", migrate_on_start="false")
    assert code == 2 and len(err) == 1, err
    assert err[0] == (
        f"error: the records at {db} are at schema (none) and this release needs {HEAD}: run"
        " `skillpress migrate` once, then start the processes (README: Upgrades and rollbacks)"
    )
    code, err, out = _run(home, "migrate", migrate_on_start="false")
    assert (code, out.strip()) == (0, f"migrated the records at {db} from schema (none) to {HEAD}")
    assert _stamp(home) == HEAD
    code, err, out = _run(home, "migrate")
    assert (code, out.strip()) == (0, f"the records at {db} are at schema {HEAD}: nothing to do")
    code, err, _ = _run(home, "versions", "pets", migrate_on_start="false")
    assert "schema" not in " ".join(err), err  # it starts; the skill is simply not there
    assert err[-1] == "error: no skill 'pets' (import one: skillpress import SPEC --skill pets)"


def test_every_process_refuses_a_database_a_newer_release_migrated_and_leaves_it_be(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert _run(home, "migrate")[0] == 0
    with sqlite3.connect(home / "skillpress.db") as db:
        db.execute("UPDATE alembic_version SET version_num = '0099_later'")
    said = (
        f"error: this release is older than the database: the records at"
        f" sqlite:///{home / 'skillpress.db'} are at schema 0099_later, which this release does"
        f" not know (its newest is {HEAD}); run the release that migrated them, or restore the"
        " backup taken before that upgrade (README: Upgrades and rollbacks)"
    )
    for args, settings in (
        (("migrate",), {}),
        (("versions", "pets"), {}),
        (("worker", "all"), {"nats_url": "nats://127.0.0.1:9"}),
        (("serve", "--port", "0"), {}),
    ):
        code, err, _ = _run(home, *args, **settings)
        assert (code, err[-1:]) == (2, [said]), (args, err)
        assert not any("Traceback" in line for line in err), err
    assert _stamp(home) == "0099_later"


def test_migrate_goes_down_for_a_rollback_and_back_up(tmp_path: Path) -> None:
    """Going below packs (0008) first writes each proposed version's files as blobs of their
    own, as the release before packs reads them: the rollback leaves nothing it cannot read."""
    home = tmp_path / "home"
    db = f"sqlite:///{home / 'skillpress.db'}"
    assert _run(home, "migrate")[0] == 0
    assert (
        _run(home, "import", str(SPECS / "oai-petstore-expanded.yaml"), "--skill", "pets")[0] == 0
    )
    with sqlite3.connect(home / "skillpress.db") as conn:
        (files_json,) = conn.execute("SELECT files_json FROM versions").fetchone()
    keys = json.loads(files_json).values()
    blobs = home / "blobs"
    assert not [k for k in keys if (blobs / k[:2] / k).exists()]  # proposed: in its pack alone
    code, _, out = _run(home, "migrate", "--to", "0006")
    assert (code, out.strip().splitlines()) == (
        0,
        [
            "writing each version's files as blobs of their own, as the older release reads them…",
            "  1 version(s) written",
            f"migrated the records at {db} from schema {HEAD} to 0006",
        ],
    )
    assert [(blobs / k[:2] / k).exists() for k in keys] == [True] * len(keys)
    assert _stamp(home) == "0006"
    code, err, _ = _run(home, "versions", "pets", migrate_on_start="false")
    assert code == 2 and "are at schema 0006 and this release needs 0010" in err[-1], err
    code, err, _ = _run(home, "migrate", "--to", "0100")
    assert (code, err[-1]) == (
        2,
        "error: this release has no schema '0100': it has 0001, 0002, 0003, 0004, 0005, 0006, 0007, 0008, 0009, 0010",
    )
    code, _, out = _run(home, "migrate")
    assert (code, out.strip(), _stamp(home)) == (
        0,
        f"migrated the records at {db} from schema 0006 to {HEAD}",
        HEAD,
    )
