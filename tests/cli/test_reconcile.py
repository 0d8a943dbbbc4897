"""The records are the truth of what is live (#44.3): a live pointer lost from NATS (as after
restoring an older NATS) is said by a follower instead of an empty folder, found and repaired by
`skillpress reconcile`, and repaired by `up`/`serve` as they start; and the backup README gives
(the records and the blobs; NATS rebuilt) restores to the same followed files."""

from __future__ import annotations

import asyncio
import filecmp
import shutil
import sqlite3
from pathlib import Path

import pytest

from skillpress.app.base.bus import running_up
from skillpress.platform.broker import LIVE_BUCKET, connect, nats_options
from skillpress.platform.settings import Settings
from tests.cli.test_up import _cli as run
from tests.cli.test_up import _start, _stop

pytestmark = pytest.mark.integration  # starts real servers

SPEC = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


def _lose_pointer(home: Path, slug: str) -> None:
    settings = Settings(home=home)
    url = running_up(settings)
    assert url

    async def go() -> None:
        nc = await connect(url, options=nats_options(settings, url))
        try:
            kv = await nc.jetstream().key_value(LIVE_BUCKET)
            await kv.purge(slug)
        finally:
            await nc.close()

    asyncio.run(go())


def _same_tree(a: Path, b: Path) -> None:
    compared = filecmp.dircmp(a, b)
    assert not (compared.left_only or compared.right_only or compared.diff_files), compared.report()
    for sub in compared.common_dirs:
        _same_tree(a / sub, b / sub)


def test_a_lost_live_pointer_is_said_repaired_and_restored_from_a_backup(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc, _ = _start(home)
    try:
        made = run(home, "import", str(SPEC), "--skill", "pets")
        version = made.stdout.split("proposed pets version ", 1)[1][:12]
        assert run(home, "publish", "pets", version).returncode == 0
        again = run(home, "publish", "pets", version)
        assert again.stdout.startswith(
            f"published pets version {version} (live already: its live pointer written again)"
        ), again.stdout
        assert run(home, "follow", str(tmp_path / "first"), "--once").returncode == 0
        _lose_pointer(home, "pets")
        lost = run(home, "follow", str(tmp_path / "lost"), "--once")
        assert lost.returncode == 1
        assert lost.stderr.strip().splitlines()[-1] == (
            f"pets: the records say version {version} is live, but NATS has no live pointer for"
            " it (restored from an older backup?): run `skillpress reconcile`"
        )
        assert not (tmp_path / "lost" / "pets").exists()
        checked = run(home, "reconcile", "--check")
        assert (checked.returncode, checked.stdout.strip()) == (
            1,
            f"pets: NATS had no live pointer, the records say {version} is live",
        )
        repaired = run(home, "reconcile")
        assert repaired.stdout.strip() == (
            f"pets: NATS had no live pointer, the records say {version} is live:"
            f" pointer written ({version})"
        )
        agreed = run(home, "reconcile", "--check")
        assert (agreed.returncode, agreed.stdout.strip()) == (
            0,
            "every live pointer says what the records say",
        )
        assert run(home, "follow", str(tmp_path / "repaired"), "--once").returncode == 0
        _same_tree(tmp_path / "first" / "pets", tmp_path / "repaired" / "pets")
    finally:
        _stop(proc)
    # the backup README gives: the records (SQLite's online backup) and the blobs
    backup = tmp_path / "backup"
    backup.mkdir()
    with sqlite3.connect(home / "skillpress.db") as db, sqlite3.connect(backup / "db") as out:
        db.backup(out)
    shutil.copytree(home / "blobs", backup / "blobs")
    shutil.rmtree(home)  # the machine lost, NATS's store with it
    home.mkdir(mode=0o700)
    shutil.copy(backup / "db", home / "skillpress.db")
    shutil.copytree(backup / "blobs", home / "blobs")
    proc, _ = _start(home)  # a new NATS: `up` writes the pointers from the records as it starts
    try:
        restored = run(home, "follow", str(tmp_path / "restored"), "--once")
        assert restored.returncode == 0, restored.stderr
        _same_tree(tmp_path / "first" / "pets", tmp_path / "restored" / "pets")
    finally:
        _stop(proc)
