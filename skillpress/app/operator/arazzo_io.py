"""A package directory's workflows as an OpenAPI Initiative Arazzo 1.0.1 document, and an Arazzo
document's workflows written into a package (checked like any workflow first; anything outside
the subset that maps is refused, naming it). The command line reads and prints; this decides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from skillpress.runtime.interop.arazzo import ArazzoRefused
from skillpress.runtime.interop.arazzo_in import arazzo_words, from_arazzo
from skillpress.runtime.interop.arazzo_out import left_out, to_arazzo, unguarded
from skillpress.runtime.package.model import Skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.run import WorkflowRefused
from skillpress.runtime.workflows.scope import WORKFLOWS_FILE

__all__ = [
    "WORKFLOWS_FILE",
    "ArazzoExport",
    "ArazzoImport",
    "WorkflowRefused",
    "arazzo_of",
    "read_arazzo",
    "workflows_from_arazzo",
]


@dataclass(frozen=True)
class ArazzoExport:
    """The document (YAML text), the hardened workflows it carries, what it left out and why,
    and where it says the steps' OpenAPI document is."""

    text: str
    workflows: int
    left_out: list[str]
    source_url: str
    unguarded: list[str]  # steps another runner would send without the gate or identity here


@dataclass(frozen=True)
class ArazzoImport:
    """The workflows.yaml text a document made (what it left out said at its head), its
    workflows' names, and what it left out of the document, each in words."""

    text: str
    names: list[str]
    notes: list[str]


def arazzo_of(
    skill: Skill, files: Mapping[str, bytes], where: Path, source_url: str
) -> ArazzoExport:
    """The package's workflows as an Arazzo 1.0.1 document (hardened ones only: guided and
    draft ones are left out, with the reason). WorkflowRefused when it has none (`where` is
    the folder named), or they do not load."""
    flows = load_workflows(files, skill)
    if not flows:
        raise WorkflowRefused(f"{where} has no workflows.yaml")
    doc = to_arazzo(flows, skill, source_url, files)
    return ArazzoExport(
        text=yaml.safe_dump(doc, sort_keys=False, allow_unicode=True),
        workflows=sum(1 for wf in flows.values() if wf.execution == "hardened"),
        left_out=list(left_out(flows)),
        source_url=str(doc["sourceDescriptions"][0]["url"]),
        unguarded=unguarded(flows, skill),
    )


def read_arazzo(raw: bytes) -> Any:
    """An Arazzo document's bytes (JSON or YAML) as data, read under a spec's bounds (a key
    given twice refused with its lines); ValueError (SpecRefused, saying why) when not."""
    from skillpress.format.load import parse_bytes

    return parse_bytes(raw)


def workflows_from_arazzo(
    document: Any, skill: Skill, files: Mapping[str, bytes], source: str = "an Arazzo document"
) -> ArazzoImport:
    """The workflows.yaml text an Arazzo document (`source`, as its head names it) makes for
    the package, its workflows' names, and what it left out, checked with the package's
    operations. WorkflowRefused names what does not map."""
    notes: list[str] = []
    made = from_arazzo(document, skill, files, notes)
    head = "".join(f"# {line}\n" for line in [f"imported from {source} (Arazzo)", *notes])
    text = head + yaml.safe_dump(made, sort_keys=False, allow_unicode=True)
    try:
        flows = load_workflows({**files, WORKFLOWS_FILE: text.encode()}, skill)
    except WorkflowRefused as exc:  # what the workflows it made are held to: in its words
        raise ArazzoRefused(arazzo_words(str(exc))) from None
    return ArazzoImport(text, list(flows), notes)
