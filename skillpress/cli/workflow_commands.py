"""`skillpress workflow`: a package's workflows as an Arazzo 1.0.1 document, and back."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillpress.cli.common import AsJson, By, Timeout, fail, failures, open_ctx

if TYPE_CHECKING:
    from skillpress.runtime.package.model import Skill

__all__ = ["register"]

workflow_app = typer.Typer(
    help="A package's workflows: Arazzo export and import.", no_args_is_help=True
)

PackageDir = Annotated[Path, typer.Argument(metavar="DIR", help="a skill package directory")]


def _package(package_dir: Path) -> tuple[Mapping[str, bytes], Skill]:
    from skillpress.app.base.package_dir import OutputDirError
    from skillpress.app.serving.calling import open_package
    from skillpress.runtime.package.model import PackageError

    try:
        skill, files = open_package(package_dir)
    except (OutputDirError, PackageError) as exc:
        fail(str(exc))
    return files, skill


@workflow_app.command("export")
def export(
    package_dir: PackageDir,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="write it here (default: print it)")
    ] = None,
    source_url: Annotated[
        str, typer.Option("--source-url", help="where the OpenAPI document the steps name lives")
    ] = "",
) -> None:
    """The package's workflows as an Arazzo 1.0.1 document (YAML)."""
    from skillpress.app.operator.arazzo_io import WorkflowRefused, arazzo_of

    files, skill = _package(package_dir)
    try:
        made = arazzo_of(skill, files, package_dir, source_url)
    except WorkflowRefused as exc:
        fail(str(exc))
    for why in made.left_out:
        typer.echo(f"note: left out {why}", err=True)
    for why in made.unguarded:
        typer.echo(f"note: {why}", err=True)
    if not source_url:
        typer.echo(
            f"note: the steps' source description is {made.source_url};"
            " give --source-url with where the OpenAPI document is, so another runner finds it",
            err=True,
        )
    text = made.text
    if out is None:
        typer.echo(text, nl=False)
        return
    out.write_text(text)
    typer.echo(f"wrote {out}: {made.workflows} workflow(s), Arazzo 1.0.1", err=True)


@workflow_app.command("import")
def import_(
    document: Annotated[
        Path, typer.Argument(metavar="ARAZZO", help="an Arazzo 1.0.x document (YAML or JSON)")
    ],
    package_dir: PackageDir,
    force: Annotated[
        bool, typer.Option("--force", help="replace the package's workflows.yaml")
    ] = False,
) -> None:
    """Write an Arazzo document's workflows into the package (checked like any workflow first;
    anything outside the subset that maps is refused, naming it)."""

    from skillpress.app.operator.arazzo_io import (
        WORKFLOWS_FILE,
        WorkflowRefused,
        read_arazzo,
        workflows_from_arazzo,
    )

    files, skill = _package(package_dir)
    target = package_dir / WORKFLOWS_FILE
    if target.exists() and not force:
        fail(f"{target} exists: give --force to replace it")
    try:
        doc = read_arazzo(document.read_bytes())
    except OSError as exc:
        fail(f"{document}: cannot be read ({type(exc).__name__})")
    except ValueError as exc:  # not JSON or YAML, over a bound, a key given twice
        fail(f"{document}: {exc}")
    try:
        made = workflows_from_arazzo(doc, skill, files, document.name)
    except WorkflowRefused as exc:
        fail(str(exc))
    target.write_text(made.text)
    for note in made.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"wrote {target}: {', '.join(made.names)}", err=True)


@workflow_app.command("add")
def add(
    slug: Annotated[str, typer.Argument(help="a skill's slug")],
    file: Annotated[Path, typer.Argument(metavar="WORKFLOWS_YAML", help="workflows to add")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Add workflows to a published skill as annotations (they survive new spec revisions) and
    propose the version that carries them."""
    from skillpress.app.operator.skill_workflows import add_workflows
    from skillpress.cli.annotation_commands import propose, report

    try:
        text = file.read_bytes()
    except OSError as exc:
        fail(f"{file}: {exc.strerror}")
    ctx = open_ctx()
    with failures():
        stored = add_workflows(ctx, slug, text, by)
    proposal = propose(ctx, stored, "added", timeout)
    report(
        proposal, as_json, f"{len(stored.ids)} workflow(s) added", {"annotation_ids": stored.ids}
    )


@workflow_app.command("promote")
def promote(
    slug: Annotated[str, typer.Argument(help="a skill's slug")],
    name: Annotated[str, typer.Argument(help="the workflow")],
    to: Annotated[str, typer.Option("--to", help="guided | hardened (or back to draft)")],
    tool: Annotated[
        str | None,
        typer.Option("--tool", help="to guided: the operation the model is made to call"),
    ] = None,
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Move a workflow to another execution level, as a change that proposes a version; to
    guided with --tool (the operation the model is made to call), to hardened only with steps
    and a dry run that passes."""
    from skillpress.app.operator.skill_workflows import promote_workflow
    from skillpress.cli.annotation_commands import propose, report

    ctx = open_ctx()
    with failures():
        stored = promote_workflow(ctx, slug, name, to, by, tool)
    proposal = propose(ctx, stored, "promoted", timeout)
    report(proposal, as_json, f"{name} is {to} now", {"annotation_id": stored.ids[1]})


def runs(
    slug: Annotated[str | None, typer.Argument(help="only this skill's runs")] = None,
    show: Annotated[
        int | None, typer.Option("--show", metavar="ID", help="one run with its steps")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="how many runs, newest first")] = 50,
    as_json: AsJson = False,
) -> None:
    """Workflow runs, newest first: how each ended (a waiting one resumes when the same workflow
    is run again with the same arguments once its approval is granted); --show ID gives each
    step's request, status, tries, timing and answer (secrets redacted)."""
    from skillpress.app.records.runs import get_run, list_runs

    ctx = open_ctx()
    with failures():
        if show is not None:
            run = get_run(ctx, show)
        else:
            listed = list_runs(ctx, slug, limit)
    if show is None:
        if as_json:
            typer.echo(json.dumps(listed, indent=2, ensure_ascii=False))
            return
        if not listed:
            typer.echo("no workflow runs yet" + (f" of {slug}" if slug else ""))
        for r in listed:
            typer.echo(_run_line(r))
        return
    if as_json:
        typer.echo(json.dumps(run, indent=2, ensure_ascii=False))
        return
    typer.echo(_run_line(run))
    typer.echo(f"  arguments {json.dumps(run['arguments'], ensure_ascii=False, sort_keys=True)}")
    for step in run.get("steps", []):
        request = step["request"] or {}
        sent = f"{request.get('method', '')} {request.get('url', '')}".strip()
        tries = ", ".join(
            str(t.get("status", t.get("error", "?")))
            + (f" (then {t['then_waited']} s)" if "then_waited" in t else "")
            for t in step["tries"]
        )
        status = f" → {step['status']}" if step["status"] is not None else ""
        typer.echo(
            f"  {step['step']}: {step['operation']} {step['outcome']}{status} in {step['ms']} ms"
            + (f"; {sent}" if sent else "")
            + (f"; tries {tries}" if len(step["tries"]) > 1 else "")
        )
        if step["error"]:
            typer.echo(f"    {step['error']}")
        elif step["answer"] is not None:
            typer.echo(f"    answer {json.dumps(step['answer'], ensure_ascii=False)[:300]}")
    if run["result"] is not None:
        typer.echo(f"  result {json.dumps(run['result'], ensure_ascii=False)[:600]}")
    if run["error"]:
        typer.echo(f"  error {run['error']}")


def _run_line(r: Mapping[str, Any]) -> str:
    waits = f" on approval #{r['approval']}" if r["status"] == "waiting" and r["approval"] else ""
    return (
        f"#{r['id']} {r['started_at'][:19]} {r['skill']} {r['workflow']} ({r['execution']}):"
        f" {r['status']}{waits}, {r['step_count']} steps, by {r['started_by']}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(workflow_app, name="workflow")
    app.command()(runs)
