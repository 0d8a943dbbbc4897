"""Exports for other tooling: a skill's annotations as an OpenAPI Overlay 1.0 document, and its
live version as an Agent Skills folder (written, verified, or zipped for the console)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the read models load pydantic: a call on a package never needs them
    from skillpress.app.base.context import AppContext
    from skillpress.app.base.views import Overlay
    from skillpress.runtime.package.model import Skill

__all__ = [
    "AgentSkillsExport",
    "agent_skills_zip",
    "overlay",
    "verify_agent_skills",
    "write_agent_skills",
]

# The records stack (SQLModel, SQLAlchemy, Alembic) is imported where a function needs it: a
# runtime serving a package directory never opens the records, and that import alone costs it
# most of a second.


def overlay(ctx: AppContext, slug: str) -> Overlay:
    """The skill's active annotations as Overlay actions on the operations of its newest version
    (orphaned ones have nowhere in the document to go, and are left out)."""
    from skillpress.app.records.annotations import skill_annotations
    from skillpress.app.records.versions import find_skill, newest_manifest

    skill = find_skill(ctx, slug)
    rows = skill_annotations(ctx, skill.id, active_only=True)
    newest, manifest = newest_manifest(ctx, skill)
    index = manifest.by_name() if manifest is not None else {}
    updates: dict[str, dict[str, Any]] = {}
    for r in rows:
        body = r.body
        if r.kind == "skill_note":
            updates.setdefault("$.info", {}).setdefault("x-skillpress-conventions", []).append(
                body["text"]
            )
            continue
        if r.target == "skill":  # about the whole skill: its renames, merges and workflows
            key = "x-skillpress-workflows" if r.kind == "workflow" else f"x-skillpress-{r.kind}s"
            updates.setdefault("$.info", {}).setdefault(key, []).append(body.get("workflow", body))
            continue
        op = index.get(r.target.split(":", 1)[1])
        if op is None:
            continue  # orphaned: nowhere in the document to put it
        target = f"$.paths['{op.path}'].{op.method.lower()}"
        key = f"x-skillpress-{r.kind.replace('_', '-')}"
        entry = updates.setdefault(target, {})
        if r.kind in ("note", "example", "fixed"):
            entry.setdefault(key + ("s" if not key.endswith("s") else ""), []).append(body)
        else:
            entry[key] = body if body else True
    return {
        "overlay": "1.0.0",
        "info": {
            "title": f"skillpress annotations of {slug}",
            "version": newest.id[:12] if newest else "0",
        },
        "actions": [{"target": t, "update": u} for t, u in sorted(updates.items())],
    }


def agent_skills_zip(ctx: AppContext, slug: str) -> bytes:
    """The live version as an Agent Skills folder (SKILL.md, tools.json, references/), zipped
    with fixed timestamps: the same version gives the same bytes."""
    import io
    import zipfile

    from skillpress.app.records.versions import live_files
    from skillpress.runtime.interop.contracts import agent_skill_name, agent_skills_folder
    from skillpress.runtime.package.skill import load_skill

    files = live_files(ctx, slug)
    skill = load_skill(files, lazy=True)
    folder = agent_skills_folder(skill, files)
    # the folder bears the skill's name, as Agent Skills requires
    name = agent_skill_name(skill.slug)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(folder):
            info = zipfile.ZipInfo(f"{name}/{path}", date_time=(2000, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, folder[path], zipfile.ZIP_DEFLATED)
    return out.getvalue()


@dataclass(frozen=True)
class AgentSkillsExport:
    """An Agent Skills folder written: where, and what its contract holds."""

    folder: Path
    tools: int
    writes: int
    references: int


def write_agent_skills(skill: Skill, files: Mapping[str, bytes], out: Path) -> AgentSkillsExport:
    """The skill as an Agent Skills folder (SKILL.md, tools.json, references/). Agent Skills
    requires a skill's folder to bear its name, so it is written into `out` itself when `out`'s
    name is the skill's, and into `out/<name>/` otherwise (`out` then holds skills, as a
    runtime's skills folder does). Raises OutputDirError (an OSError) for a folder it may not
    write."""
    from skillpress.app.base.package_dir import write_package_dir
    from skillpress.runtime.interop.contracts import agent_skill_name, agent_skills_folder

    folder = agent_skills_folder(skill, files)
    name = agent_skill_name(skill.slug)
    target = out if out.name == name else out / name
    write_package_dir(folder, target, marker="SKILL.md")
    contract = json.loads(folder["tools.json"])
    return AgentSkillsExport(
        folder=target,
        tools=len(contract),
        writes=sum(t["type"] == "write" for t in contract),
        references=sum(1 for p in folder if p.startswith("references/")),
    )


def verify_agent_skills(folder: Path) -> dict[str, int]:
    """An exported Agent Skills folder checked: tools.json is a sound contract, SKILL.md states
    the same rules and the reference files the same schemas (ContractError lists every
    disagreement; OutputDirError for what is not a folder). Its counts of tools, writes and
    idempotent ones."""
    from skillpress.app.base.package_dir import OutputDirError
    from skillpress.runtime.interop.contract_check import verify_folder

    if not folder.is_dir():
        raise OutputDirError(f"{folder} is not a directory")
    files = {
        p.name: p.read_bytes()
        for p in folder.iterdir()
        if p.is_file() and p.name in ("SKILL.md", "tools.json")
    }
    references = folder / "references"
    if references.is_dir():
        files |= {
            f"references/{p.name}": p.read_bytes()
            for p in sorted(references.iterdir())[:50_000]
            if p.is_file() and (p.suffix == ".md" or p.name in ("types.json", "workflows.yaml"))
        }
    return verify_folder(files)
