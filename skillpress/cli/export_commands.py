"""A skill taken elsewhere from the command line: detach (its live version becomes an ordinary
package), export (its annotations as an Overlay, or the skill as an Agent Skills folder), verify
(an exported folder against its contract)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from skillpress.cli.common import (
    fail,
    failures,
    load_target,
    open_ctx,
)

__all__ = ["register"]


def detach(slug: Annotated[str, typer.Argument(help="the skill's slug")]) -> None:
    """Detach a skill from its source: from its live version on it is an ordinary package that no longer regenerates."""
    from skillpress.app.operator.annotations import detach as detached

    with failures():
        detached(open_ctx(), slug)
    typer.echo(f"{slug} is detached: new spec revisions and annotations no longer propose versions")


def export(
    target: Annotated[
        str,
        typer.Argument(
            metavar="SLUG|DIR",
            help="a skill's slug (overlay, agent-skills) or a package directory (agent-skills)",
        ),
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="overlay: the annotations as an OpenAPI Overlay 1.0 document; agent-skills: a SKILL.md folder with tools.json",
        ),
    ] = "overlay",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="agent-skills: the folder to write, or the folder to write it in (DIR/<name>) when DIR is not named as the skill",
        ),
    ] = None,
) -> None:
    """Export a skill for other tooling: its annotations as an Overlay, or the whole skill as an Agent Skills folder."""
    if format == "agent-skills":
        from skillpress.app.operator.exports import write_agent_skills

        if out is None:
            fail("--format agent-skills needs --out DIR")
        skill, files = load_target(target, None, "apiKey", None)
        try:
            done = write_agent_skills(skill, files, out)
        except OSError as exc:
            fail(str(exc))
        if done.folder != out:
            typer.echo(
                f"note: an Agent Skills folder bears its skill's name: written to {done.folder}"
                f" (give --out {done.folder} to write there directly)",
                err=True,
            )
        typer.echo(
            f"wrote {done.folder}: SKILL.md, tools.json ({done.tools} tools, {done.writes} write),"
            f" {done.references} reference files"
        )
        return
    if format != "overlay":
        fail(f"--format {format!r}: overlay or agent-skills")
    from skillpress.app.operator.exports import overlay

    with failures():
        doc = overlay(open_ctx(), target)
    typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))


def verify(folder: Annotated[Path, typer.Argument(help="an exported Agent Skills folder")]) -> None:
    """Check an exported folder: tools.json is a sound contract and SKILL.md states the same rules (exit 1 if not)."""
    from skillpress.app.operator.exports import verify_agent_skills
    from skillpress.errors import Permanent

    if not folder.is_dir():
        fail(f"{folder} is not a directory")
    try:
        counts = verify_agent_skills(folder)
    except Permanent as exc:  # ContractError: the disagreements, listed
        fail(f"{folder}: {exc}", 1)
    typer.echo(
        f"ok: {counts['tools']} tools, {counts['write']} write (each requires confirmation), {counts['idempotent']} idempotent"
    )


def register(app: typer.Typer) -> None:
    app.command()(detach)
    app.command()(export)
    app.command()(verify)
