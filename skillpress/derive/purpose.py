"""What a skill is for, in the words an agent picks a skill by: the API's name and what it
covers, in one or two sentences, with no URL (the Agent Skills `description`, the MCP server's
instructions, the body's first lines).

A spec's own description often says where the document came from instead ("OpenAPI specs from
… with the x-octokit extension", "Please see … for more details"): such sentences are left out,
and the areas the operations cover say what the API is for.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from skillpress.derive.model import Operation
from skillpress.format.text import first_sentence, full_text, one_line, without_urls

__all__ = ["MAX_PURPOSE", "skill_purpose"]

MAX_PURPOSE = 1000  # under the Agent Skills description's 1,024 characters
# a sentence about the document, not the API
_PROVENANCE = re.compile(
    r"\b(openapi|swagger|specs?\b|specification|generated|sdks?\b|x-[a-z-]+|please see|for more"
    r" (?:details|information)|documentation|this (?:document|file)|api reference)\b",
    re.I,
)
_VERSIONISH = re.compile(r"^(v\d+(\.\d+)*|api|rest|\d+(\.\d+)*|latest)$", re.I)


def _own_words(description: str) -> str:
    """The description's first sentences that say what the API is (not where its spec is from),
    skipping headings and empty emphasis, at most two sentences, URLs out."""
    text = full_text(description or "", 2000)
    for para in text.split("\n\n"):
        para = para.strip()
        if not para or para.startswith(("#", "|", "```", "- ", "* ")):
            continue
        if para.startswith("**") and para.endswith("**") and "\n" not in para:
            continue  # a heading, demoted
        line = without_urls(one_line(para))
        if not line or len(line) < 12:
            continue
        sentences = [
            s.strip()
            for s in re.split(r"(?<=[.!?])\s+", line)
            if s.strip() and not _PROVENANCE.search(s)
        ]
        if sentences:
            return " ".join(sentences[:2])
        return ""
    return ""


def _areas(ops: Sequence[Operation]) -> list[tuple[str, int]]:
    """What the operations are about, largest first: their tags when most operations have one,
    else the first path segment that names something (not a version or a parameter)."""
    tagged = [op for op in ops if op.tags]
    counts: Counter[str] = Counter()
    if len(tagged) * 5 >= len(ops) * 3:
        for op in tagged:
            counts[one_line(op.tags[0])[:60]] += 1
    else:
        for op in ops:
            segment = next(
                (
                    s
                    for s in op.path.strip("/").split("/")
                    if s and not s.startswith("{") and not _VERSIONISH.match(s)
                ),
                None,
            )
            if segment:
                counts[segment.split("?")[0][:60]] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].lower()))


def skill_purpose(title: str, description: str, ops: Sequence[Operation]) -> str:
    """One or two sentences: what the API is (its own words, or its name) and what it covers."""
    own = _own_words(description)
    name = one_line(title).rstrip(".")
    if _PROVENANCE.search(name):  # "GitHub's official OpenAPI spec + …": the API is GitHub's
        first = re.split(r"['’]s\b|\s", name, maxsplit=1)[0]
        name = f"The {first} API" if first and not _PROVENANCE.search(first) else name
    if not own:
        lead = f"{name}."
    elif name.split(" ")[0].lower() in own.lower():
        lead = own if own.endswith((".", "!", "?")) else own + "."
    else:
        lead = f"{name}: {own}" + ("" if own.endswith((".", "!", "?")) else ".")
    areas = _areas(ops)
    shown = [a for a, _ in areas[:8]]
    covers = ""
    if shown:
        more = len(areas) - len(shown)
        listed = ", ".join(shown) + (f" and {more} more areas" if more > 0 else "")
        count = f"{len(ops):,} operation{'s' if len(ops) != 1 else ''}"
        covers = f" Use it to work with {listed} ({count})."
    text = first_sentence(lead, MAX_PURPOSE) if len(lead) > MAX_PURPOSE else lead
    if len(text) + len(covers) > MAX_PURPOSE:
        covers = ""
    return (text + covers).strip()
