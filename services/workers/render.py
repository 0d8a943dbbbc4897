"""render: `revision.categorized` → the pure derivation with that grouping → content-addressed
files in the blob store → one immutable *proposed* version, with its diff against the live one.

A scheduled refresh's proposal raises an action item; nothing here ever publishes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from schemas.events import RevisionCategorized, VersionProposed
from schemas.records import ActionItem, Skill, Source, Version
from schemas.subjects import EVENTS
from services.derive.categories import Grouping
from services.derive.diff import diff_packages
from services.derive.package import package_id
from services.platform.ids import derived_id
from services.workers.delivery import Outgoing, Step, WorkerContext
from services.workers.inputs import (
    derivation_files,
    derive_revision,
    load_derivation,
    load_revision,
    store_derivation,
)
from services.workers.versions import version_files

__all__ = ["STEP", "render"]


def render(ctx: WorkerContext, event: RevisionCategorized) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    rev = inputs.revision
    parsed = load_derivation(ctx, rev.package_blob) if rev.package_blob else None
    if parsed is not None and rev.grouping_blob in (None, parsed.grouping):
        derivation = parsed  # the grouping stands: the parse stage's files are this version's
    else:
        grouping = Grouping.from_json(ctx.blobs.get(rev.grouping_blob)) if rev.grouping_blob else None
        derivation = store_derivation(ctx, derive_revision(ctx, inputs, grouping))
    keys = derivation.files
    files = derivation_files(ctx, derivation)
    meta = json.loads(files["skill.json"])
    content = package_id(files)
    skill_id = inputs.skill.id
    version_id = derived_id("version", skill_id, content)
    with ctx.records.session() as s:
        skill = s.get(Skill, skill_id)
        assert skill is not None
        live = s.get(Version, skill.live_version_id) if skill.live_version_id else None
        live_files = version_files(ctx.blobs, live) if live is not None and live.id != version_id else None
        existing = s.get(Version, version_id)
        created = existing is None
        if existing is None:
            diff = diff_packages(live_files, files)
            s.add(Version(id=version_id, skill_id=skill_id, revision_id=event.revision_id, content_hash=content,
                          renderer=meta["derived_from"]["renderer"], files_json=json.dumps(keys, sort_keys=True),
                          hosts_json=json.dumps(meta["hosts"]), diff_json=json.dumps(diff, sort_keys=True),
                          base_version_id=live.id if live else None, created_at=datetime.now(UTC)))
            if skill.title == skill.slug:
                skill.title = str(meta["title"])[:200]
            source = s.get(Source, inputs.source.id)
            if source is not None:
                source.auth_header = meta["auth"]["header"]
            if inputs.revision.created_by == "schedule":
                s.add(ActionItem(skill_id=skill_id, kind="refresh_proposal", version_id=version_id, created_at=datetime.now(UTC),
                                 message=f"{skill.slug}: the spec at {inputs.source.fetched_from} changed; version {version_id[:12]}"
                                         f" is proposed ({diff['summary']['added']} added, {diff['summary']['removed']} removed,"
                                         f" {diff['summary']['changed']} changed). Review it and publish: skillpress publish {skill.slug} {version_id[:12]}"))
        else:
            diff = json.loads(existing.diff_json)
    return [Outgoing(EVENTS["version_proposed"], VersionProposed(
        version_id=version_id, skill=event.skill, revision_id=event.revision_id, created=created,
        summary=diff.get("summary", {}), submission=event.submission), f"proposed:{version_id}:{event.revision_id}")]


STEP = Step("render", EVENTS["revision_categorized"], RevisionCategorized, render)
