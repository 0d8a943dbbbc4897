"""Event and command payloads: ids and small summaries, never documents."""

from __future__ import annotations

from pydantic import BaseModel, Field

from schemas.subjects import COMMANDS, EVENTS

__all__ = ["SpecSubmitted", "RevisionStored", "RevisionRejected", "VersionProposed", "VersionPublished",
           "PublishVersion", "MESSAGES"]


class SpecSubmitted(BaseModel):
    skill: str = Field(description="the skill's slug")
    blob: str | None = Field(default=None, description="sha256 of uploaded bytes in the blob store")
    url: str | None = Field(default=None, description="a URL to fetch the spec from")
    created_by: str


class RevisionStored(BaseModel):
    revision_id: str
    skill: str
    spec_sha256: str


class RevisionRejected(BaseModel):
    revision_id: str
    skill: str
    reason: str


class VersionProposed(BaseModel):
    version_id: str
    skill: str


class VersionPublished(BaseModel):
    version_id: str
    skill: str
    files: dict[str, str] = Field(description="path → sha256 of the file in the blob store")
    hosts: list[str]


class PublishVersion(BaseModel):
    skill: str
    version_id: str
    remove_gates: bool = False
    requested_by: str


MESSAGES: dict[str, type[BaseModel]] = {
    EVENTS["spec_submitted"]: SpecSubmitted,
    EVENTS["revision_stored"]: RevisionStored,
    EVENTS["revision_rejected"]: RevisionRejected,
    EVENTS["version_proposed"]: VersionProposed,
    EVENTS["version_published"]: VersionPublished,
    COMMANDS["publish_version"]: PublishVersion,
}
