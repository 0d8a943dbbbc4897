"""A package's tools in a provider's shape, all at once: every declared operation and every
workflow a host can run (what `skillpress tools` prints and the corpus checks load)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillpress.runtime.package.model import PROVIDERS, PackageError, shaped_tool
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows

__all__ = ["package_tools"]


def package_tools(
    files: Mapping[str, bytes],
    provider: str,
    notes: dict[str, list[str]] | None = None,
    only: tuple[str, ...] = (),
    with_model: bool = False,
) -> list[dict[str, Any]]:
    """Every declared operation of a package and every hardened workflow — every guided and
    draft one too `with_model` (where a model runs them) — or those named in `only` (reading
    only their files), as tools in `provider`'s shape; `notes` collects, per tool, what the
    provider's profile changed in its schema. An unknown name in `only` raises UnknownOperation."""
    if provider not in PROVIDERS:
        raise PackageError(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}")
    skill = load_skill(files, lazy=bool(only))
    flows = {
        n: w
        for n, w in load_workflows(files, skill).items()
        if w.execution == "hardened" or with_model
    }
    chosen = [skill.tool(name) for name in only if name not in flows] if only else skill.tools
    out = []
    for tool in chosen:
        shaped, changed = tool.adapted(provider)
        out.append(shaped)
        if notes is not None and changed:
            notes[tool.name] = changed
    for name, wf in flows.items():  # a hardened workflow is a tool too: one call runs its steps
        if only and name not in only:
            continue
        shaped, changed = shaped_tool(
            wf.tool_name, wf.description or wf.name, wf.to_tool_schema(), provider
        )
        out.append(shaped)
        if notes is not None and changed:
            notes[wf.tool_name] = changed
    return out
