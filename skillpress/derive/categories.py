"""Group operations into categories: from the spec's tags first, from path structure when tags fail.

Tags fail in recognisable ways, each reported so a later fallback (a model) can act:
`no_tags` (most operations untagged), `single_tag` (one tag covers nearly everything),
`tag_per_operation` (a tag per operation, so no grouping at all).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from skillpress.derive.model import Operation
from skillpress.format.gc_pause import cleared_after
from skillpress.format.names import snake

__all__ = [
    "Category",
    "Grouping",
    "tag_failure",
    "group_by_tags",
    "group_by_paths",
    "split_oversize",
]

_VERSION = re.compile(r"^(v\d+([._-]\d+)*|\d+([._-]\d+)*|api|rest)$", re.IGNORECASE)


@dataclass
class Category:
    name: str  # file-safe, distinct from every operation name
    title: str
    description: str
    ops: list[Operation] = field(default_factory=list)
    parent: str | None = (
        None  # a subcategory's category: made only where a category is too large for one read
    )
    notes: list[str] = field(
        default_factory=list
    )  # people's notes on the category (annotations by tag)


@dataclass(frozen=True)
class Grouping:
    """A categorization decided once (by the categorize stage: tags, paths or a model) and
    handed to the render stage, which applies it as given: operations named, never moved."""

    source: str  # flat | tags | paths | model
    tag_failure: str | None
    mode: str  # flat (the body lists operations) | categories (the body lists categories)
    categories: tuple[
        tuple[str, str, str, tuple[str, ...]], ...
    ] = ()  # (name, title, description, operation names)
    parents: tuple[tuple[str, str], ...] = ()  # (subcategory, its category)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "source": self.source,
                "tag_failure": self.tag_failure,
                "mode": self.mode,
                "parents": dict(self.parents),
                "categories": [
                    {"name": n, "title": t, "description": d, "operations": list(ops)}
                    for n, t, d, ops in self.categories
                ],
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Grouping:
        raw = json.loads(data)
        cats = tuple(
            (
                str(c["name"]),
                str(c["title"]),
                str(c["description"]),
                tuple(str(o) for o in c["operations"]),
            )
            for c in raw["categories"]
        )
        return cls(
            str(raw["source"]),
            raw.get("tag_failure"),
            str(raw["mode"]),
            cats,
            tuple(sorted((raw.get("parents") or {}).items())),
        )

    def apply(self, ops: list[Operation], op_names: set[str]) -> list[Category] | None:
        """The categories for `ops`, or None when this grouping does not place every operation
        exactly once under a name distinct from every operation's."""
        by_name = {op.name: op for op in ops}
        placed = [n for *_, names in self.categories for n in names]
        if sorted(placed) != sorted(by_name) or any(c[0] in op_names for c in self.categories):
            return None
        parents = dict(self.parents)
        return [
            Category(n, t, d, [by_name[o] for o in names], parents.get(n))
            for n, t, d, names in self.categories
        ]


def tag_failure(ops: list[Operation]) -> str | None:
    """How the spec's tags fail as a grouping, or None when they work."""
    if not ops:
        return None
    first = [op.tags[0] if op.tags else None for op in ops]
    tagged = [t for t in first if t is not None]
    if len(tagged) * 2 < len(ops):
        return "no_tags"
    counts = Counter(tagged)
    if (
        len(ops) >= 4
        and len(counts) == 1
        or (len(ops) >= 10 and counts.most_common(1)[0][1] >= 0.9 * len(ops))
    ):
        return "single_tag"
    if len(ops) >= 4 and len(counts) >= 0.8 * len(ops):
        return "tag_per_operation"
    return None


def _unique(base: str, taken: set[str], also: set[str] | frozenset[str] = frozenset()) -> str:
    """`base`, or the first `base_2`, `base_3`… in neither `taken` nor `also`."""
    base = base or "other"
    name, n = base, 2
    while name in taken or name in also:
        name, n = f"{base}_{n}", n + 1
    return name


def _category_name(raw: str, op_names: set[str], taken: set[str]) -> str:
    """A file-safe name no operation and no other category has (recorded in `taken`)."""
    base = snake(raw)[:48].rstrip("_") or "other"
    if base in op_names:
        base = f"{base}_ops"
    name = _unique(base, taken, op_names)
    taken.add(name)
    return name


def group_by_tags(ops: list[Operation], tag_docs: dict[str, str]) -> list[Category]:
    op_names = {op.name for op in ops}
    taken: set[str] = set()
    by_tag: dict[str, Category] = {}
    order: list[str] = []
    for op in ops:
        tag = op.tags[0] if op.tags else "other"
        if tag not in by_tag:
            name = _category_name(tag, op_names, taken)
            by_tag[tag] = Category(name, tag, tag_docs.get(tag, ""))
            order.append(tag)
        by_tag[tag].ops.append(op)
    return [by_tag[t] for t in order]


_EXT = re.compile(r"\.(json|xml|csv|txt)$", re.IGNORECASE)


@cleared_after
@lru_cache(maxsize=65536)
def _segments(path: str) -> tuple[str, ...]:
    """A path's meaningful segments: no parameters, versions or `api`, no file extensions."""
    return tuple(
        _EXT.sub("", s)
        for s in path.strip("/").split("/")
        if s and not s.startswith("{") and not _VERSION.match(s)
    )


def _path_key(path: str, level: int) -> str | None:
    segs = _segments(path)
    return segs[level] if len(segs) > level else None


def group_by_paths(ops: list[Operation]) -> list[Category]:
    """Offline grouping: by the first meaningful path segment (versions and `api` skipped)."""
    op_names = {op.name for op in ops}
    taken: set[str] = set()
    level = 0
    while level < 4:
        keys = {_path_key(op.path, level) for op in ops}
        if len(keys) != 1 or None in keys:
            break
        level += 1
    groups: dict[str, list[Operation]] = {}
    for op in ops:
        key = _path_key(op.path, level) or _path_key(op.path, max(level - 1, 0)) or "root"
        groups.setdefault(key, []).append(op)
    cats: list[Category] = []
    small: list[Operation] = []
    for key, members in groups.items():
        if len(members) == 1 and len(groups) > 12:
            small.extend(members)
            continue
        title = key.replace("-", " ").replace("_", " ")
        cats.append(
            Category(_category_name(key, op_names, taken), title, f"Operations on /{key}", members)
        )
    if small:
        cats.append(
            Category(
                _category_name("other", op_names, taken),
                "other",
                "Operations that fit no larger group",
                small,
            )
        )
    return cats


def split_oversize(
    cats: list[Category],
    fits: Callable[[Category], bool],
    ops_names: set[str],
    size_of: Callable[[Operation], int],
    room: int,
) -> list[Category]:
    """Every category whose file would not fit one read, split into parts that do, each a
    category of its own (so the body lists it and any operation stays two reads away): the
    operations grouped by their next path segment, groups packed in order into as few parts as
    fit `room` bytes of lines (`size_of` an operation's), a group larger than a part cut in order.
    Empty categories are dropped."""
    taken = {c.name for c in cats}
    out: list[Category] = []
    for cat in cats:
        if not cat.ops:
            continue
        if fits(cat):
            out.append(cat)
            continue
        taken.discard(cat.name)
        groups: dict[str, list[Operation]] = {}
        for op in cat.ops:
            key = _path_key(op.path, 1) or _path_key(op.path, 0) or "root"
            groups.setdefault(key, []).append(op)
        bins: list[tuple[list[str], list[Operation]]] = []
        used = room + 1
        for key, members in groups.items():
            for op in members:
                size = size_of(op)
                if used + size > room or len(bins[-1][1]) >= _MAX_PART_OPS:
                    bins.append(([], []))
                    used = 0
                keys, part = bins[-1]
                if not keys or keys[-1] != key:
                    keys.append(key)
                part.append(op)
                used += size
        for n, (keys, part) in enumerate(bins, 1):
            span = keys[0] if len(keys) == 1 else f"{keys[0]} … {keys[-1]}"
            name = _category_name(
                f"{cat.name}_{keys[0]}" if len(keys) == 1 else f"{cat.name}_{n}", ops_names, taken
            )
            title = f"{cat.title} ({span}; part {n} of {len(bins)})"
            out.append(Category(name, title, cat.description, part, cat.name, list(cat.notes)))
    return out


_MAX_PART_OPS = 400  # lines in a part's file stay well under a read's 2,000


def make_sections(
    cats: list[Category], count: int, op_names: set[str]
) -> list[tuple[Category, list[Category]]]:
    """`cats` in order, in `count` sections of consecutive categories (the second level of a
    very large API): each a file listing its categories, named after the first and last."""
    taken = {c.name for c in cats}
    size = -(-len(cats) // max(count, 1))
    out: list[tuple[Category, list[Category]]] = []
    for start in range(0, len(cats), size):
        members = cats[start : start + size]
        first, last = members[0].name, members[-1].name
        name = _category_name(f"section_{len(out) + 1}", op_names, taken)
        title = first if first == last else f"{first} … {last}"
        out.append((Category(name, title, "", [op for c in members for op in c.ops]), members))
    return out
