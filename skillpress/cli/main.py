"""`skillpress`: derive skills from OpenAPI documents, export their tools, run the embedded stack."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main

from skillpress.cli.common import fail

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
    from skillpress.cli.derive_command import derive as run

    run(spec, out, slug, base_url, as_json, llm)


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
