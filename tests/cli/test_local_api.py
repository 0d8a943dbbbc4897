"""Command lines beside a running `skillpress up` read and change through its API (no records
stack imported, so each answers in a fraction of a second), with the same output as working
on the records directly; the link is refused when it is stale or for other storage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.platform.local_api import read_link, storage_fingerprint, write_link
from tests.cli.test_up import _start, _stop, home_env
from tests.conftest import SPECS

# starts `skillpress up` (NATS, the API) and runs commands beside it
pytestmark = pytest.mark.integration

# run a command, and say on stderr whether the records stack was imported
_PROBE = (
    "import sys, runpy; sys.argv = ['skillpress', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('skillpress.cli.main', run_name='__main__')\n"
    "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
    "print('RECORDS-STACK' if 'sqlalchemy' in sys.modules else 'NO-RECORDS-STACK', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_commands_beside_a_running_up_go_through_its_api_with_the_same_output(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    proc, _ = _start(home)
    try:
        link = json.loads((home / "api.json").read_text())
        assert oct((home / "api.json").stat().st_mode & 0o777) == "0o600"
        assert link["operator"] == "cli" and link["pid"] == proc.pid
        # the run's own token is nowhere on disk but in the link
        assert link["token"] not in (home / "operator-tokens").read_text()
        remote = home_env(home)
        # the same store, named explicitly: another fingerprint, so the records are opened here
        local = remote | {"SKILLPRESS_DATABASE_URL": f"sqlite:///{home / 'skillpress.db'}"}
        spec = str(SPECS / "oai-petstore-expanded.yaml")
        made = _cli(remote, "import", spec, "--skill", "pets")
        assert made.returncode == 0, made.stderr

        added = _cli(remote, "annotate", "pets", "-o", "find_pets", "--note", "Page with limit.")
        assert added.returncode == 0, added.stderr
        assert "NO-RECORDS-STACK" in added.stderr
        assert "(note on operation:find_pets); proposed version" in added.stdout

        for args in (
            ("versions", "pets"),
            ("versions", "pets", "--json"),
            ("annotations", "pets"),
            ("annotations", "pets", "--all", "--json"),
            ("show", "pets"),
            ("show", "pets", "--json"),
            ("show", "pets", "find_pets.md"),
            ("show", "pets", "find_pets.md", "--json"),
            ("diff", "pets"),
            ("diff", "pets", "--json"),
        ):
            through = _cli(remote, *args)
            direct = _cli(local, *args)
            assert through.returncode == direct.returncode == 0, (args, through.stderr)
            assert "NO-RECORDS-STACK" in through.stderr, args
            assert "NO-RECORDS-STACK" not in direct.stderr, args
            assert through.stdout == direct.stdout, args
        assert "Page with limit." in _cli(remote, "show", "pets", "find_pets.md").stdout

        # refusals keep their words and exit codes either way
        for args in (("versions", "nope"), ("show", "pets", "nope.md")):
            through, direct = _cli(remote, *args), _cli(local, *args)
            assert through.returncode == direct.returncode == 2
            assert through.stderr.splitlines()[0] == direct.stderr.splitlines()[0]
        refused = _cli(remote, "annotate", "pets", "-o", "nope", "--note", "x")
        assert refused.returncode == 2
        assert "the skill has no operation 'nope'" in refused.stderr

        for args in (("rekey", "nope", "-o", "find_pets"), ("retire", "nope")):
            through, direct = _cli(remote, *args), _cli(local, *args)
            assert through.returncode == direct.returncode == 2, (args, through.stderr)
            assert "NO-RECORDS-STACK" in through.stderr
            assert through.stderr.splitlines()[0] == direct.stderr.splitlines()[0]
        note = json.loads(_cli(remote, "annotations", "pets", "--json").stdout)[0]["id"]
        retired = _cli(remote, "retire", note, "--json")
        assert retired.returncode == 0 and "NO-RECORDS-STACK" in retired.stderr, retired.stderr
        without = json.loads(retired.stdout)["proposal"]["version_id"]
        shown = _cli(local, "show", "pets", "find_pets.md", "--version", without[:12]).stdout
        assert "Page with limit." not in shown and "## Parameters" in shown

        newest = json.loads(_cli(remote, "versions", "pets", "--json").stdout)[0]["version_id"]
        published = _cli(remote, "publish", "pets", newest[:10])
        assert published.returncode == 0 and "NO-RECORDS-STACK" in published.stderr
        assert published.stdout.startswith(f"published pets version {newest[:12]}: 8 files")
        assert "* live" in _cli(local, "versions", "pets").stdout
        refused = _cli(remote, "publish", "pets", "ffffffffff")
        assert refused.returncode == 2 and "ffffffffff" in refused.stderr

        # another name for the change: made directly, recorded under that name
        by = _cli(remote, "annotate", "pets", "-o", "find_pets", "--note", "B.", "--by", "alice")
        assert by.returncode == 0 and "NO-RECORDS-STACK" not in by.stderr
        listed = json.loads(_cli(remote, "annotations", "pets", "--all", "--json").stdout)
        assert {a["created_by"] for a in listed} >= {"cli", "alice"}
    finally:
        _stop(proc)
    assert not (home / "api.json").exists()


def test_a_stale_link_or_other_storage_is_not_followed(tmp_path: Path) -> None:
    env = home_env(tmp_path)
    write_link(tmp_path, "http://127.0.0.1:1", "t", "cli")
    raw = json.loads((tmp_path / "api.json").read_text())
    assert read_link(env) is not None  # this process is alive, same storage
    assert read_link(env | {"SKILLPRESS_DATABASE_URL": "postgresql://db/x"}) is None
    (tmp_path / "api.json").write_text(json.dumps(raw | {"pid": 2**22 + 12345}))
    assert read_link(env) is None  # no such process
    (tmp_path / "api.json").write_text("{not json")
    assert read_link(env) is None
    assert storage_fingerprint(env) != storage_fingerprint(env | {"SKILLPRESS_S3_BUCKET": "b"})


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "127.0.0.1"])
def test_a_wildcard_listener_is_reached_on_loopback(host: str) -> None:
    from skillpress.api.server import Listening

    reached = Listening(host, 8787).loopback
    assert reached in ("http://127.0.0.1:8787", "http://[::1]:8787")
