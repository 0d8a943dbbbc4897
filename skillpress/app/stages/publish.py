"""Publishing a version: one live version per skill, checked first (its files load as the
runtime will load them; a gate it would drop needs `remove_gates`), its files written as blobs of
their own (what followers read by key), recorded as a publication.
A redelivered command finds its own publication and answers the same."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import col, select

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import loosen_files
from skillpress.app.records.publish_check import check_publish
from skillpress.app.records.versions import find_version
from skillpress.errors import NotFound
from skillpress.format.manifest import Manifest
from skillpress.platform.ids import derived_id
from skillpress.schemas.records import Publication, Skill, Version

__all__ = ["Published", "publish_version"]


@dataclass(frozen=True)
class Published:
    """What a runtime needs to load the version now live (every file's blob key, the hosts, the
    credential header's name), and the publication it was."""

    skill: str
    version_id: str
    files: dict[str, str]
    hosts: list[str]
    auth_header: str | None
    previous_version_id: str | None
    publication_id: int
    already_live: bool = False
    pack: str | None = None  # the derivation whose pack holds every file


def publish_version(
    ctx: AppContext, slug: str, ref: str, remove_gates: bool, requested_by: str
) -> Published:
    """Make `ref` (a version id or prefix) the skill's live version (PublishRefused when its
    check fails; NotFound for a skill or version that is not there)."""
    with ctx.records.session() as s:
        skill = s.get(Skill, derived_id("skill", slug))
        if skill is None:
            raise NotFound(f"no skill {slug!r}")
        version = find_version(s, skill, ref)
        latest = s.exec(
            select(Publication)
            .where(Publication.skill_id == skill.id)
            .order_by(col(Publication.id).desc())
        ).first()
        previous: str | None
        again = False
        if (
            skill.live_version_id == version.id
            and latest is not None
            and latest.version_id == version.id
        ):
            publication_id, previous = latest.id, latest.previous_version_id
            again = True
        else:
            files = check_publish(s, ctx.blobs, skill, version, remove_gates)
            if version.derivation_blob is not None:
                # followers and runtimes read a published version's files by key: each a blob of
                # its own before the pointer moves (a proposal that is never published never costs
                # a write per file)
                loosen_files(ctx.blobs, files)
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
                published_by=requested_by[:128],
                published_at=ctx.clock(),
            )
            s.add(pub)
            s.flush()
            publication_id = pub.id
        keys: dict[str, str] = version.files
        hosts: list[str] = version.hosts
        pack = version.derivation_blob
        slug, version_id = skill.slug, version.id
    auth_header = (
        Manifest.from_json(ctx.blobs.get(keys["skill.json"])).auth.header
        if "skill.json" in keys
        else None
    )
    assert publication_id is not None
    return Published(
        slug, version_id, keys, hosts, auth_header, previous, publication_id, again, pack
    )
