"""Store a derived package: the spec and files in the blob store, the records in SQL. Idempotent:
every id is derived from content, so storing the same thing twice changes nothing."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from schemas.records import Skill, Source, SourceRevision, Version
from services.derive import SkillPackage
from services.platform.blobs import BlobStore
from services.platform.records import RecordStore

__all__ = ["StoredVersion", "store_package", "derived_id"]


def derived_id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class StoredVersion:
    skill_id: str
    revision_id: str
    version_id: str
    created: bool  # False: this exact version was stored before


def store_package(records: RecordStore, blobs: BlobStore, spec: bytes, package: SkillPackage, *,
                  created_by: str, fetched_from: str | None = None) -> StoredVersion:
    slug = package.meta["slug"]
    skill_id = derived_id("skill", slug)
    source_id = derived_id("source", skill_id)
    spec_sha = blobs.put(spec)
    revision_id = derived_id("revision", source_id, spec_sha)
    file_keys = {path: blobs.put(data) for path, data in package.files.items()}
    version_id = derived_id("version", skill_id, package.version_id)
    now = datetime.now(UTC)
    with records.session() as s:
        if s.get(Skill, skill_id) is None:
            s.add(Skill(id=skill_id, slug=slug, title=package.meta["title"], created_at=now))
        if s.get(Source, source_id) is None:
            s.add(Source(id=source_id, skill_id=skill_id, kind="url" if fetched_from else "upload",
                         fetched_from=fetched_from, base_url=package.meta["base_url"],
                         auth_header=package.meta["auth"]["header"]))
        if s.get(SourceRevision, revision_id) is None:
            s.add(SourceRevision(id=revision_id, source_id=source_id, spec_sha256=spec_sha, fetched_at=now,
                                 created_by=created_by, status="parsed"))
        s.flush()
        created = s.get(Version, version_id) is None
        if created:
            s.add(Version(id=version_id, skill_id=skill_id, revision_id=revision_id, content_hash=package.version_id,
                          renderer=package.meta["derived_from"]["renderer"], files_json=json.dumps(file_keys, sort_keys=True),
                          hosts_json=json.dumps(package.meta["hosts"]), created_at=now))
    return StoredVersion(skill_id, revision_id, version_id, created)
