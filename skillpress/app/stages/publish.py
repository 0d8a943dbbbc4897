"""Publishing a version: one live version per skill, checked first (its files load as the
runtime will load them; a gate it would drop needs `remove_gates`), its files written as blobs of
their own (what followers read by key), recorded as a publication.
A redelivered command finds its own publication and answers the same."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import col, select, update

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import loosen_files
from skillpress.app.records.live import live_moved
from skillpress.app.records.publish_check import check_publish
from skillpress.app.records.versions import find_version
from skillpress.errors import NotFound, Unavailable
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


# how many times a publish reads again after another moved the live version under it
_RACES = 20


class _Moved(Exception):
    """The skill's live version changed between this publish's read and its write."""


def publish_version(
    ctx: AppContext, slug: str, ref: str, remove_gates: bool, requested_by: str
) -> Published:
    """Make `ref` (a version id or prefix) the skill's live version (PublishRefused when its
    check fails; NotFound for a skill or version that is not there). The live pointer moves
    only from the version this publish read as live (a conditional update): publishes at once
    make one publication of one version, and one chain of versions, each replacing the one
    before it; the publish that lost reads again (and finds its version live, or publishes on
    top of the new one)."""
    for _ in range(_RACES):
        try:
            return _publish_once(ctx, slug, ref, remove_gates, requested_by)
        except _Moved:
            continue
    raise Unavailable(
        f"{slug}'s live version kept changing while this publish was written; asked again, it"
        " publishes on top of what is live then"
    )


def _publish_once(
    ctx: AppContext, slug: str, ref: str, remove_gates: bool, requested_by: str
) -> Published:
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
            was = col(Skill.live_version_id)
            won = s.connection().execute(
                update(Skill)
                .where(
                    col(Skill.id) == skill.id,
                    was == previous if previous is not None else was.is_(None),
                )
                .values(live_version_id=version.id)
            )
            if won.rowcount != 1:  # another publish moved it since it was read: read again
                s.rollback()
                raise _Moved
            if previous:
                old = s.get(Version, previous)
                if old is not None:
                    old.status = "superseded"
            version.status = "published"
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
            live_moved(s)  # last: the live set's one row is locked from here to the commit
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
