"""`skillpress`: derive skills from OpenAPI documents, export their tools, run the embedded stack."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.main

from skillpress.app.base.package_dir import (
    PackageWriter,
)
from skillpress.cli.common import fail, failures

if TYPE_CHECKING:
    from skillpress.app.operator.offline import PackageSummary

_SETTINGS: dict[str, Any] = {
    "name": "skillpress",
    "help": "Turn an OpenAPI document into an agent skill: a small manifest, a file per operation, a tool per operation.",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,  # plain help: rendering it with rich costs more than the rest of --help
}
app = typer.Typer(**_SETTINGS)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"skillpress {version('skillpress')}")
        except PackageNotFoundError:  # run from a checkout without installing
            typer.echo("skillpress (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Turn an OpenAPI document into an agent skill: a small manifest, a file per operation, a tool per operation."""


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
    typer.echo("\n".join(lines))


@app.command()
def derive(
    spec: Annotated[Path, typer.Argument(help="OpenAPI 3.x or Swagger 2.0 document, JSON or YAML")],
    out: Annotated[Path, typer.Option("--out", "-o", help="directory to write the package into")],
    slug: Annotated[
        str | None, typer.Option(help="the skill's slug (default: from the title)")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="base URL: resolves relative servers, or sets one"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="when tags fail, ask the configured model (SKILLPRESS_LLM_*) for categories",
        ),
    ] = False,
) -> None:
    """Derive a skill package from an OpenAPI document (offline unless --llm)."""
    from skillpress.app.operator.offline import held_to_exit

    with held_to_exit():  # (`_done` exits inside it)
        _derive(spec, out, slug, base_url, as_json, llm)


def _derive(
    spec: Path, out: Path, slug: str | None, base_url: str | None, as_json: bool, llm: bool
) -> None:
    from skillpress.app.operator.offline import derive_file

    try:  # a wrong --out is refused before any work
        writer = PackageWriter(out)
    except OSError as exc:
        fail(str(exc))
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
                say=lambda line: typer.echo(line, err=True),
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
        typer.echo(json.dumps(package.summary().to_json(), indent=2, sort_keys=True))
    else:
        print_summary(package.summary(), out)
    _done()


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
        typer.echo(f"  {stage} ({time.monotonic() - started:.1f} s)", err=True)

    return said


@app.command()
def tools(
    package_dir: Annotated[Path, typer.Argument(help="a skill package directory")],
    format: Annotated[
        str,
        typer.Option("--format", "-f", help="anthropic | openai | openai-strict | gemini | mcp"),
    ] = "anthropic",
    report: Annotated[
        bool,
        typer.Option(
            "--report", help="say on stderr what the provider's profile changed, per tool"
        ),
    ] = False,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="just this operation (repeat for more); reads only their files"
        ),
    ] = None,
) -> None:
    """Print the package's tools, references expanded, as a JSON array in a provider's shape."""
    from skillpress.app.base.package_dir import OutputDirError
    from skillpress.app.serving.calling import tool_list
    from skillpress.cli.common import settings
    from skillpress.platform.llm import chat_client
    from skillpress.runtime.package.model import PackageError, UnknownOperation
    from skillpress.runtime.package.profiles import TooManyTools

    with_model = chat_client(settings()) is not None  # who runs guided and draft workflows
    try:
        listed = tool_list(package_dir, format, tuple(only or ()), with_model)
    except (OutputDirError, PackageError, UnknownOperation, TooManyTools) as exc:
        fail(str(exc))
    result, notes = listed.tools, listed.adapted
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    for wf in listed.left_out:
        typer.echo(
            f"note: left out {wf.execution} workflow {wf.name}: a model runs it; set"
            " SKILLPRESS_LLM_BASE_URL and SKILLPRESS_LLM_MODEL to offer it",
            err=True,
        )
    if report:
        for name, changed in notes.items():
            typer.echo(f"{name}: " + "; ".join(changed), err=True)
        typer.echo(f"{format}: {len(notes)} of {len(result)} tools adapted", err=True)


from skillpress.cli import (  # noqa: E402  (registers the rest)
    annotation_commands,
    call_commands,
    export_commands,
    mcp_commands,
    pipeline_commands,
    review_commands,
    run_commands,
    stack_commands,
    workflow_commands,
)

stack_commands.register(app)
call_commands.register(app)
run_commands.register(app)
mcp_commands.register(app)
pipeline_commands.register(app)
annotation_commands.register(app)
review_commands.register(app)
export_commands.register(app)
workflow_commands.register(app)


def main() -> None:
    try:
        only(sys.argv[1:2])()
    except KeyboardInterrupt:
        sys.exit(130)


def only(first: list[str]) -> typer.Typer:
    """The command line with only the command (or group of commands) `first` names: building
    the forms of all forty costs 30 ms, a twentieth of deriving GitHub's API. Anything else (no
    command, an option such as --version, a name no command has) gets the whole command line,
    whose help and errors list every command."""
    name = first[0] if first else None
    commands = [c for c in app.registered_commands if _name_of(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    one = typer.Typer(**_SETTINGS)
    one.registered_callback = app.registered_callback
    one.registered_commands = commands
    one.registered_groups = groups
    return one


def _name_of(command: Any) -> str:
    """A command's name as typer names it (its function's, when it is given none)."""
    return str(command.name or typer.main.get_command_name(command.callback.__name__))


if __name__ == "__main__":
    main()
