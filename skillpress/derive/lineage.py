"""Which proposal each change came from: between the live version and the one a person
publishes, every file's content is traced back to the earliest proposal from which on it is what
publishing puts live, and each proposal is said in words (a new revision of the spec, a note
added to an operation by someone). Pure over file keys (path → content hash): no file is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["AnnotationChange", "Step", "annotation_words", "origins", "why_made"]


@dataclass(frozen=True)
class Step:
    """One version in the line from live to the target: its id and its files' content keys."""

    version_id: str
    files: Mapping[str, str]


@dataclass(frozen=True)
class AnnotationChange:
    """A person's annotation added or retired between two versions."""

    kind: str
    target: str
    by: str
    retired: bool


def origins(live: Mapping[str, str], line: Sequence[Step], paths: Iterable[str]) -> dict[str, str]:
    """For each path, the id of the earliest version of `line` (oldest first, ending with the
    target) from which on the path's content (or its absence) is the target's. `live` is where
    the line starts; a path the target has as live has no origin and is left out."""
    if not line:
        return {}
    target = line[-1]
    out: dict[str, str] = {}
    for path in paths:
        wanted = target.files.get(path)
        if live.get(path) == wanted:
            continue
        origin = target.version_id
        for step in reversed(line[:-1]):
            if step.files.get(path) != wanted:
                break
            origin = step.version_id
        out[path] = origin
    return out


def _target_words(target: str) -> str:
    kind, _, name = target.partition(":")
    if kind == "operation":
        return name
    if kind == "category":
        return f"category {name}"
    return "the skill"


def annotation_words(change: AnnotationChange) -> str:
    """`note added to repos_delete by alice`, `approval retired from the skill by bob`."""
    verb = "retired from" if change.retired else "added to"
    return f"{change.kind} {verb} {_target_words(change.target)} by {change.by}"


def why_made(
    revision_changed: bool, revision_id: str | None, changes: Sequence[AnnotationChange]
) -> str:
    """What made a version, in words: a new revision of the spec, people's annotations, or
    neither (derived again, by a newer release)."""
    parts: list[str] = []
    if revision_changed:
        parts.append(f"a new revision of the spec ({(revision_id or '')[:12]})")
    shown = [annotation_words(c) for c in changes[:5]]
    if len(changes) > 5:
        shown.append(f"{len(changes) - 5} more annotation changes")
    parts.extend(shown)
    return "; ".join(parts) or "derived again (no spec or annotation change)"
