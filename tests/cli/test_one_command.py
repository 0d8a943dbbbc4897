"""#59.1: a command line builds only the command it names (building all forty costs 30 ms, a
twentieth of deriving GitHub's API); what it prints, its errors and its usage included, is what
the whole command line prints."""

from __future__ import annotations

import typer
import typer.main
from typer.testing import CliRunner

from skillpress.cli.main import app, only

FORMS = [
    ["derive"],  # a missing argument: the usage line names the command
    ["derive", "--nope"],
    ["token"],  # a group: its commands listed
    ["token", "add"],
    ["workflow", "--help"],
    ["versions", "--help"],
    ["--version"],  # not a command: the whole command line
    ["nope"],
    [],
]


def _said(cli: typer.Typer, args: list[str]) -> tuple[int, str]:
    done = CliRunner().invoke(cli, args, prog_name="skillpress")
    return done.exit_code, done.output


def test_the_command_named_alone_is_built_and_says_what_the_whole_command_line_says() -> None:
    assert list(typer.main.get_command(only(["derive"])).commands) == ["derive"]  # type: ignore[attr-defined]
    assert list(typer.main.get_command(only(["token"])).commands) == ["token"]  # type: ignore[attr-defined]
    assert only(["--version"]) is app and only(["nope"]) is app and only([]) is app
    for args in FORMS:
        assert _said(only(args[:1]), args) == _said(app, args), args
