"""The skill page's read model: its versions (the live one, the proposal after it, those passed
over), the version shown and its files, the annotations beside the file chosen, and what the
forms offer. Pure reads over the use-cases; `console` renders it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from skillpress.api.console_kit import ANNOTATION_KINDS, RISKS
from skillpress.app.base.context import AppContext
from skillpress.app.base.views import AnnotationView
from skillpress.app.records.runs import list_runs
from skillpress.errors import NotFound

__all__ = ["changes_view", "skill_view"]

FILES_SHOWN = 200  # a version's files listed at once; more are found by name (`q`)
LISTED = 40  # entries of each of a proposal's lists of changes shown; the rest load when asked
ANNOTATIONS_SHOWN = 50  # annotations a page of the skill page's table holds
CHANGE_LISTS = ("added", "removed", "changed")


def _listed(
    files: list[str], chosen: str | None, manifest: Any, query: str
) -> tuple[list[str], int]:
    """The files to list: all of a small version; of a large one the body, categories and
    metadata, the operations of the open category, and those whose name has `query`."""
    if len(files) <= FILES_SHOWN and not query:
        return files, 0
    operation_files = {o.file for o in manifest.operations} if manifest is not None else set()
    keep = [f for f in files if f not in operation_files]
    if manifest is not None and chosen:
        cat = next((c for c in manifest.categories if c.file == chosen), None)
        if cat is not None:
            keep += sorted(o.file for o in manifest.operations if o.category == cat.name)
    if query:
        keep += [f for f in sorted(operation_files) if query.lower() in f.lower()]
    shown = list(dict.fromkeys(keep))[:FILES_SHOWN]
    return shown, len(files) - len(shown)


def skill_view(
    ctx: AppContext,
    slug: str,
    file: str | None,
    ref: str | None,
    query: str = "",
    page: int = 1,
    drops_seen: dict[tuple[str, str | None], tuple[tuple[str, bool], ...]] | None = None,
) -> dict[str, Any]:
    """The skill page's whole read model: its versions (the live one, the proposal after it and
    what it changes), the version shown and the file chosen, and the annotations beside it."""
    from skillpress.app.operator.annotations import list_annotations, skill_credential
    from skillpress.app.records.versions import (
        diff_versions,
        find_skill,
        list_versions,
        manifest_of,
        pick_version,
        revision_published,
        version_files,
    )

    skill = find_skill(ctx, slug)
    versions = list_versions(ctx, slug)
    live, proposal, passed_over = _standing(versions)
    diff = diff_versions(ctx, slug, None, proposal["version_id"]) if proposal else None
    on_published = proposal is not None and revision_published(ctx, skill, proposal["revision_id"])
    drops = _drops(ctx, slug, proposal, live, drops_seen) if proposal else []
    shown = pick_version(ctx, skill, ref or versions[0]["version_id"]) if versions else None
    files = version_files(ctx.blobs, shown) if shown else {}
    manifest = manifest_of(files)
    annotations = list_annotations(ctx, slug)
    by_target: dict[str, list[AnnotationView]] = {}
    for a in annotations:
        by_target.setdefault(a["target"], []).append(a)
    chosen = file if file in files else ("body.md" if "body.md" in files else None)
    entry, beside = _beside(manifest, chosen, by_target)
    listed, hidden = _listed(sorted(files), chosen, manifest, query)
    here = {"v": ref, "file": file, "q": query}
    pages = max(1, -(-len(annotations) // ANNOTATIONS_SHOWN))
    page = min(max(page, 1), pages)
    first = (page - 1) * ANNOTATIONS_SHOWN
    return {
        "skill": skill,
        "versions": versions,
        "passed_over": passed_over,
        "live": live,
        "proposal": proposal,
        "diff": diff,
        "on_published": on_published,
        "drops": drops,
        "shown": shown,
        "files": listed,
        "files_hidden": hidden,
        "query": query,
        "file": chosen,
        "content": files[chosen].decode("utf-8", "replace") if chosen else "",
        "entry": entry,
        "beside": beside,
        "annotations": annotations[first : first + ANNOTATIONS_SHOWN],
        "annotations_total": len(annotations),
        "annotations_first": first,
        "annotation_page": page,
        "annotation_pages": [(n, _link(slug, {**here, "ap": n})) for n in range(1, pages + 1)],
        "LISTED": LISTED,
        "counts": {t: len(v) for t, v in by_target.items()},
        "operations": [o.name for o in manifest.operations] if manifest else [],
        "categories": [c.name for c in manifest.categories] if manifest else [],
        "kinds": ANNOTATION_KINDS,
        "OPTIONS_LISTED": OPTIONS_LISTED,
        "risks": RISKS,
        "runs": list_runs(ctx, skill.slug, RUNS_SHOWN),
        "credential": skill_credential(manifest, skill.slug),
    }


def _drops(
    ctx: AppContext,
    slug: str,
    proposal: Any,
    live: Any,
    seen: dict[tuple[str, str | None], tuple[tuple[str, bool], ...]] | None,
) -> list[tuple[str, bool]]:
    """The gates publishing the proposal would drop; versions never change, so the check behind
    this runs once per pair (kept in `seen`), not per view."""
    from skillpress.app.records.publish_check import gates_dropped

    key = (proposal["version_id"], live["version_id"] if live else None)
    seen = seen if seen is not None else {}
    if key not in seen:
        seen[key] = tuple(gates_dropped(ctx, slug, proposal["version_id"])[1])
    return list(seen[key])


def _beside(
    manifest: Any, chosen: str | None, by_target: dict[str, list[AnnotationView]]
) -> tuple[Any, list[AnnotationView]]:
    """The chosen file's operation (None for another file), and the annotations shown beside
    it: the operation's, its category's, or the skill's."""
    if manifest is None or not chosen:
        return None, []
    entry = next((o for o in manifest.operations if o.file == chosen), None)
    if entry is not None:
        return entry, by_target.get(f"operation:{entry.name}", [])
    cat = next((c for c in manifest.categories if c.file == chosen), None)
    return None, by_target.get(f"category:{cat.name}", []) if cat else by_target.get("skill", [])


def _standing(versions: list[Any]) -> tuple[Any, Any, list[Any]]:
    """The live version, the newest proposal after it (what publishing would change), and the
    proposals older than the live one (passed over: shown apart, folded)."""
    live = next((v for v in versions if v["live"]), None)
    after = [
        v
        for v in versions
        if v["status"] == "proposed" and (live is None or v["created_at"] > live["created_at"])
    ]
    passed_over = [
        v
        for v in versions
        if live is not None and v["status"] == "proposed" and v["created_at"] < live["created_at"]
    ]
    return live, next(iter(after), None), passed_over


RUNS_SHOWN = 20  # workflow runs the skill page lists (newest first)
# operations a form offers as a list to pick from; a larger API's are named (GitHub's 1,100
# names were 55 KB of every skill page, in the annotation form and each re-key choice)
OPTIONS_LISTED = 200


def _link(slug: str, params: dict[str, Any]) -> str:
    """The skill page's address with the parameters that are set (the first page is no `ap`)."""
    kept = {k: v for k, v in params.items() if v not in (None, "") and (k, v) != ("ap", 1)}
    return f"/skills/{slug}" + (f"?{urlencode(kept)}" if kept else "")


def changes_view(ctx: AppContext, slug: str, version: str | None, which: str) -> dict[str, Any]:
    """One of a version's lists of changes against the live one, whole (what the skill page
    shows the first `LISTED` of)."""
    from skillpress.app.records.versions import diff_versions

    if which not in CHANGE_LISTS:
        raise NotFound(f"no list {which!r} of changes: one of {', '.join(CHANGE_LISTS)}")
    return {"slug": slug, "diff": diff_versions(ctx, slug, None, version), "list": which}
