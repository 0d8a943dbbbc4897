"""Names: the skill's slug, operation names (file names too) and provider-safe tool names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations, pairwise

from skillpress.derive.model import Operation
from skillpress.format.names import FILLER, MAX_NAME, MAX_SLUG, shorten, slugify, snake, tool_name

RESERVED_FILES = frozenset({"body", "types", "skill", "index", "readme", "skill_md"})

__all__ = [
    "api_slug",
    "assign_names",
    "too_long",
    "RESERVED_FILES",
]

_TITLE_FILLER = FILLER | {
    "official",
    "platform",
    "protocol",
    "extension",
    "extensions",
    "documentation",
    "docs",
    "reference",
    "sample",
    "for",
    "namespace",
    "odata",
    "preview",
    "web",
    "of",
    "and",
    "a",
    "an",
    "to",
    "io",
}
_PLAIN_SUB = frozenset(
    [
        "api",
        "apis",
        "www",
        "rest",
        "app",
        "gateway",
        "public",
        "developer",
        "developers",
        "dev",
        "sandbox",
        "test",
        "staging",
        "prod",
        "web",
        "secure",
        "service",
        "services",
        "cal",
        "live",
        "beta",
    ]
)
_NOT_NAMES = frozenset({"swagger", "example", "localhost", "local", "test", "invalid"})
_RESERVED_TLDS = frozenset({"test", "example", "invalid"})  # RFC 2606: names of nothing
_VERSIONISH = re.compile(r"^(v?\d+[a-z]?|\d.*)$")


def _title_words(title: str) -> list[str]:
    """A title's words as written (`GitHub's` → `github`, `OData` → `odata`), versions dropped."""
    words = re.findall(r"[A-Za-z0-9]+", re.sub(r"['’]s\b", "", title))
    return [w.lower() for w in words if not _VERSIONISH.match(w.lower())]


def _host_names(base_url: str | None) -> tuple[str | None, str | None]:
    """(the API's own name in its host, a meaningful subdomain): `graph.microsoft.com` →
    (microsoft, graph); `api.github.com` → (github, None); localhost or an IP → (None, None)."""
    if not base_url:
        return None, None
    host = re.sub(r"^[a-z]+://", "", base_url.lower()).split("/", 1)[0].split(":", 1)[0]
    labels = [x for x in host.split(".") if x]
    if len(labels) < 2 or all(x.isdigit() for x in labels) or labels[-1] in _RESERVED_TLDS:
        return None, None
    at = -2
    if (
        len(labels) >= 3
        and labels[-2] in ("co", "com", "org", "net", "gov", "ac")
        and len(labels[-1]) == 2
    ):
        at = -3
    name = labels[at]
    rest = labels[:at]
    sub = (
        rest[0]
        if rest and rest[0].isalpha() and len(rest[0]) >= 3 and rest[0] not in _PLAIN_SUB
        else None
    )
    if name in _NOT_NAMES or not name.isalnum() or len(name) < 3:
        return None, None
    return name, sub


def api_slug(title: str, base_url: str | None, info: dict[str, object] | None = None) -> str:
    """The short name a person would give the API: from the directory's `x-providerName` and
    `x-serviceName` hints, else its host's own name (with a meaningful subdomain: graph.microsoft.com
    → microsoft-graph) when the title names it too or adds one word, else the title's words
    without filler (`The Jira Cloud platform REST API` → jira-cloud). Stable: the same document
    gives the same slug."""
    info = info or {}
    provider, service = info.get("x-providerName"), info.get("x-serviceName")
    if isinstance(provider, str) and provider:
        name, _ = _host_names("https://" + provider if "." in provider else f"https://{provider}.x")
        words = [w for w in (name, service if isinstance(service, str) else None) if w]
        words = [snake(w).replace("_", "-") for w in words]
        if words and words[0]:
            return _fit(list(dict.fromkeys(words)))
    words = [w for w in _title_words(title) if w not in _TITLE_FILLER]
    name, sub = _host_names(base_url)
    if name:
        if name in words:
            return _fit([name, sub] if sub and sub != name else [name])
        return _fit([name, *(words[:1] or ([sub] if sub else []))])
    return _fit(words[:3]) if words else slugify(title)


def _fit(words: Sequence[str | None]) -> str:
    slug = ""
    for word in words:
        if not word:
            continue
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG:
            break
        slug = candidate
    return slug or (next((w for w in words if w), "api") or "api")[:MAX_SLUG]


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


def _said_once(words: list[str]) -> list[str]:
    """A run of two or more words said twice, said once (the later, more specific, kept)."""
    if len(set(words)) == len(words) or len(set(pairwise(words))) == len(words) - 1:
        return words  # no word, or no pair of words, said twice: no run is
    while True:
        # a run said twice starts where a pair of words is said twice: look only there
        at: dict[tuple[str, str], list[int]] = {}
        for i in range(len(words) - 1):
            at.setdefault((words[i], words[i + 1]), []).append(i)
        starts = sorted(i for found in at.values() if len(found) > 1 for i in found)
        if not starts:
            return words
        cut = _first_repeat(words, starts)
        if cut is None:
            return words
        words = words[: cut[0]] + words[cut[0] + cut[1] :]


def _first_repeat(words: list[str], starts: list[int]) -> tuple[int, int] | None:
    """(where, how long) the longest run (at most 8 words) said again later, first one first."""
    for n in range(min(8, len(words) // 2), 1, -1):
        seen: dict[tuple[str, ...], int] = {}
        for i in starts:
            if i + n > len(words):
                break
            gram = tuple(words[i : i + n])
            first = seen.setdefault(gram, i)
            if first + n <= i:
                return first, n
    return None


def shorter_forms(operation_id: str) -> list[str]:
    """Shorter names for a long operation id, by meaning, fewest words dropped first: words said
    twice said once; then for a dotted id (`drives.items.workbook.….GetFormat`) its first and last
    parts kept and one or two of the parts between them dropped (earlier ones first: the
    later are the more specific); then its last part alone."""
    out = ["_".join(_said_once(snake(operation_id).split("_")))]
    parts = [snake(p) for p in operation_id.split(".") if snake(p)]
    middle = range(1, len(parts) - 1)
    for count in (1, 2):
        for dropped in combinations(middle, count):
            kept = [p for i, p in enumerate(parts) if i not in dropped]
            out.append("_".join(_said_once("_".join(kept).split("_"))))
    if len(parts) > 2:
        out.append(f"{parts[0]}_{parts[-1]}")
    if len(parts) > 1:
        out.append(parts[-1])
    return list(dict.fromkeys(out))


def too_long(operation_id: str) -> bool:
    """Whether an operation id is too long to be a name as it is (`shorter_forms` are tried)."""
    return len(snake(operation_id)) > MAX_NAME


def _short_names(
    ops: list[Operation], known: Mapping[str, list[str]] | None = None
) -> dict[int, list[str]]:
    """For each operation whose id is too long for a name, its shorter forms that no other
    operation could also be called (so which one gets a name never depends on order).
    `known`: `shorter_forms` of ids, worked out already (elsewhere, meanwhile)."""
    known = known or {}
    forms = {
        i: [
            f
            for f in (known.get(op.operation_id) or shorter_forms(op.operation_id))
            if f and len(f) <= MAX_NAME
        ]
        for i, op in enumerate(ops)
        if op.operation_id and too_long(op.operation_id)
    }
    counts: dict[str, int] = {}
    for op in ops:
        if op.operation_id:
            full = snake(op.operation_id)
            counts[full] = counts.get(full, 0) + 1
    for found in forms.values():
        for f in set(found):
            counts[f] = counts.get(f, 0) + 1
    return {i: [f for f in found if counts[f] == 1] for i, found in forms.items()}


def assign_names(
    ops: list[Operation],
    slug: str,
    reserved: Iterable[str] = (),
    known_forms: Mapping[str, list[str]] | None = None,
) -> None:
    """Give every operation a unique, file-safe name and a unique provider-safe tool name: the
    operation id in snake case, shortened by meaning when too long (a hash only past that).
    `known_forms`: `shorter_forms` of long ids already worked out (the rest are worked out here)."""
    taken = set(RESERVED_FILES) | {r.lower() for r in reserved}
    unnamed = [op.path for op in ops if not op.operation_id]
    prefix = _common_prefix(unnamed) if len(unnamed) > 1 else 0
    short = _short_names(ops, known_forms)
    for i, op in enumerate(ops):
        base = snake(op.operation_id) if op.operation_id else ""
        if i in short:
            base = next((f for f in short[i] if f not in taken), base)
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
