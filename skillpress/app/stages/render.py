"""Proposing a version: the pure derivation of a revision with the annotations as of one moment,
kept by its content (one immutable *proposed* version), with its diff against the live one
(operations added, removed, changed; annotations orphaned, and re-keying offered where a renamed
operation kept its method and path). Nothing here publishes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlmodel import Session

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import (
    RevisionInputs,
    annotations_in_force,
    derivation_files,
    derive_revision,
    load_derivation,
    store_derivation,
)
from skillpress.app.records.versions import newest_version, version_files
from skillpress.derive.annotations import operation_target
from skillpress.derive.categories import Grouping
from skillpress.derive.diff import PackageDiff, diff_packages
from skillpress.derive.package_types import package_id
from skillpress.format.manifest import Manifest
from skillpress.platform.ids import derived_id
from skillpress.schemas.records import ActionItem, AnnotationRecord, Skill, Source, Version

__all__ = ["Detached", "Proposed", "propose_for_change", "propose_for_revision", "propose_version"]


@dataclass(frozen=True)
class Proposed:
    """A proposed version: its id, skill, the revision it stands on, whether this call made it,
    and its diff's summary."""

    version_id: str
    skill: str
    revision_id: str
    created: bool
    summary: dict[str, Any]


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


def propose_version(ctx: AppContext, inputs: RevisionInputs, as_of: datetime) -> Proposed:
    """The version a revision makes with the annotations as of `as_of`: derived (or the parse
    stage's files, when nothing is added), stored once by its content, with its diff against the
    live version and re-keying offered for annotations it orphans; a scheduled refresh's proposal
    raises an action item. The same inputs again find the same version (`created` False)."""
    rev = inputs.revision
    annotations = annotations_in_force(ctx, inputs.skill.id, as_of)
    parsed = load_derivation(ctx.blobs, rev.package_blob) if rev.package_blob else None
    if parsed is not None and not annotations and rev.grouping_blob in (None, parsed.grouping):
        derivation = parsed  # nothing to add and the grouping stands: the parse stage's files are this version's
    else:
        grouping = (
            Grouping.from_json(ctx.blobs.get(rev.grouping_blob)) if rev.grouping_blob else None
        )
        derivation = store_derivation(ctx, derive_revision(ctx, inputs, grouping, annotations))
    files = derivation_files(ctx.blobs, derivation)
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
                    derivation_blob=derivation.manifest,
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
            diff = cast(PackageDiff, existing.diff)
    return Proposed(version_id, inputs.skill.slug, rev.id, created, dict(diff.get("summary", {})))


@dataclass(frozen=True)
class Detached:
    """No proposal: the skill is detached from its source and no longer regenerates."""

    revision_id: str
    skill: str

    @property
    def reason(self) -> str:
        return (
            f"{self.skill} is detached from its source: it no longer regenerates (its versions"
            " are edited as packages)"
        )


def _proposal(ctx: AppContext, inputs: RevisionInputs, as_of: datetime) -> Proposed | Detached:
    if inputs.skill.detached:
        return Detached(inputs.revision.id, inputs.skill.slug)
    return propose_version(ctx, inputs, as_of)


def propose_for_revision(ctx: AppContext, revision_id: str) -> tuple[Proposed | Detached, datetime]:
    """A new spec revision's version, with the annotations as of its fetch (and that moment)."""
    from skillpress.app.records.derivations import as_utc, load_revision

    inputs = load_revision(ctx, revision_id)
    as_of = as_utc(inputs.revision.fetched_at)
    return _proposal(ctx, inputs, as_of), as_of


def propose_for_change(ctx: AppContext, slug: str, as_of: datetime) -> Proposed | Detached:
    """The version a person's change proposes: the skill's latest revision with the annotations
    as of the change. NotFound when the skill has no revision to derive from."""
    from skillpress.app.records.derivations import latest_revision_id, load_revision
    from skillpress.app.records.versions import find_skill
    from skillpress.errors import NotFound

    revision_id = latest_revision_id(ctx, find_skill(ctx, slug).id)
    if revision_id is None:
        raise NotFound(f"{slug} has no categorized revision to derive from")
    return _proposal(ctx, load_revision(ctx, revision_id), as_of)
