"""The names a package is made of and bound by: an operation's name in snake case, a skill's slug
from words, a name kept within its limit, and a tool's name from a slug and an operation's name
(what the derivation writes and the runtime checks and serves by)."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from skillpress.format.gc_pause import cleared_after

__all__ = [
    "FILLER",
    "MAX_NAME",
    "MAX_SLUG",
    "MAX_TOOL_NAME",
    "shorten",
    "slugify",
    "snake",
    "tool_name",
]

MAX_NAME = 64
MAX_TOOL_NAME = 64
MAX_SLUG = 24
RESERVED_FILES = frozenset({"body", "types", "skill", "index", "readme", "skill_md"})
_CAMEL1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL2 = re.compile(r"([a-z0-9])([A-Z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
FILLER = {
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


@cleared_after
@lru_cache(maxsize=65536)
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
    kept = [w for w in words if w not in FILLER] or words or ["api"]
    slug = ""
    for word in kept:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG:
            break
        slug = candidate
    return slug or kept[0][:MAX_SLUG]


def tool_name(slug: str, name: str) -> str:
    safe_slug = re.sub(r"[^A-Za-z0-9_-]+", "_", slug)
    full = f"{safe_slug}_{name}"
    if len(full) <= MAX_TOOL_NAME:
        return full
    return f"{safe_slug}_{shorten(name, MAX_TOOL_NAME - len(safe_slug) - 1)}"
