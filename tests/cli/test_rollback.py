"""A rollback that starts (#57.6): the previous release itself (the source the round before this
one left, kept in the fixtures) runs on a home this release made, after this release's
`skillpress migrate --to` (the schema the older release names as its newest), as README's
"Upgrades and rollbacks" gives it: it lists the versions, its `serve` starts, and the operator
token this release minted signs it in. The round before found the older
`serve` refusing to start (the token file's format had changed without a way back); this test
is what would have said so."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.cli.test_up import _cli as run
from tests.cli.test_up import home_env

pytestmark = pytest.mark.integration  # runs two releases as processes

ROOT = Path(__file__).parents[2]
SPEC = ROOT / "tests" / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
# the previous release: the last commit before this round's first schema change (0009, the
# askers of an approval); its newest schema is 0008
RELEASE = ROOT / "tests" / "fixtures" / "releases" / "previous.tar.gz"


def _previous_release(tmp: Path) -> Path:
    """The previous release's tree (tests/fixtures/releases/README.md says how it was made)."""
    tree = tmp / "previous"
    tree.mkdir()
    with tarfile.open(RELEASE) as archive:
        archive.extractall(tree, filter="tar")
    return tree


def _newest_schema(tree: Path) -> str:
    versions = tree / "services" / "platform" / "migrations" / "versions"
    return max(p.name[:4] for p in versions.glob("[0-9][0-9][0-9][0-9]_*.py"))


def _older(tree: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`skillpress ARGS` as the previous release, on `home` (its tree first on the path, the
    same installed dependencies)."""
    env = home_env(home) | {"PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-m", "skillpress.services.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tree,
    )


def test_the_previous_release_starts_after_a_rollback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = run(home, "import", str(SPEC), "--skill", "pets")
    assert made.returncode == 0, made.stderr
    version = made.stdout.split("proposed pets version ", 1)[1][:12]
    assert run(home, "publish", "pets", version).returncode == 0
    minted = run(home, "token", "add", "admin")
    assert minted.returncode == 0, minted.stderr
    token = minted.stdout.splitlines()[0].strip()
    previous = _previous_release(tmp_path)
    target = _newest_schema(previous)
    assert target == "0008"
    # the older release refuses a database newer than it, in one line
    refused = _older(previous, home, "versions", "pets")
    assert refused.returncode != 0 and "older than the database" in refused.stderr, refused.stderr
    # README step 3: with the newer release, migrate down to the older release's newest
    down = run(home, "migrate", "--to", target)
    assert down.returncode == 0, down.stderr
    assert down.stdout.strip().endswith(f"from schema 0010 to {target}"), down.stdout
    listed = _older(previous, home, "versions", "pets")
    assert listed.returncode == 0, listed.stderr
    assert re.match(rf"{version}\s+\*\s+live\s", listed.stdout), listed.stdout
    # its serve starts, and the token the newer release minted signs in
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillpress.services.cli.main", "serve"],
        env=home_env(home, api_port="0") | {"PYTHONPATH": str(previous)},
        cwd=previous,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        base = None
        for line in proc.stdout:
            seen.append(line)
            found = re.search(r"console and API at (http://\S+) ", line)
            if found:
                base = found.group(1)
                break
        assert base is not None, "".join(seen[-20:])
        headers = {"Authorization": f"Bearer {token}"}
        skills = httpx.get(f"{base}/v1/skills", headers=headers, timeout=30)
        assert skills.status_code == 200, skills.text
        assert [s["slug"] for s in skills.json()] == ["pets"]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
    # and forward again: this release's migrate, then this release reads what the older one left
    up = run(home, "migrate")
    assert up.returncode == 0, up.stderr
    again = run(home, "versions", "pets")
    assert again.returncode == 0 and again.stdout.startswith(version), again.stdout
