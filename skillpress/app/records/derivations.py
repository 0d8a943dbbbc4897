"""Revisions and their derivations: what every stage and use-case loads by id (a revision, its source
and skill, the spec bytes), the pure derivation of a revision, and the annotations in force."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from skillpress.app.base.context import AppContext
from skillpress.app.base.package_dir import LazyFiles
from skillpress.derive import DeriveOptions, LoadLimits, SkillPackage, derive_package
from skillpress.derive.annotations import Annotation
from skillpress.derive.categories import Grouping
from skillpress.errors import NotFound
from skillpress.platform.blobs import BlobCorrupt, BlobStore, sha256_hex
from skillpress.schemas.records import AnnotationRecord, Skill, Source, SourceRevision

__all__ = [
    "RevisionInputs",
    "Derivation",
    "load_revision",
    "derive_revision",
    "store_derivation",
    "load_derivation",
    "derivation_files",
    "derivation_file",
    "files_by_key",
    "lazy_derivation_files",
    "loosen_files",
    "latest_revision_id",
    "active_annotations",
    "annotations_in_force",
    "as_utc",
    "parsed_operation_names",
]


@dataclass(frozen=True)
class RevisionInputs:
    """A revision with its source and skill; its document read from the blob store when first
    asked for (a stage that reads the parse stage's derivation never needs the spec, which on a
    remote store is one request of up to the spec size bound)."""

    revision: SourceRevision
    source: Source
    skill: Skill
    blobs: BlobStore

    @functools.cached_property
    def spec(self) -> bytes:
        return self.blobs.get(self.revision.spec_sha256)


def load_revision(ctx: AppContext, revision_id: str) -> RevisionInputs:
    with ctx.records.session() as s:
        rev = s.get(SourceRevision, revision_id)
        if rev is None:
            raise NotFound(f"no revision {revision_id}")
        source = s.get(Source, rev.source_id)
        skill = s.get(Skill, source.skill_id) if source else None
        if source is None or skill is None:
            raise NotFound(f"revision {revision_id} has no source or skill")
        s.expunge_all()
    return RevisionInputs(rev, source, skill, ctx.blobs)


def derive_revision(
    ctx: AppContext,
    inputs: RevisionInputs,
    grouping: Grouping | None = None,
    annotations: tuple[Annotation, ...] = (),
    strict: bool = False,
) -> SkillPackage:
    """The pure derivation of a stored revision (raises SpecRefused for a refused document)."""
    options = DeriveOptions(
        slug=inputs.skill.slug,
        base_url=inputs.source.base_url,
        credential_env=inputs.source.credential_env,
        limits=LoadLimits(max_bytes=ctx.settings.max_spec_bytes),
        grouping=grouping,
        annotations=annotations,
        strict_annotations=strict,
    )
    return derive_package(inputs.spec, options)


@dataclass(frozen=True)
class Derivation:
    """A derivation kept in the blob store: its files in one pack with their index (each file's
    path, sha256 and size), and the grouping it used."""

    manifest: str  # sha256 of this manifest's JSON
    files: dict[str, str]  # path → sha256
    grouping: str  # sha256 of the Grouping's JSON
    # every file in one blob, in path order (each `sizes` long): a stage or a version reads them
    # all in one request, or one of them in one ranged request, where a remote store would take
    # one request per file (None: one stored before packs, whose files are blobs of their own)
    pack: str | None = None
    sizes: tuple[int, ...] = ()

    def span(self, path: str) -> tuple[int, int]:
        """Where `path` lies in the pack: (offset, length)."""
        at = 0
        for name, size in zip(sorted(self.files), self.sizes, strict=True):
            if name == path:
                return at, size
            at += size
        raise NotFound(f"the derivation {self.manifest[:12]}… has no file {path!r}")


def store_derivation(ctx: AppContext, package: SkillPackage) -> Derivation:
    """Every file in one pack (three writes for a package of any size: the pack, the grouping and
    the manifest that indexes them). A file becomes a blob of its own only when a version of it
    is published (`loosen_files`): what followers read by key."""
    paths = sorted(package.files)
    datas = [package.files[p] for p in paths]
    files = {p: sha256_hex(d) for p, d in zip(paths, datas, strict=True)}
    pack = ctx.blobs.put(b"".join(datas))
    sizes = tuple(len(d) for d in datas)
    grouping = ctx.blobs.put(package.grouping.to_json())
    manifest = ctx.blobs.put(
        json.dumps(
            {"files": files, "grouping": grouping, "pack": pack, "sizes": sizes}, sort_keys=True
        ).encode()
    )
    return Derivation(manifest, files, grouping, pack, sizes)


def load_derivation(blobs: BlobStore, manifest: str) -> Derivation:
    raw = json.loads(blobs.get(manifest))
    sizes = tuple(int(n) for n in raw.get("sizes", ()))
    return Derivation(manifest, dict(raw["files"]), str(raw["grouping"]), raw.get("pack"), sizes)


def _packed(derivation: Derivation) -> str | None:
    return derivation.pack if len(derivation.sizes) == len(derivation.files) else None


def files_by_key(blobs: BlobStore, keys: Mapping[str, str]) -> dict[str, bytes]:
    """Each file of `keys` (path → sha256) read by its key, several requests at a time."""
    paths = sorted(keys)
    return dict(zip(paths, blobs.get_many([keys[p] for p in paths]), strict=True))


def _checked(derivation: Derivation, path: str, piece: bytes) -> bytes:
    if sha256_hex(piece) != derivation.files[path]:
        raise BlobCorrupt(f"the pack {str(derivation.pack)[:12]}… does not hold {path} whole")
    return piece


def derivation_files(blobs: BlobStore, derivation: Derivation) -> dict[str, bytes]:
    """Every file of `derivation`: from its pack in one read (each piece checked against its
    file's hash), or file by file for one stored before packs."""
    paths = sorted(derivation.files)
    pack = _packed(derivation)
    if pack is not None:
        packed = blobs.get(pack)
        out: dict[str, bytes] = {}
        at = 0
        for path, size in zip(paths, derivation.sizes, strict=True):
            out[path] = _checked(derivation, path, packed[at : at + size])
            at += size
        return out
    return files_by_key(blobs, derivation.files)


def derivation_file(blobs: BlobStore, derivation: Derivation, path: str) -> bytes:
    """One file of `derivation`: one ranged read of its pack (checked against the file's hash),
    or its own blob for one stored before packs. NotFound for a path it does not have."""
    if path not in derivation.files:
        raise NotFound(f"the derivation {derivation.manifest[:12]}… has no file {path!r}")
    pack = _packed(derivation)
    if pack is None:
        return blobs.get(derivation.files[path])
    at, size = derivation.span(path)
    return _checked(derivation, path, blobs.get_range(pack, at, size))


def lazy_derivation_files(blobs: BlobStore, derivation: Derivation) -> Mapping[str, bytes]:
    """The files of `derivation` by name, read (all at once: one request) when one is first
    asked for, and not at all when none is."""
    read = functools.cache(lambda: derivation_files(blobs, derivation))
    return LazyFiles(sorted(derivation.files), lambda path: read()[path])


def loosen_files(blobs: BlobStore, files: Mapping[str, bytes]) -> None:
    """Each of `files` as a blob of its own, under its sha256 (a published version's, which
    followers and runtimes read by key); a blob already there is written again (the same
    bytes)."""
    blobs.put_many([files[p] for p in sorted(files)])


def latest_revision_id(ctx: AppContext, skill_id: str) -> str | None:
    """The skill's newest parsed and categorized revision: what annotations derive from."""
    with ctx.records.session() as s:
        latest = s.exec(
            select(SourceRevision)
            .join(Source, col(Source.id) == col(SourceRevision.source_id))
            .where(
                Source.skill_id == skill_id,
                SourceRevision.status == "parsed",
                col(SourceRevision.grouping_blob).is_not(None),
            )
            .order_by(col(SourceRevision.fetched_at).desc())
        ).first()
        return latest.id if latest else None


def as_utc(moment: datetime) -> datetime:
    """A stored timestamp as an aware UTC one (SQLite hands them back naive)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def annotations_in_force(ctx: AppContext, skill_id: str, as_of: datetime) -> tuple[Annotation, ...]:
    """`active_annotations` in a session of its own."""
    with ctx.records.session() as s:
        return active_annotations(s, skill_id, as_of)


def active_annotations(s: Session, skill_id: str, as_of: datetime) -> tuple[Annotation, ...]:
    """The skill's annotations in force at `as_of`: added by then and not yet retired."""
    rows = s.exec(select(AnnotationRecord).where(AnnotationRecord.skill_id == skill_id)).all()
    out = [
        Annotation(r.id, r.kind, r.target, r.body)
        for r in rows
        if as_utc(r.created_at) <= as_of and (r.retired_at is None or as_utc(r.retired_at) > as_of)
    ]
    return tuple(sorted(out, key=lambda a: a.id))


def parsed_operation_names(ctx: AppContext, revision: SourceRevision) -> set[str]:
    """The operation names the parse stage's derivation of `revision` shows (before annotations)."""
    from skillpress.format.manifest import Manifest

    if revision.package_blob is None:
        raise NotFound(f"revision {revision.id} was not parsed")
    files = derivation_files(ctx.blobs, load_derivation(ctx.blobs, revision.package_blob))
    return {op.name for op in Manifest.from_json(files["skill.json"]).operations}
