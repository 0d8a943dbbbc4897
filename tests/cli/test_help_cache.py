"""`skillpress --help` from the entry point's cache: the same text the full command line prints,
without building the command tree, and never a stale one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.cli import entry

pytestmark = pytest.mark.integration  # the command line as a process (tests/conftest.py)

# the entry point as the installed `skillpress` runs it; says on stderr whether typer was loaded
ENTRY = (
    "import sys\n"
    "from skillpress.cli.entry import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    sys.stdout.flush()\n"
    "    sys.stderr.write('typer loaded' if 'typer' in sys.modules else 'typer not loaded')\n"
)
# the full command line, as `skillpress` (the name its usage lines print)
FULL = "import sys\nsys.argv[0] = 'skillpress'\nfrom skillpress.cli.main import main\nmain()\n"
FORMS = [["--help"], ["derive", "--help"], ["token", "add", "--help"], ["workflow", "--help"]]


def _env(cache: Path, columns: int = 100) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "COLUMNS": str(columns)}


def _entry(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, env=env, timeout=60
    )


def _full(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", FULL, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("args", FORMS, ids=lambda a: " ".join(a))
def test_help_is_the_full_command_lines_text_then_comes_from_the_cache(
    tmp_path: Path, args: list[str]
) -> None:
    env = _env(tmp_path / "cache")
    expected = _full(args, env)
    assert expected.startswith("Usage: skillpress")
    first = _entry(args, env)
    assert (first.returncode, first.stdout, first.stderr) == (0, expected, "typer loaded")
    [kept] = (tmp_path / "cache" / "skillpress" / "help").iterdir()
    assert kept.name == "_".join(a.strip("-") for a in args) + ".txt"
    assert kept.read_text().endswith("\n" + expected)
    again = _entry(args, env)
    assert (again.returncode, again.stdout, again.stderr) == (0, expected, "typer not loaded")


def test_a_stale_or_other_width_entry_is_never_printed(tmp_path: Path) -> None:
    env = _env(tmp_path / "cache", columns=100)
    assert _entry(["derive", "--help"], env).stderr == "typer loaded"
    [kept] = (tmp_path / "cache" / "skillpress" / "help").iterdir()
    key, _, text = kept.read_text().partition("\n")
    kept.write_text(key.replace("columns=100", "columns=100 (an older tree)") + "\nstale text\n")
    rerun = _entry(["derive", "--help"], env)
    assert (rerun.stdout, rerun.stderr) == (text, "typer loaded")
    assert kept.read_text() == f"{key}\n{text}"
    narrow = _env(tmp_path / "cache", columns=60)
    wrapped = _entry(["derive", "--help"], narrow)
    assert wrapped.stderr == "typer loaded" and wrapped.stdout == _full(
        ["derive", "--help"], narrow
    )
    assert wrapped.stdout != text


def test_the_key_follows_every_source_file_and_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "90")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "main.py").write_text("x = 1\n")
    (tmp_path / "app.py").write_text("y = 1\n")
    (tmp_path / "notes.txt").write_text("not a module\n")
    key = entry.help_key(["--help"], str(tmp_path))
    assert entry.help_key(["--help"], str(tmp_path)) == key
    assert entry.help_key(["derive", "--help"], str(tmp_path)) != key
    (tmp_path / "notes.txt").write_text("still not a module\n")
    assert entry.help_key(["--help"], str(tmp_path)) == key
    (tmp_path / "app.py").write_text("y = 22\n")
    assert entry.help_key(["--help"], str(tmp_path)) != key
    key = entry.help_key(["--help"], str(tmp_path))
    os.utime(tmp_path / "cli" / "main.py", ns=(1, 1))
    assert entry.help_key(["--help"], str(tmp_path)) != key
    key = entry.help_key(["--help"], str(tmp_path))
    monkeypatch.setenv("COLUMNS", "91")
    assert entry.help_key(["--help"], str(tmp_path)) != key


def test_other_command_lines_and_an_unusable_cache_run_the_full_command_line(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    env = _env(blocked)
    done = _entry(["--help"], env)
    assert (done.returncode, done.stderr) == (0, "typer loaded")
    assert done.stdout == _full(["--help"], env)
    for args in (["derive", "--json", "--help"], ["derive", "spec.json", "--help"], ["--version"]):
        assert not entry._is_help(args)
    wrong = _entry(["no-such-command", "--help"], _env(tmp_path / "cache"))
    assert wrong.returncode == 2 and "No such command" in wrong.stderr
    assert not (tmp_path / "cache" / "skillpress" / "help").exists()
