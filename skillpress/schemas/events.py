"""Event and command payloads: ids and small summaries, never documents.

Every message carries `submission` when it descends from one `spec.submitted`, so whoever
submitted can follow its stages; ids are content-derived, so a redelivered handler publishes
the same message again and JetStream's `Nats-Msg-Id` de-duplication drops the repeat.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

from skillpress.schemas.subjects import COMMANDS, EVENTS

__all__ = [
    "SLUG_PATTERN",
    "AnnotationChanged",
    "MESSAGES",
    "PublishVersion",
    "RefreshSources",
    "package_path",
    "RevisionCategorized",
    "RevisionParsed",
    "RevisionRejected",
    "RevisionStored",
    "RevisionUnchanged",
    "SpecSubmitted",
    "SuggestionsMade",
    "VersionProposed",
    "VersionPublished",
]

_SUBMISSION = Field(
    default=None, description="the submission this descends from, for following its stages"
)


class SpecSubmitted(BaseModel):
    submission: str = Field(description="an id the submitter chose; repeats are de-duplicated")
    skill: str = Field(description="the skill's slug")
    blob: str | None = Field(default=None, description="sha256 of uploaded bytes in the blob store")
    url: str | None = Field(
        default=None, description="a URL to fetch the spec from (GET, no redirects)"
    )
    base_url: str | None = Field(
        default=None, description="where the API lives, when the spec does not say"
    )
    created_by: str
    credential_env: str | None = Field(
        default=None,
        max_length=128,
        description="the environment variable *name* the skill's credential is read from, when not <SLUG>_API_KEY",
    )


class RevisionStored(BaseModel):
    revision_id: str
    skill: str
    spec_sha256: str
    submission: str | None = _SUBMISSION


class RevisionUnchanged(BaseModel):
    revision_id: str
    skill: str
    spec_sha256: str
    submission: str | None = _SUBMISSION


class RevisionParsed(BaseModel):
    revision_id: str
    skill: str
    operations: int
    submission: str | None = _SUBMISSION


class RevisionRejected(BaseModel):
    revision_id: str
    skill: str
    reason: str
    submission: str | None = _SUBMISSION


class RevisionCategorized(BaseModel):
    revision_id: str
    skill: str
    source: str = Field(
        description="flat | tags | paths (offline) | model: where the grouping came from"
    )
    categories: int
    tag_failure: str | None = None
    note: str | None = Field(
        default=None, description="why this grouping: a model's, or why the model's was not used"
    )
    submission: str | None = _SUBMISSION


class SuggestionsMade(BaseModel):
    revision_id: str
    skill: str
    approvals: int
    identities: int
    headers: int = 0  # operations whose required headers need a value from the operator
    submission: str | None = _SUBMISSION


class AnnotationChanged(BaseModel):
    skill: str
    annotation_ids: list[str] = Field(description="the annotations added or retired in this change")
    change: str = Field(description="added | retired | rekeyed | reviewed")
    as_of: str = Field(
        description="ISO time: the proposal derives from the annotations as of this moment"
    )
    submission: str | None = _SUBMISSION


class VersionProposed(BaseModel):
    version_id: str
    skill: str
    revision_id: str | None = None
    created: bool = Field(
        default=True, description="false: the derivation equals a version already stored"
    )
    summary: dict[str, int] = Field(
        default_factory=dict,
        description="added, removed, changed operations against the live version",
    )
    submission: str | None = _SUBMISSION


class VersionPublished(BaseModel):
    version_id: str
    skill: str
    files: dict[str, str] = Field(description="path → sha256 of the file in the blob store")
    hosts: list[str]
    auth_header: str | None = Field(
        default=None, description="the header the API reads its credential from (a name)"
    )
    previous_version_id: str | None = None
    already_live: bool = Field(
        default=False,
        description="the version was live already: its pointer written again, nothing replaced",
    )


class PublishVersion(BaseModel):
    skill: str
    version_id: str
    remove_gates: bool = False
    requested_by: str
    request: str | None = Field(
        default=None,
        description="an id the requester chose: its answer's message id names it, so a second"
        " request for the same version is answered too (a redelivery of one is not twice)",
    )


class RefreshSources(BaseModel):
    requested_by: str = "schedule"
    skill: str | None = Field(
        default=None, description="one skill's source, or every source with a URL"
    )


SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"  # a skill's slug: what `intake.check_slug` admits
_DIGEST = r"^[0-9a-f]{64}$"


def package_path(path: str) -> str:
    """A file's path inside a package: relative, '/'-separated, no empty, '.' or '..' segment,
    no backslash or control character (a pointer naming one is refused, never written)."""
    parts = path.split("/")
    if (
        not 0 < len(path) <= 255
        or any(p in ("", ".", "..") for p in parts)
        or any(c == "\\" or ord(c) < 0x20 or ord(c) == 0x7F for c in path)
    ):
        raise ValueError(f"{path!r} is not a path inside a package")
    return path


class LiveVersion(BaseModel):
    """A skill's live version, the value under its slug in the `SKILLPRESS_LIVE` key-value bucket.
    Every field is held to its form (a slug, an id, paths inside a package, sha256 digests), so a
    pointer that is not one is refused where it is read."""

    skill: str = Field(pattern=SLUG_PATTERN, max_length=64)
    version_id: str = Field(pattern=r"^[0-9a-f]{16,64}$")
    files: dict[str, str] = Field(description="path → sha256 of the file in the blob store")
    hosts: list[str]
    auth_header: str | None = None
    pack: str | None = Field(
        default=None,
        pattern=_DIGEST,
        description="the blob indexing one pack of every file (a follower reads them all in one"
        " request, each checked against `files`); None: each file is read by its key",
    )

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        for path, digest in files.items():
            package_path(path)
            if not re.fullmatch(_DIGEST, digest):
                raise ValueError(f"{path}: {digest!r} is not a sha256")
        return files


class ApprovalRequested(BaseModel):
    """A call to a gated operation waits for a person: `skillpress approve ID` or `deny ID`."""

    request_id: int
    skill: str
    operation: str
    risk: str
    bound: dict[str, Any] = Field(description="the values of the fields the gate binds")
    requested_by: str


MESSAGES: dict[str, type[BaseModel]] = {
    EVENTS.spec_submitted: SpecSubmitted,
    EVENTS.revision_stored: RevisionStored,
    EVENTS.revision_unchanged: RevisionUnchanged,
    EVENTS.revision_parsed: RevisionParsed,
    EVENTS.revision_rejected: RevisionRejected,
    EVENTS.revision_categorized: RevisionCategorized,
    EVENTS.suggestions_made: SuggestionsMade,
    EVENTS.annotation_changed: AnnotationChanged,
    EVENTS.version_proposed: VersionProposed,
    EVENTS.version_published: VersionPublished,
    EVENTS.approval_requested: ApprovalRequested,
    COMMANDS.publish_version: PublishVersion,
    COMMANDS.refresh_sources: RefreshSources,
}
