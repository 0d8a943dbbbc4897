"""How an agent reaches an operation's file from the body: the reads it takes, following the
names each file gives (`name` in backticks, or a `skill/<slug>/name.md` path)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from skillpress.format.manifest import Manifest

_NAMED = re.compile(r"`([A-Za-z0-9_.-]{1,120})`|skill/[^/\s]+/([A-Za-z0-9_.-]{1,120})\.md")


def named_files(text: str, files: Mapping[str, bytes]) -> set[str]:
    out = set()
    for m in _NAMED.finditer(text):
        name = m.group(1) or m.group(2)
        path = name if name.endswith(".md") else f"{name}.md"
        if path in files:
            out.add(path)
    return out


def reads_to_operations(files: Mapping[str, bytes]) -> dict[str, int | None]:
    """Operation name → reads from the body to its file (None: unreachable)."""
    manifest = Manifest.from_json(files["skill.json"])
    depth = {"body.md": 0}
    frontier = ["body.md"]
    op_files = {op.file for op in manifest.operations}
    while frontier:
        nxt = []
        for path in frontier:
            if path in op_files:
                continue  # an operation's file is where a search ends
            for found in named_files(files[path].decode(), files):
                if found not in depth:
                    depth[found] = depth[path] + 1
                    nxt.append(found)
        frontier = nxt
    return {op.name: depth.get(op.file) for op in manifest.operations}


def listing_files(files: Mapping[str, bytes]) -> dict[str, list[str]]:
    """Operation name → the category files (and body) that list it."""
    manifest = Manifest.from_json(files["skill.json"])
    ops = {op.file: op.name for op in manifest.operations}
    out: dict[str, list[str]] = {name: [] for name in ops.values()}
    for path in ["body.md", *(c.file for c in manifest.categories)]:
        for found in named_files(files[path].decode(), files):
            if found in ops:
                out[ops[found]].append(path)
    return out
