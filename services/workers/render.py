"""render: the pure derivation of a revision with the annotations as of one moment → content-
addressed files in the blob store → one immutable *proposed* version, with its diff against the
live one (operations added, removed, changed; annotations orphaned, and re-keying offered where
a renamed operation kept its method and path).

Two triggers: `revision.categorized` (a new spec revision, with the annotations as of its fetch)
and `annotation.changed` (the latest revision, with the annotations as of the change). A
scheduled refresh's proposal raises an action item; nothing here ever publishes; a skill
detached from its source no longer regenerates.
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlmodel import Session

from schemas.events import AnnotationChanged, RevisionCategorized, RevisionRejected, VersionProposed
from schemas.records import ActionItem, AnnotationRecord, Skill, Source, Version
from schemas.subjects import EVENTS
from services.app.context import AppContext
from services.app.derivations import (
    RevisionInputs,
    active_annotations,
    as_utc,
    derivation_files,
    derive_revision,
    latest_revision_id,
    load_derivation,
    load_revision,
    store_derivation,
)
from services.app.versions import newest_version, version_files
from services.derive.annotations import operation_target
from services.derive.categories import Grouping
from services.derive.diff import diff_packages
from services.derive.manifest import Manifest
from services.derive.package import package_id
from services.errors import NotFound
from services.platform.ids import derived_id
from services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "STEP_ANNOTATIONS", "render", "render_annotations"]


def _rekey_offers(
    s: Session, orphaned: list[str], before: dict[str, bytes] | None, after: dict[str, bytes]
) -> list[dict[str, str | None]]:
    """For each orphaned annotation: its operation, and the operation that now has its method and path."""
    old = Manifest.from_json(before["skill.json"]).by_name() if before else {}
    new_by_call = {
        (o.method, o.path): o.name for o in Manifest.from_json(after["skill.json"]).operations
    }
    offers: list[dict[str, str | None]] = []
    for aid in orphaned:
        rec = s.get(AnnotationRecord, aid)
        if rec is None:
            continue
        name = operation_target(rec.target)
        was = old.get(name or "")
        to = new_by_call.get((was.method, was.path)) if was else None
        offers.append({"id": aid, "kind": rec.kind, "operation": name, "rekey_to": to})
    return offers


def _propose(
    ctx: AppContext, inputs: RevisionInputs, as_of: datetime, submission: str | None
) -> list[Outgoing]:
    rev = inputs.revision
    with ctx.records.session() as s:
        annotations = active_annotations(s, inputs.skill.id, as_of)
    parsed = load_derivation(ctx, rev.package_blob) if rev.package_blob else None
    if parsed is not None and not annotations and rev.grouping_blob in (None, parsed.grouping):
        derivation = parsed  # nothing to add and the grouping stands: the parse stage's files are this version's
    else:
        grouping = (
            Grouping.from_json(ctx.blobs.get(rev.grouping_blob)) if rev.grouping_blob else None
        )
        derivation = store_derivation(ctx, derive_revision(ctx, inputs, grouping, annotations))
    files = derivation_files(ctx, derivation)
    meta = Manifest.from_json(files["skill.json"])
    content = package_id(files)
    skill_id = inputs.skill.id
    version_id = derived_id("version", skill_id, content)
    with ctx.records.session() as s:
        skill = s.get(Skill, skill_id)
        assert skill is not None
        existing = s.get(Version, version_id)
        created = existing is None
        if existing is None:
            live = s.get(Version, skill.live_version_id) if skill.live_version_id else None
            live_files = version_files(ctx.blobs, live) if live is not None else None
            diff = diff_packages(live_files, files)
            orphaned = list(meta.annotations.orphaned) if meta.annotations else []
            if orphaned:  # where the operation was: the live version, else the newest one
                newest = live or newest_version(s, skill_id)
                diff["orphaned"] = _rekey_offers(
                    s, orphaned, version_files(ctx.blobs, newest) if newest else None, files
                )
                diff["summary"]["orphaned"] = len(orphaned)
            s.add(
                Version(
                    id=version_id,
                    skill_id=skill_id,
                    revision_id=rev.id,
                    content_hash=content,
                    renderer=meta.renderer,
                    files_json=json.dumps(derivation.files, sort_keys=True),
                    hosts_json=json.dumps(list(meta.hosts)),
                    diff_json=json.dumps(diff, sort_keys=True),
                    base_version_id=live.id if live else None,
                    annotations_as_of=as_of if annotations else None,
                    created_at=ctx.clock(),
                )
            )
            if skill.title == skill.slug:
                skill.title = meta.title[:200]
            source = s.get(Source, inputs.source.id)
            if source is not None:
                source.auth_header = meta.auth.header
            if rev.created_by == "schedule":
                sm = diff["summary"]
                s.add(
                    ActionItem(
                        skill_id=skill_id,
                        kind="refresh_proposal",
                        version_id=version_id,
                        created_at=ctx.clock(),
                        message=f"{skill.slug}: the spec at {inputs.source.fetched_from} changed; version {version_id[:12]}"
                        f" is proposed ({sm['added']} added, {sm['removed']} removed, {sm['changed']} changed)."
                        f" Review it and publish: skillpress publish {skill.slug} {version_id[:12]}",
                    )
                )
        else:
            diff = json.loads(existing.diff_json)
    return [
        Outgoing(
            EVENTS["version_proposed"],
            VersionProposed(
                version_id=version_id,
                skill=inputs.skill.slug,
                revision_id=rev.id,
                created=created,
                summary=diff.get("summary", {}),
                submission=submission,
            ),
            f"proposed:{version_id}:{rev.id}:{as_of.isoformat()}",
        )
    ]


def _detached(ctx: AppContext, inputs: RevisionInputs, submission: str | None) -> list[Outgoing]:
    reason = f"{inputs.skill.slug} is detached from its source: it no longer regenerates (its versions are edited as packages)"
    return [
        Outgoing(
            EVENTS["revision_rejected"],
            RevisionRejected(
                revision_id=inputs.revision.id,
                skill=inputs.skill.slug,
                reason=reason,
                submission=submission,
            ),
            f"detached:{inputs.revision.id}",
        )
    ]


def render(ctx: AppContext, event: RevisionCategorized) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    if inputs.skill.detached:
        return _detached(ctx, inputs, event.submission)
    return _propose(ctx, inputs, as_utc(inputs.revision.fetched_at), event.submission)


def render_annotations(ctx: AppContext, event: AnnotationChanged) -> list[Outgoing]:
    as_of = as_utc(datetime.fromisoformat(event.as_of))
    with ctx.records.session() as s:
        skill = s.get(Skill, derived_id("skill", event.skill))
        if skill is None:
            raise NotFound(f"no skill {event.skill!r}")
        skill_id = skill.id
    revision_id = latest_revision_id(ctx, skill_id)
    if revision_id is None:
        raise NotFound(f"{event.skill} has no categorized revision to derive from")
    inputs = load_revision(ctx, revision_id)
    if inputs.skill.detached:
        return _detached(ctx, inputs, event.submission)
    return _propose(ctx, inputs, as_of, event.submission)


STEP = Step("render", EVENTS["revision_categorized"], RevisionCategorized, render)
STEP_ANNOTATIONS = Step(
    "render",
    EVENTS["annotation_changed"],
    AnnotationChanged,
    render_annotations,
    durable="render-annotations",
)
