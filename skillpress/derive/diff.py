"""The difference that matters between two packages: operations added, removed, and whose call changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired

import yaml
from typing_extensions import TypedDict

from skillpress.derive.declaration_diff import declaration_changes, description_only
from skillpress.format.declaration import DeclarationError
from skillpress.format.frontmatter import frontmatter_text, split_frontmatter
from skillpress.format.manifest import AuthInfo, Manifest

__all__ = ["ChangedOperation", "DiffSummary", "PackageDiff", "diff_packages", "gates"]


WORKFLOWS_FILE = "workflows.yaml"


DESCRIBED_SHOWN = 200  # operations (and other files) a diff names; the summary counts them all
# files every version's content changes with (its manifest and index): never news to a person
_BOOKKEEPING = frozenset({"skill.json", "index.json"})


def _manifest(files: dict[str, bytes]) -> Manifest:
    return Manifest.from_json(files["skill.json"])


def credential_words(auth: AuthInfo) -> str:
    """A skill's credential in words: where it goes, how, and the variable it is read from
    (`none` for a skill that sends none)."""
    if not auth.header:
        return "none"
    env = f", from ${auth.env}" if auth.env else ""
    return f"{auth.where} {auth.header} ({auth.kind or 'apiKey'}{env})"


class DiffSummary(TypedDict):
    """How many operations were added, removed and changed, and how many files differ."""

    added: int
    removed: int
    changed: int
    files_changed: int
    orphaned: NotRequired[int]  # annotations whose operation is gone (a stored version's diff)
    workflows: NotRequired[int]  # workflows added, removed or changed
    described: NotRequired[int]  # operations whose file changed but not their call


class ChangedOperation(TypedDict):
    """An operation whose call changed: what changed (method, path, tool, declaration)."""

    operation: str
    what: list[str]
    before: str
    after: str
    details: NotRequired[list[str]]  # what changed in the declaration, in words


class PackageDiff(TypedDict):
    """The difference that matters between two packages."""

    added: list[str]
    removed: list[str]
    changed: list[ChangedOperation]
    files_changed: int
    summary: DiffSummary
    # the annotations whose operation is gone, with the operations they may be re-keyed to (a
    # stored version's diff)
    orphaned: NotRequired[list[dict[str, Any]]]
    # each workflow added (+), removed (-) or changed (~, saying what), when any is
    workflows: NotRequired[list[str]]
    # operations whose file changes though their call does not (a person's note, a new
    # description: what publishing puts live too), the first DESCRIBED_SHOWN by name
    described: NotRequired[list[str]]
    # the other files that change (the body, a category's list, the types), by path
    other_files: NotRequired[list[str]]
    # the skill's credential, before → after, when it changed (`credential_words`)
    credential: NotRequired[str]


# what a workflow's change is named by, in this order
_WORKFLOW_PARTS = (
    "execution",
    "description",
    "parameters",
    "steps",
    "tool",
    "defaults",
    "procedure",
    "uses",
    "outputs",
)


def _workflows_of(data: bytes | None) -> dict[str, dict[str, Any]]:
    if not data:
        return {}
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return {}
    items = doc.get("workflows") if isinstance(doc, dict) else None
    return {
        str(w["name"]): w
        for w in items or []
        if isinstance(w, dict) and isinstance(w.get("name"), str)
    }


def workflow_changes(old: bytes | None, new: bytes | None) -> list[str]:
    """Each workflow of `new` (a workflows.yaml) added, removed or changed against `old`, in
    words: `+ name (execution)`, `- name`, `~ name: execution draft → hardened, steps`."""
    before, after = _workflows_of(old), _workflows_of(new)
    lines = [
        f"+ {n} ({after[n].get('execution', 'draft')})" for n in sorted(set(after) - set(before))
    ]
    lines += [f"- {n}" for n in sorted(set(before) - set(after))]
    for n in sorted(set(before) & set(after)):
        a, b = before[n], after[n]
        parts = []
        for key in _WORKFLOW_PARTS:
            if a.get(key) != b.get(key):
                parts.append(
                    f"execution {a.get('execution', 'draft')} → {b.get('execution', 'draft')}"
                    if key == "execution"
                    else key
                )
        if parts:
            lines.append(f"~ {n}: {', '.join(parts)}")
    return lines


def diff_packages(old: dict[str, bytes] | None, new: dict[str, bytes]) -> PackageDiff:
    """`{"added", "removed", "changed", "files_changed", "summary"}` of `new` against `old` (None: everything is added).

    An operation's call changed when its method, path, tool name or operation block differs;
    prose-only changes count in `files_changed` but not as a changed call.
    """
    now = _manifest(new)
    after = now.by_name()
    if old is None:
        added = sorted(after)
        first: PackageDiff = {
            "added": added,
            "removed": [],
            "changed": [],
            "files_changed": len(new),
            "summary": {"added": len(added), "removed": 0, "changed": 0, "files_changed": len(new)},
        }
        if flows := workflow_changes(None, new.get(WORKFLOWS_FILE)):
            first["workflows"] = flows
            first["summary"]["workflows"] = len(flows)
        return first
    was = _manifest(old)
    before = was.by_name()
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed: list[ChangedOperation] = []
    described: list[str] = []
    for name in sorted(set(after) & set(before)):
        a, b = before[name], after[name]
        what = [k for k in ("method", "path", "tool") if getattr(a, k) != getattr(b, k)]
        details: list[str] = []
        if frontmatter_text(old.get(a.file)) != frontmatter_text(new.get(b.file)) and not (
            description_only(b.file, old.get(a.file), new.get(b.file))  # the same call
        ):
            what.append("declaration")
            details = declaration_changes(b.file, old.get(a.file), new.get(b.file))
        if what:
            entry: ChangedOperation = {
                "operation": name,
                "what": what,
                "before": f"{a.method} {a.path}",
                "after": f"{b.method} {b.path}",
            }
            if details:
                entry["details"] = details
            changed.append(entry)
        elif old.get(a.file) != new.get(b.file):
            described.append(name)
    files_changed = sum(1 for p in set(old) | set(new) if old.get(p) != new.get(p))
    operation_files = {e.file for e in (*before.values(), *after.values())}
    other_files = sorted(
        p
        for p in set(old) | set(new)
        if old.get(p) != new.get(p) and p not in operation_files and p not in _BOOKKEEPING
    )
    out: PackageDiff = {
        "added": added,
        "removed": removed,
        "changed": changed,
        "files_changed": files_changed,
        "summary": {
            "added": len(added),
            "removed": len(removed),
            "changed": len(changed),
            "files_changed": files_changed,
        },
    }
    if described:
        out["described"] = described[:DESCRIBED_SHOWN]
        out["summary"]["described"] = len(described)
    if other_files:
        out["other_files"] = other_files[:DESCRIBED_SHOWN]
    if (said := credential_words(was.auth)) != (to := credential_words(now.auth)):
        out["credential"] = f"{said} → {to}"
    flows = workflow_changes(old.get(WORKFLOWS_FILE), new.get(WORKFLOWS_FILE))
    if flows:
        out["workflows"] = flows
        out["summary"]["workflows"] = len(flows)
    return out


def gates(files: Mapping[str, bytes]) -> dict[str, str]:
    """Every approval gate a package declares: `matches` → the file declaring it."""
    out: dict[str, str] = {}
    for path, data in sorted(files.items()):
        if not path.endswith(".md") or b"approval" not in data:
            continue
        try:
            front = split_frontmatter(path, data.decode("utf-8")).frontmatter
        except (DeclarationError, UnicodeDecodeError):
            continue
        approval = front.get("approval")
        if isinstance(approval, dict) and isinstance(approval.get("matches"), str):
            words = approval["matches"].split()
            if len(words) == 2:
                out[f"{words[0].upper()} {words[1]}"] = path
    return out
