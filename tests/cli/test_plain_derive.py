"""#59.1: a plain `derive` line runs without typer (the entry point reads it itself: importing
typer and click and building the command is a twentieth of deriving GitHub's API), and it is the
same command: a line read there means what typer reads it to mean, anything else is left to
typer, and what the process prints, writes and exits with is what the full command line's does."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from skillpress.cli.derive_command import plain_line
from skillpress.cli.main import only

pytestmark = pytest.mark.integration  # the command line as a process (tests/conftest.py)

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
ENTRY = [sys.executable, "-m", "skillpress.cli.entry"]  # what the `skillpress` script runs
FULL = [sys.executable, "-m", "skillpress.cli.main"]  # typer, always


def _typer_reads(args: list[str]) -> dict[str, Any] | None:
    """What typer makes of the words after `derive` (None: it refuses the line)."""
    import click

    command = typer.main.get_command(only(["derive"])).commands["derive"]  # type: ignore[attr-defined]
    try:
        with command.make_context("derive", list(args)) as ctx:
            read = dict(ctx.params)
    except click.exceptions.ClickException:
        return None
    # (typer hands a Path parameter to the command as Path(value): its `param_path_convertor`)
    return read | {"spec": Path(read["spec"]), "out": Path(read["out"])}


def _plain_lines() -> list[list[str]]:
    """Plain lines in every order and form: each must be read here, as typer reads it."""
    rnd = random.Random(5)
    outs = [["--out", "out dir"], ["-o", "o"], ["--out=d/é"]]
    extras = [
        ["--slug", "pets"],
        ["--slug=x=y"],
        ["--base-url", "https://a.example/v1"],
        ["--base-url=http://h:8080/"],
        ["--json"],
        ["--llm"],
    ]
    lines = []
    for _ in range(300):
        parts = [["spec.yaml" if rnd.random() < 0.5 else "./dir/ä b.json"], rnd.choice(outs)]
        chosen: dict[str, list[str]] = {}
        for extra in rnd.sample(extras, rnd.randint(0, len(extras))):
            chosen.setdefault(extra[0].split("=")[0], extra)  # each option once
        parts += chosen.values()
        rnd.shuffle(parts)
        lines.append([word for part in parts for word in part])
    return lines


NOT_PLAIN = [
    ["s.yaml", "--out", "--json"],  # typer reads out="--json": left to it
    ["s.yaml", "--out"],
    ["s.yaml"],
    ["--out", "d"],
    ["s.yaml", "--out", "d", "--out", "e"],
    ["s.yaml", "--out", "d", "--json", "--json"],
    ["s.yaml", "t.yaml", "--out", "d"],
    ["--", "s.yaml", "--out", "d"],
    ["s.yaml", "--out", ""],
    ["s.yaml", "--out", "d", "--help"],
    ["s.yaml", "-od"],
    ["s.yaml", "-o=d"],
    ["s.yaml", "--out=d", "--json=1"],
    ["s.yaml", "--Out", "d"],
    ["s.yaml", "--out", "d", "--no-json"],
    ["s\tx.yaml", "--out", "d"],
    ["-", "--out", "d"],
    ["s.yaml", "--out", "d", "--slug", "-x"],
]


def test_a_plain_line_is_read_as_typer_reads_it_and_any_other_is_left_to_typer() -> None:
    for args in _plain_lines():
        read = plain_line(args)
        assert read is not None, args
        assert read == _typer_reads(args), args
    for args in NOT_PLAIN:
        assert plain_line(args) is None, args


def _ran(command: list[str], args: list[str], out: Path, **env: str) -> tuple[Any, ...]:
    done = subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    files = (
        {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))}
        if out.is_dir()
        else None
    )
    return done.returncode, done.stdout, done.stderr, files


def _both(args: list[str], out: Path, **env: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """What the `skillpress` script and the full command line do with the same line, each
    from the same start (`out` as it was)."""
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} if out.is_dir() else None
    plain = _ran(ENTRY, args, out, **env)
    if out.is_dir():
        for p in sorted(out.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        out.rmdir()
    if before is not None:
        for p, data in before.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
    return plain, _ran(FULL, args, out, **env)


@pytest.mark.parametrize(
    "case",
    [
        "summary",
        "json and options first",
        "refused",
        "missing file as json",
        "foreign out",
        "webhooks only",
    ],
)
def test_the_script_and_the_full_command_line_derive_alike(case: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    if case == "summary":
        args = ["derive", str(SPECS / "oai-petstore-expanded.yaml"), "-o", str(out)]
    elif case == "json and options first":
        args = ["derive", "--json", "--slug=af", "--out", str(out), str(SPECS / "airflow-v1.yaml")]
        args += ["--base-url", "https://airflow.example.com/"]
    elif case == "refused":
        bad = tmp_path / "bad.json"
        bad.write_bytes(b'{"openapi": "3.0.0", "info": {"title": "a", "title": "b"}}')
        args = ["derive", str(bad), "--out", str(out)]
    elif case == "missing file as json":
        args = ["derive", str(tmp_path / "nope.yaml"), "--out", str(out), "--json"]
    elif case == "foreign out":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        args = ["derive", str(SPECS / "oai-petstore.swagger2.yaml"), "--out", str(out)]
    else:
        args = ["derive", str(SPECS / "adyen-management-notification-v3.json"), "--out", str(out)]
    plain, full = _both(args, out)
    assert plain == full
    code, stdout, stderr, files = plain
    if case in ("summary", "json and options first"):
        assert code == 0 and files and "skill.json" in files and stdout
    else:
        assert code == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr


def _typer_loaded(args: list[str], **env: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "skillpress.cli.entry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert done.returncode in (0, 2), done.stderr
    return any(line.endswith((" typer", " click")) for line in done.stderr.splitlines())


def test_a_plain_line_imports_no_typer_and_any_other_does(tmp_path: Path) -> None:
    spec = str(SPECS / "oai-petstore-expanded.yaml")
    assert not _typer_loaded(["derive", spec, "--out", str(tmp_path / "a")])
    assert _typer_loaded(["derive", spec, "--out", str(tmp_path / "b"), "--slug", "-x"])
    # streams typer's echo would rewrap (ASCII): typer runs, and says what it always said
    assert _typer_loaded(["derive", spec, "--out", str(tmp_path / "c")], PYTHONIOENCODING="ascii")
    out = tmp_path / "d"
    plain, full = _both(["derive", spec, "--out", str(out)], out, PYTHONIOENCODING="ascii")
    assert plain == full and "→" in plain[1]
