"""publish: `cmd.publish_version` → one live version per skill → `version.published`, carrying what
a runtime needs to load it (every file's blob key, the hosts, the credential header's name)."""

from __future__ import annotations

import json

from sqlmodel import col, select

from schemas.events import LiveVersion, PublishVersion, VersionPublished
from schemas.records import Publication, Skill, Version
from schemas.subjects import COMMANDS, EVENTS
from services.app.context import AppContext
from services.app.versions import check_publish, find_version
from services.derive.manifest import Manifest
from services.errors import NotFound
from services.platform.broker import live_subject
from services.platform.ids import derived_id
from services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "publish"]


def publish(ctx: AppContext, cmd: PublishVersion) -> list[Outgoing]:
    with ctx.records.session() as s:
        skill = s.get(Skill, derived_id("skill", cmd.skill))
        if skill is None:
            raise NotFound(f"no skill {cmd.skill!r}")
        version = find_version(s, skill, cmd.version_id)  # PublishRefused: a dead letter
        latest = s.exec(
            select(Publication)
            .where(Publication.skill_id == skill.id)
            .order_by(col(Publication.id).desc())
        ).first()
        previous: str | None
        if (
            skill.live_version_id == version.id
            and latest is not None
            and latest.version_id == version.id
        ):
            publication_id, previous = latest.id, latest.previous_version_id
        else:
            check_publish(s, ctx.blobs, skill, version, cmd.remove_gates)
            previous = skill.live_version_id
            if previous:
                old = s.get(Version, previous)
                if old is not None:
                    old.status = "superseded"
            version.status = "published"
            skill.live_version_id = version.id
            pub = Publication(
                skill_id=skill.id,
                version_id=version.id,
                previous_version_id=previous,
                published_by=cmd.requested_by[:128],
                published_at=ctx.clock(),
            )
            s.add(pub)
            s.flush()
            publication_id = pub.id
        keys: dict[str, str] = json.loads(version.files_json)
        hosts: list[str] = json.loads(version.hosts_json)
        auth_header = (
            Manifest.from_json(ctx.blobs.get(keys["skill.json"])).auth.header
            if "skill.json" in keys
            else None
        )
        event = VersionPublished(
            version_id=version.id,
            skill=skill.slug,
            files=keys,
            hosts=hosts,
            auth_header=auth_header,
            previous_version_id=previous,
        )
    live = LiveVersion(
        skill=skill.slug, version_id=version.id, files=keys, hosts=hosts, auth_header=auth_header
    )
    return [
        Outgoing(live_subject(skill.slug), live, f"live:{version.id}:{publication_id}"),
        Outgoing(EVENTS["version_published"], event, f"published:{version.id}:{publication_id}"),
    ]


STEP = Step("publish", COMMANDS["publish_version"], PublishVersion, publish)
