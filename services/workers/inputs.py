"""What every stage loads by id: a revision, its source and skill, the spec bytes, the derivation."""

from __future__ import annotations

import json
from dataclasses import dataclass

from schemas.records import Skill, Source, SourceRevision
from services.derive import DeriveOptions, LoadLimits, SkillPackage, derive_package
from services.derive.annotations import Annotation
from services.derive.categories import Grouping
from services.workers.delivery import PermanentFailure, WorkerContext

__all__ = [
    "RevisionInputs",
    "Derivation",
    "load_revision",
    "derive_revision",
    "store_derivation",
    "load_derivation",
    "derivation_files",
    "latest_revision_id",
]


@dataclass(frozen=True)
class RevisionInputs:
    revision: SourceRevision
    source: Source
    skill: Skill
    spec: bytes


def load_revision(ctx: WorkerContext, revision_id: str) -> RevisionInputs:
    with ctx.records.session() as s:
        rev = s.get(SourceRevision, revision_id)
        if rev is None:
            raise PermanentFailure(f"no revision {revision_id}")
        source = s.get(Source, rev.source_id)
        skill = s.get(Skill, source.skill_id) if source else None
        if source is None or skill is None:
            raise PermanentFailure(f"revision {revision_id} has no source or skill")
        s.expunge_all()
    return RevisionInputs(rev, source, skill, ctx.blobs.get(rev.spec_sha256))


def derive_revision(
    ctx: WorkerContext,
    inputs: RevisionInputs,
    grouping: Grouping | None = None,
    annotations: tuple[Annotation, ...] = (),
    strict: bool = False,
) -> SkillPackage:
    """The pure derivation of a stored revision (raises SpecRefused for a refused document)."""
    options = DeriveOptions(
        slug=inputs.skill.slug,
        base_url=inputs.source.base_url,
        limits=LoadLimits(max_bytes=ctx.settings.max_spec_bytes),
        grouping=grouping,
        annotations=annotations,
        strict_annotations=strict,
    )
    return derive_package(inputs.spec, options)


@dataclass(frozen=True)
class Derivation:
    """A derivation kept in the blob store: every file by key, and the grouping it used."""

    manifest: str  # sha256 of this manifest's JSON
    files: dict[str, str]  # path → sha256
    grouping: str  # sha256 of the Grouping's JSON


def store_derivation(ctx: WorkerContext, package: SkillPackage) -> Derivation:
    files = {path: ctx.blobs.put(data) for path, data in package.files.items()}
    grouping = ctx.blobs.put(package.grouping.to_json())
    manifest = ctx.blobs.put(
        json.dumps({"files": files, "grouping": grouping}, sort_keys=True).encode()
    )
    return Derivation(manifest, files, grouping)


def load_derivation(ctx: WorkerContext, manifest: str) -> Derivation:
    raw = json.loads(ctx.blobs.get(manifest))
    return Derivation(manifest, dict(raw["files"]), str(raw["grouping"]))


def derivation_files(ctx: WorkerContext, derivation: Derivation) -> dict[str, bytes]:
    return {path: ctx.blobs.get(key) for path, key in derivation.files.items()}


def latest_revision_id(ctx: WorkerContext, skill_id: str) -> str | None:
    """The skill's newest parsed and categorized revision: what annotations derive from."""
    from sqlmodel import col, select

    from schemas.records import Source

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
