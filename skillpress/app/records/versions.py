"""Versions: reading them back from records and blobs (their files, the live one, the newest) and
the queries the faces make (lists, diffs, live files); the publish check is `publish_check`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from sqlmodel import Session, col, select

from skillpress.app.base.context import AppContext
from skillpress.app.base.package_dir import LazyFiles
from skillpress.app.base.views import NeedsView, VersionDiff, VersionRow, VersionView
from skillpress.app.records.derivations import (
    Derivation,
    derivation_file,
    derivation_files,
    files_by_key,
    load_derivation,
    loosen_files,
)
from skillpress.app.records.lineage import came_from
from skillpress.derive.diff import diff_packages
from skillpress.errors import NotFound, Refused
from skillpress.format.manifest import Manifest
from skillpress.platform.blobs import BlobCorrupt, BlobStore
from skillpress.platform.ids import derived_id
from skillpress.schemas.events import LiveVersion
from skillpress.schemas.records import Skill, Source, Version

if TYPE_CHECKING:
    from skillpress.runtime.package.model import Skill as RuntimeSkill

__all__ = [
    "version_archive",
    "version_file",
    "PublishRefused",
    "diff_versions",
    "find_skill",
    "find_version",
    "revision_published",
    "list_versions",
    "live_files",
    "manifest_of",
    "newest_manifest",
    "newest_version",
    "set_detached",
    "skill_and_source",
    "live_stamps",
    "live_skills",
    "pick_version",
    "resolve_version",
    "version_files",
    "version_reader",
    "pointer_files",
    "loosen_packed_versions",
    "PACKED_SCHEMA",
    "version_for_outcome",
    "pointer_of",
    "version_pointer",
    "version_view",
    "what_it_needs",
]


PACKED_SCHEMA = "0008"  # the records' schema from which a version's files may be in a pack alone


class PublishRefused(Refused):
    """The version cannot be published as asked; the message says what to do instead."""

    problem = "publish-refused"


def _derivation(blobs: BlobStore, version: Version) -> Derivation | None:
    """The derivation whose pack holds the version's files (None: a version made before packs,
    whose files are blobs of their own)."""
    if version.derivation_blob is None:
        return None
    derivation = load_derivation(blobs, version.derivation_blob)
    if derivation.files != version.files:
        raise BlobCorrupt(
            f"version {version.id[:12]}: its derivation {version.derivation_blob[:12]}… lists"
            " other files than the version does"
        )
    return derivation


def version_files(blobs: BlobStore, version: Version) -> dict[str, bytes]:
    """Every file of `version`: one read of its pack, or each by its own blob (an older one)."""
    derivation = _derivation(blobs, version)
    if derivation is not None:
        return derivation_files(blobs, derivation)
    return files_by_key(blobs, version.files)


def version_reader(blobs: BlobStore, version: Version) -> Callable[[str], bytes]:
    """One file of `version` by path, read alone: a ranged read of its pack, or its own blob."""
    keys: dict[str, str] = version.files
    derivation = _derivation(blobs, version)
    if derivation is not None:
        return functools.partial(derivation_file, blobs, derivation)
    return lambda path: blobs.get(keys[path])


def loosen_packed_versions(ctx: AppContext) -> int:
    """Every version whose files are in its derivation's pack alone written as blobs of their
    own (what a release before packs reads): the step before a rollback past PACKED_SCHEMA.
    Returns how many versions were written; writing one again writes the same bytes."""
    with ctx.records.session() as s:
        packed = s.exec(select(Version).where(col(Version.derivation_blob).is_not(None))).all()
        s.expunge_all()
    for version in packed:
        loosen_files(ctx.blobs, version_files(ctx.blobs, version))
    return len(packed)


def manifest_of(files: Mapping[str, bytes]) -> Manifest | None:
    """A version's skill.json as its typed manifest (None for a package without one)."""
    return Manifest.from_json(files["skill.json"]) if "skill.json" in files else None


def what_it_needs(slug: str, manifest: Manifest) -> NeedsView:
    """What a proposed version still needs before its calls can work: the hosts to allow, the
    credential (its header, what it holds, the variable it is read from), a base URL, the
    operations whose auth a header cannot serve, and the headers a person must fix."""
    from skillpress.derive.auth import auth_hint
    from skillpress.runtime.calling.credential import credential_env

    return {
        "hosts": list(manifest.hosts),
        "header": manifest.auth.header,
        "holds": auth_hint(manifest.auth.to_dict()),
        "env": manifest.auth.env or credential_env(slug, None),
        "base_url": manifest.base_url,
        "unservable": manifest.auth.operations_unservable,
        "headers_to_fix": sorted({h for o in manifest.operations for h in o.required_headers}),
    }


def skill_and_source(ctx: AppContext, slug: str) -> tuple[Skill, Source | None] | None:
    """The skill `slug` names and its source (None when no skill has the slug)."""
    with ctx.records.session() as s:
        skill = s.get(Skill, derived_id("skill", slug))
        if skill is None:
            return None
        source = s.exec(select(Source).where(Source.skill_id == skill.id)).first()
        s.expunge_all()
    return skill, source


def live_stamps(ctx: AppContext) -> dict[str, str]:
    """Each published skill's slug → its live version id."""
    with ctx.records.session() as s:
        rows = s.exec(select(Skill).where(col(Skill.live_version_id).is_not(None))).all()
        return {r.slug: str(r.live_version_id) for r in rows}


def set_detached(ctx: AppContext, skill_id: str) -> None:
    """The skill regenerates no more: an ordinary package from now on."""
    with ctx.records.session() as s:
        row = s.get(Skill, skill_id)
        assert row is not None
        row.detached = True


def newest_version(s: Session, skill_id: str) -> Version | None:
    """The skill's most recently made version, live or not."""
    return s.exec(
        select(Version).where(Version.skill_id == skill_id).order_by(col(Version.created_at).desc())
    ).first()


def find_version(s: Session, skill: Skill, ref: str) -> Version:
    """A version of `skill` by id or unique id prefix (at least 6 characters)."""
    exact = s.get(Version, ref)
    if exact is not None and exact.skill_id == skill.id:
        return exact
    if len(ref) < 6:
        raise PublishRefused(
            f"{ref!r}: give at least 6 characters of a version id (skillpress versions {skill.slug})"
        )
    found = s.exec(
        select(Version).where(Version.skill_id == skill.id, col(Version.id).startswith(ref))
    ).all()
    if not found:
        raise PublishRefused(
            f"{skill.slug} has no version {ref!r} (skillpress versions {skill.slug})"
        )
    if len(found) > 1:
        raise PublishRefused(
            f"{ref!r} matches {len(found)} versions of {skill.slug}; give more of the id"
        )
    return found[0]


@contextmanager
def live_skills(ctx: AppContext) -> Iterator[Callable[[str], RuntimeSkill | None]]:
    """`live_skill_finder` over a session held while the caller loads what uses it."""
    with ctx.records.session() as s:
        yield live_skill_finder(s, ctx.blobs)


def live_skill_finder(s: Session, blobs: BlobStore) -> Callable[[str], RuntimeSkill | None]:
    """A published skill by slug, as the runtime loads its live version (None when there is
    none): what a workflow's `uses` names."""
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.package.skill import load_skill

    def find(slug: str) -> RuntimeSkill | None:
        row = s.exec(select(Skill).where(Skill.slug == slug)).first()
        live = s.get(Version, row.live_version_id) if row and row.live_version_id else None
        if live is None:
            return None
        try:
            return load_skill(version_files(blobs, live), lazy=True)
        except PackageError:
            return None

    return find


# use-cases: what the faces ask of versions


def find_skill(ctx: AppContext, slug: str) -> Skill:
    """The skill named `slug` (detached from its session), or NotFound saying how to make one."""
    with ctx.records.session() as s:
        skill = s.get(Skill, derived_id("skill", slug))
        if skill is None:
            raise NotFound(f"no skill {slug!r} (import one: skillpress import SPEC --skill {slug})")
        s.expunge(skill)
    return skill


def pick_version(ctx: AppContext, skill: Skill, ref: str | None) -> Version:
    """A version by id or prefix; by default the live one, else the newest proposal."""
    with ctx.records.session() as s:
        if ref:
            v: Version | None = find_version(s, skill, ref)
        elif skill.live_version_id:
            v = s.get(Version, skill.live_version_id)
        else:
            v = newest_version(s, skill.id)
        if v is None:
            raise NotFound(f"{skill.slug} has no versions yet")
        s.expunge(v)
    return v


def revision_published(ctx: AppContext, skill: Skill, revision_id: str | None) -> bool:
    """Whether a version on this spec revision was ever published: a person has put its spec
    live before (a proposal on one never published puts its spec changes live with it)."""
    if revision_id is None:
        return False
    with ctx.records.session() as s:
        return (
            s.exec(
                select(Version.id).where(
                    Version.skill_id == skill.id,
                    Version.revision_id == revision_id,
                    col(Version.status).in_(("published", "superseded")),
                )
            ).first()
            is not None
        )


def list_versions(ctx: AppContext, slug: str) -> list[VersionRow]:
    """A skill's versions, newest first: status, whether live, what each changed."""
    skill = find_skill(ctx, slug)
    with ctx.records.session() as s:
        rows = s.exec(
            select(Version)
            .where(Version.skill_id == skill.id)
            .order_by(col(Version.created_at).desc())
        ).all()
        return [
            {
                "version_id": v.id,
                "status": v.status,
                "live": v.id == skill.live_version_id,
                "revision_id": v.revision_id,
                "created_at": v.created_at.isoformat(),
                "diff": v.diff.get("summary", {}),
                "base_version_id": v.base_version_id,
            }
            for v in rows
        ]


def diff_versions(ctx: AppContext, slug: str, a: str | None, b: str | None) -> VersionDiff:
    """What changed from `a` (default: live) to `b` (default: newest), with orphaned annotations."""
    skill = find_skill(ctx, slug)
    with ctx.records.session() as s:
        newest = newest_version(s, skill.id)
    to_v = pick_version(ctx, skill, b) if b else newest
    if to_v is None:
        raise NotFound(f"{slug} has no versions yet")
    from_v = (
        pick_version(ctx, skill, a)
        if a
        else (pick_version(ctx, skill, None) if skill.live_version_id else None)
    )
    old = version_files(ctx.blobs, from_v) if from_v else None
    new = version_files(ctx.blobs, to_v)
    result = diff_packages(old, new)
    out = cast(
        VersionDiff,
        {
            "from": from_v.id if from_v else None,
            "to": to_v.id,
            **result,
            "orphaned": to_v.diff.get("orphaned", []),
        },
    )
    if from_v is not None and old is not None and from_v.id != to_v.id:
        out["proposals"], out["came_from"] = came_from(ctx, from_v, to_v, old, new, result)
    return out


def live_files(ctx: AppContext, slug: str) -> Mapping[str, bytes]:
    """The files of a skill's live version, each fetched when first read (NotFound when nothing
    is published)."""
    skill = find_skill(ctx, slug)
    if not skill.live_version_id:
        raise NotFound(
            f"{slug} has no live version: publish one first (skillpress versions {slug})"
        )
    live = pick_version(ctx, skill, skill.live_version_id)
    return LazyFiles(sorted(live.files), version_reader(ctx.blobs, live))


def newest_manifest(ctx: AppContext, skill: Skill) -> tuple[Version | None, Manifest | None]:
    """The skill's newest version and its `skill.json`, or (None, None) before the first."""
    with ctx.records.session() as s:
        newest = newest_version(s, skill.id)
        if newest is not None:
            s.expunge(newest)
    if newest is None:
        return None, None
    return newest, Manifest.from_json(version_reader(ctx.blobs, newest)("skill.json"))


def version_for_outcome(ctx: AppContext, skill: Skill, outcome: dict[str, Any]) -> Version:
    """The version a submission ended in: the one proposed, or for bytes already seen (unchanged)
    the version their revision made before."""
    with ctx.records.session() as s:
        version = s.get(Version, outcome["version_id"]) if "version_id" in outcome else None
        if version is None and "revision_id" in outcome:
            version = s.exec(
                select(Version).where(
                    Version.skill_id == skill.id, Version.revision_id == outcome["revision_id"]
                )
            ).first()
        if version is None:
            raise NotFound("the pipeline proposed no version; see `skillpress dead-letters`")
        s.expunge(version)
    return version


def resolve_version(
    ctx: AppContext, slug: str, ref: str, published_only: bool = False
) -> tuple[Skill, Version]:
    """The skill and the version `ref` names: an id or prefix, `live`, `newest`, or `current`
    (the live one, else the newest; NotFound when there is no such version). `published_only`
    (what a runtime may read): a proposal no person published is not found."""
    skill, version = _resolve(ctx, slug, ref)
    if published_only and version.status == "proposed":
        raise NotFound(
            f"{slug} {ref}: a proposal no one has published; a runtime reads published versions"
        )
    return skill, version


def _resolve(ctx: AppContext, slug: str, ref: str) -> tuple[Skill, Version]:
    skill = find_skill(ctx, slug)
    if ref == "current":
        return skill, pick_version(ctx, skill, None)
    if ref == "live":
        if not skill.live_version_id:
            raise NotFound(f"{slug} has no live version yet")
        ref = skill.live_version_id
    elif ref == "newest":
        with ctx.records.session() as s:
            found = newest_version(s, skill.id)
            if found is None:
                raise NotFound(f"{slug} has no versions yet")
            s.expunge(found)
        return skill, found
    return skill, pick_version(ctx, skill, ref)


def version_pointer(ctx: AppContext, slug: str, ref: str) -> LiveVersion:
    """A version as a follower needs it: its id, files by sha256, hosts (`ref` as
    `resolve_version` reads it)."""
    return pointer_of(*resolve_version(ctx, slug, ref))


def version_view(ctx: AppContext, slug: str, ref: str, published_only: bool = False) -> VersionView:
    """A version's pointer with its status and whether it is live (`ref` and `published_only`
    as `resolve_version` reads them): what `show` lists."""
    skill, version = resolve_version(ctx, slug, ref, published_only)
    pointer = pointer_of(skill, version)
    return {
        "skill": pointer.skill,
        "version_id": pointer.version_id,
        "files": pointer.files,
        "hosts": pointer.hosts,
        "auth_header": pointer.auth_header,
        "status": version.status,
        "live": version.id == skill.live_version_id,
        "pack": pointer.pack,
    }


def pointer_of(skill: Skill, version: Version) -> LiveVersion:
    return LiveVersion(
        skill=skill.slug,
        version_id=version.id,
        files=version.files,
        hosts=version.hosts,
        pack=version.derivation_blob,
    )


def pointer_files(blobs: BlobStore, live: LiveVersion) -> dict[str, bytes]:
    """Every file a live pointer names, by path: from its pack in one read where it names one
    whose index lists exactly its files, else each by its key (several requests at a time).
    Every file is checked against the sha256 the pointer names (BlobCorrupt if not)."""
    if live.pack is not None:
        derivation = load_derivation(blobs, live.pack)
        if derivation.files == live.files:
            return derivation_files(blobs, derivation)
    return files_by_key(blobs, live.files)


def version_file(
    ctx: AppContext, slug: str, ref: str, path: str, published_only: bool = False
) -> bytes:
    """One file of a version, read by its digest alone (never the version's other files)."""
    _, version = resolve_version(ctx, slug, ref, published_only)
    if path not in version.files:
        raise NotFound(f"{slug} {ref} has no file {path!r}")
    return version_reader(ctx.blobs, version)(path)


def version_archive(
    ctx: AppContext, slug: str, ref: str, published_only: bool = False
) -> tuple[str, bytes]:
    """(the version id, every file of it in one gzip-compressed tar): what a follower fetches in
    one request. Deterministic: sorted paths, fixed times and owners, so the same version is the
    same bytes."""
    import gzip
    import io
    import tarfile

    _, version = resolve_version(ctx, slug, ref, published_only)
    files = version_files(ctx.blobs, version)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return version.id, gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
