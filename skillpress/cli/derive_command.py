"""`skillpress derive`'s work, without the command-line framework.

typer's `derive` command runs it; so does the entry point itself when the line is a plain one
(`derive SPEC --out DIR [--slug S] [--base-url URL] [--json] [--llm]`, each option once, in any
order, `--opt VALUE` or `--opt=VALUE`): importing typer and click and building the command is
a twentieth of deriving GitHub's API, a third of deriving a small one. Anything else on the
line (help, an unknown or repeated option, a missing value, a value that looks like an option)
is left to typer, so usage, errors and help stay the whole command line's; a line read here
means what typer reads it to mean (a test holds the two readings together). What is printed is
what typer's echo prints (where the standard streams are ASCII, which it rewraps, typer runs).
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from skillpress.cli.failing import fail, failures

if TYPE_CHECKING:
    from skillpress.app.operator.offline import PackageSummary

__all__ = ["derive", "plain_line", "print_summary", "run_plain"]

_VALUED = {"--out": "out", "-o": "out", "--slug": "slug", "--base-url": "base_url"}
_FLAGS = {"--json": "as_json", "--llm": "llm"}
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what click's echo takes out off a terminal


def plain_line(args: list[str]) -> dict[str, Any] | None:
    """The arguments of `derive` as typer would read `args` (what follows `derive`), or None
    when the line is anything but plain."""
    found: dict[str, Any] = {}
    spec: str | None = None
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if not _plain_text(token):
            return None
        name, eq, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _VALUED:
            value = attached if eq else (rest.pop(0) if rest else None)
            if value is None or not _plain_text(value) or value.startswith("-"):
                return None
            if _VALUED[name] in found:
                return None
            found[_VALUED[name]] = value
        elif token in _FLAGS:
            if _FLAGS[token] in found:
                return None
            found[_FLAGS[token]] = True
        elif token.startswith("-") or spec is not None:
            return None
        else:
            spec = token
    if spec is None or "out" not in found:
        return None
    return {
        "spec": Path(spec),
        "out": Path(found["out"]),
        "slug": found.get("slug"),
        "base_url": found.get("base_url"),
        "as_json": found.get("as_json", False),
        "llm": found.get("llm", False),
    }


def _plain_text(text: str) -> bool:
    return bool(text) and text.isprintable()  # (a lone surrogate is not printable)


def _as_echo_takes_it(stream: Any) -> bool:
    """Whether typer's echo writes to `stream` as it is: any stream with an encoding (and an
    errors handler) but ASCII, which it wraps in UTF-8 instead."""
    encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
    if not encoding or errors is None:
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return False


def run_plain(args: list[str]) -> bool:
    """Run `derive` from `args` here when the line is plain and typer's echo would write to the
    standard streams as they are (exiting as typer exits: its exit code, 130 on an interrupt, 1 on a closed pipe); False,
    having done nothing, when typer should read it."""
    given = plain_line(args)
    if given is None or not (_as_echo_takes_it(sys.stdout) and _as_echo_takes_it(sys.stderr)):
        return False
    try:
        derive(**given)
    except KeyboardInterrupt:
        sys.exit(130)
    except EOFError:
        sys.stderr.write("\nAborted!\n")
        sys.exit(1)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)  # (nothing more reaches a closed pipe)
        os.dup2(devnull, sys.stdout.fileno())
        os.dup2(devnull, sys.stderr.fileno())
        sys.exit(1)
    except Exception as exc:  # typer's Exit, as `fail` raises it
        code = getattr(exc, "exit_code", None)
        if not isinstance(code, int):
            raise
        sys.exit(code)
    return True


def derive(
    spec: Path, out: Path, slug: str | None, base_url: str | None, as_json: bool, llm: bool
) -> None:
    """Derive `spec` into `out` and say what was made; exits the process when it has (a large
    heap is not torn down)."""
    from skillpress.app.operator.offline import held_to_exit

    with held_to_exit():  # (`_done` exits inside it)
        _derive(spec, out, slug, base_url, as_json, llm)


def _derive(
    spec: Path, out: Path, slug: str | None, base_url: str | None, as_json: bool, llm: bool
) -> None:
    from skillpress.app.base.package_dir import PackageWriter
    from skillpress.app.operator.offline import derive_file

    try:  # a wrong --out is refused before any work
        writer = PackageWriter(out)
    except OSError as exc:
        fail(str(exc))
    if not llm:  # the child that writes the files as they are rendered, forked while small
        writer.start_writing()
    try:
        chosen = None
        if llm:
            from skillpress.cli.common import quiet_logs, settings

            chosen = settings()
            quiet_logs(chosen)
        with failures():
            derived = derive_file(
                spec,
                slug=slug,
                base_url=base_url,
                on_stage=_stage_printer(),
                on_files=writer.write_soon,
                llm=chosen,
                say=lambda line: _echo(line, err=True),
            )
            package = derived.package  # the rest is held to the end (`_done`)
    except BaseException:
        writer.abort()
        raise
    try:
        writer.commit(package.files, detach_removal=True)
    except OSError as exc:
        fail(str(exc))
    if as_json:
        _echo(json.dumps(package.summary().to_json(), indent=2, sort_keys=True))
    else:
        print_summary(package.summary(), out)
    _done()


def print_summary(summary: PackageSummary, out: Path | None) -> None:
    layout = (
        "flat manifest"
        if summary.mode == "flat"
        else f"{summary.categories} categories from {summary.source}"
    )
    if summary.tag_failure:
        layout += f" (tags failed: {summary.tag_failure})"
    lines = [
        f"derived {summary.slug}: {summary.operations} operations, {summary.tools} tools ({summary.tools_share})"
        + (f" → {out}" if out else ""),
        f"  version   {summary.version_id[:16]}",
        f"  body      {summary.body_bytes:,} bytes, {layout}",
        f"  files     {summary.files}",
        f"  base url  {summary.base_url or '(none: pass --base-url)'}",
        f"  hosts     {', '.join(summary.hosts) or '(none)'}",
        f"  auth      {('header ' + summary.auth_header) if summary.auth_header else '(no header auth)'}",
    ]
    for w in summary.warnings[:20]:
        lines.append(f"  warning   {w}")
    if len(summary.warnings) > 20:
        lines.append(f"  warning   … and {len(summary.warnings) - 20} more (see skill.json)")
    _echo("\n".join(lines))


def _echo(text: str, err: bool = False) -> None:
    """typer's echo where typer runs; where it does not, what that echo does on a stream it takes as it is:
    the line and a newline, escape sequences taken out off a terminal, flushed."""
    typer = sys.modules.get("typer")
    if typer is not None:
        typer.echo(text, err=err)
        return
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        text = _ANSI.sub("", text)
    stream.write(text + "\n")
    stream.flush()


def _done() -> NoReturn:
    """Exit now the package is written and said: a large derivation leaves a heap whose
    teardown at interpreter exit only adds to the wait (everything is flushed first)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _stage_printer() -> Callable[[str], None] | None:
    """Progress lines on a terminal's stderr (nothing when piped): a large API takes seconds."""
    if not sys.stderr.isatty():
        return None
    started = time.monotonic()

    def said(stage: str) -> None:
        _echo(f"  {stage} ({time.monotonic() - started:.1f} s)", err=True)

    return said
