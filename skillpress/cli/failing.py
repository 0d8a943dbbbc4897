"""A command's one-line failure, importable without the command-line framework: `derive` runs
without typer when its line is plain (`derive_command`), and fails in the same words."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import NoReturn

__all__ = ["fail", "failures"]


def fail(reason: str, code: int = 2, problem: str | None = None) -> NoReturn:
    """One line on stderr, `error: <reason>` (with `--json`, that line is a JSON object:
    `{"error": …, "code": …, "problem": …}`), and a non-zero exit. Never a traceback."""
    import typer  # (only on the way out)

    first = " ".join(str(reason).split())
    if "--json" in sys.argv[1:]:
        import json

        said = {"error": first, "code": code} | ({"problem": problem} if problem else {})
        typer.echo(json.dumps(said), err=True)
    else:
        typer.echo(f"error: {first}", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def failures() -> Iterator[None]:
    """A use-case's refusal (exit 2), or a store or pipeline that cannot be reached (exit 1), as one line."""
    from skillpress.errors import Permanent, Retryable

    try:
        yield
    except Permanent as exc:
        fail(str(exc), problem=exc.problem)
    except Retryable as exc:
        fail(str(exc), 1, exc.problem)
