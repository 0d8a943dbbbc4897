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
from services.platform.ids import derived_id
from services.workers.delivery import Outgoing, Step, WorkerContext
from services.workers.inputs import derive_revision, load_revision
from services.workers.versions import version_files

__all__ = ["STEP", "render"]


def render(ctx: WorkerContext, event: RevisionCategorized) -> list[Outgoing]:
    inputs = load_revision(ctx, event.revision_id)
    grouping = Grouping.from_json(ctx.blobs.get(inputs.revision.grouping_blob)) if inputs.revision.grouping_blob else None
    package = derive_revision(ctx, inputs, grouping)
    keys = {path: ctx.blobs.put(data) for path, data in package.files.items()}
    skill_id = inputs.skill.id
    version_id = derived_id("version", skill_id, package.version_id)
    with ctx.records.session() as s:
        skill = s.get(Skill, skill_id)
        assert skill is not None
        live = s.get(Version, skill.live_version_id) if skill.live_version_id else None
        live_files = version_files(ctx.blobs, live) if live is not None and live.id != version_id else None
        existing = s.get(Version, version_id)
        created = existing is None
        if existing is None:
            diff = diff_packages(live_files, package.files) if live is None or live.id != version_id else diff_packages(package.files, package.files)
            s.add(Version(id=version_id, skill_id=skill_id, revision_id=event.revision_id, content_hash=package.version_id,
                          renderer=package.meta["derived_from"]["renderer"], files_json=json.dumps(keys, sort_keys=True),
                          hosts_json=json.dumps(package.meta["hosts"]), diff_json=json.dumps(diff, sort_keys=True),
                          base_version_id=live.id if live else None, created_at=datetime.now(UTC)))
            if skill.title == skill.slug:
                skill.title = str(package.meta["title"])[:200]
            source = s.get(Source, inputs.source.id)
            if source is not None:
                source.auth_header = package.meta["auth"]["header"]
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
