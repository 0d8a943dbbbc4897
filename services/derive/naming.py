"""Names: the skill's slug, operation names (file names too) and provider-safe tool names."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from services.derive.model import Operation

__all__ = [
    "snake",
    "slugify",
    "assign_names",
    "shorten",
    "RESERVED_FILES",
    "MAX_NAME",
    "MAX_TOOL_NAME",
]

MAX_NAME = 64
MAX_TOOL_NAME = 64
MAX_SLUG = 24
RESERVED_FILES = frozenset({"body", "types", "skill", "index", "readme", "skill_md"})
_CAMEL1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL2 = re.compile(r"([a-z0-9])([A-Z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_FILLER = {
    "api",
    "apis",
    "rest",
    "openapi",
    "swagger",
    "the",
    "service",
    "specification",
    "spec",
    "http",
    "v1",
    "v2",
    "v3",
}


def snake(text: str) -> str:
    """`findPetsByStatus` → `find_pets_by_status`; `find pet by id` → `find_pet_by_id`."""
    text = _CAMEL1.sub(r"\1_\2", text)
    text = _CAMEL2.sub(r"\1_\2", text)
    return _NON_ALNUM.sub("_", text).strip("_").lower()


def shorten(name: str, limit: int) -> str:
    """Keep `name` within `limit` characters; a cut name ends in a short hash so it stays unique."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    head = name[: limit - 7].rstrip("_-")
    return f"{head}_{digest}"


def slugify(title: str) -> str:
    """A short kebab-case slug from a title: `Configuration API` → `configuration`."""
    words = [w for w in snake(title).split("_") if w]
    kept = [w for w in words if w not in _FILLER] or words or ["api"]
    slug = ""
    for word in kept:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG:
            break
        slug = candidate
    return slug or kept[0][:MAX_SLUG]


def _path_name(method: str, path: str, prefix_len: int) -> str:
    segments = [s for s in path.strip("/").split("/") if s][prefix_len:]
    words: list[str] = [method.lower()]
    for seg in segments:
        if seg.startswith("{") and seg.endswith("}"):
            words.append("by_" + snake(seg[1:-1]))
        else:
            words.append(snake(seg))
    return "_".join(w for w in words if w) or method.lower()


def _common_prefix(paths: Iterable[str]) -> int:
    split = [[s for s in p.strip("/").split("/") if s] for p in paths]
    if not split:
        return 0
    n = 0
    for parts in zip(*split, strict=False):
        first = parts[0]
        if "{" in first or any(p != first for p in parts):
            break
        n += 1
    # keep at least one segment for every path
    shortest = min(len(s) for s in split)
    return min(n, max(shortest - 1, 0))


def assign_names(ops: list[Operation], slug: str, reserved: Iterable[str] = ()) -> None:
    """Give every operation a unique, file-safe name and a unique provider-safe tool name."""
    taken = set(RESERVED_FILES) | {r.lower() for r in reserved}
    unnamed = [op.path for op in ops if not op.operation_id]
    prefix = _common_prefix(unnamed) if len(unnamed) > 1 else 0
    for op in ops:
        base = snake(op.operation_id) if op.operation_id else ""
        if not base:
            base = _path_name(op.method, op.path, prefix)
        if base[0].isdigit():
            base = f"op_{base}"
        base = shorten(base, MAX_NAME)
        name, n = base, 2
        while name in taken:
            suffix = f"_{n}"
            name = shorten(base, MAX_NAME - len(suffix)) + suffix
            n += 1
        taken.add(name)
        op.name = name
        op.tool_name = tool_name(slug, name)


def tool_name(slug: str, name: str) -> str:
    safe_slug = re.sub(r"[^A-Za-z0-9_-]+", "_", slug)
    full = f"{safe_slug}_{name}"
    if len(full) <= MAX_TOOL_NAME:
        return full
    return f"{safe_slug}_{shorten(name, MAX_TOOL_NAME - len(safe_slug) - 1)}"
