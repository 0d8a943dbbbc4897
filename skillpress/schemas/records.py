"""SQLModel records. Documents and files live in the blob store by sha256; records hold ids,
hashes and small summaries. Credentials are never stored: only header and variable names."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "Skill",
    "Source",
    "SourceRevision",
    "SubmissionOutcome",
    "Version",
    "Publication",
    "LiveSet",
    "ActionItem",
    "DeadLetter",
    "Suggestion",
    "AnnotationRecord",
    "WorkflowRun",
]


def _object(text: str) -> dict[str, Any]:
    """A JSON column that holds an object, decoded (the columns are text: SQLite and
    PostgreSQL alike, and their bytes are the canonical JSON ids are made from)."""
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def _array(text: str) -> list[Any]:
    value = json.loads(text)
    return value if isinstance(value, list) else []


class Skill(SQLModel, table=True):
    __tablename__ = "skills"
    id: str = Field(primary_key=True, max_length=64)
    slug: str = Field(index=True, unique=True, max_length=64)
    title: str = Field(default="", max_length=200)
    live_version_id: str | None = Field(default=None, max_length=64)
    detached: bool = False
    created_at: datetime


class Source(SQLModel, table=True):
    __tablename__ = "sources"
    id: str = Field(primary_key=True, max_length=64)
    skill_id: str = Field(foreign_key="skills.id", index=True, max_length=64)
    kind: str = Field(max_length=16)  # upload | url
    fetched_from: str | None = Field(default=None, max_length=2048)
    base_url: str | None = Field(default=None, max_length=2048)
    auth_header: str | None = Field(default=None, max_length=128)
    credential_env: str | None = Field(default=None, max_length=128)  # a variable *name*
    last_checked_at: datetime | None = None  # the last scheduled re-fetch of a URL source


class SourceRevision(SQLModel, table=True):
    __tablename__ = "source_revisions"
    __table_args__ = (UniqueConstraint("source_id", "spec_sha256", name="uq_revision_source_sha"),)
    id: str = Field(primary_key=True, max_length=64)
    source_id: str = Field(foreign_key="sources.id", index=True, max_length=64)
    spec_sha256: str = Field(max_length=64)
    fetched_at: datetime
    created_by: str = Field(max_length=128)
    status: str = Field(default="stored", max_length=16)  # stored | parsed | refused
    refusal_reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    submission: str | None = Field(default=None, max_length=128)  # the submission that stored it
    operations: int | None = None
    package_blob: str | None = Field(
        default=None, max_length=64
    )  # sha256 of the parse stage's derivation manifest
    grouping_blob: str | None = Field(
        default=None, max_length=64
    )  # sha256 of the categorize stage's grouping
    grouping_source: str | None = Field(default=None, max_length=16)  # flat | tags | paths | model
    tag_failure: str | None = Field(default=None, max_length=32)
    grouping_note: str | None = Field(
        default=None, sa_column=Column(Text, nullable=True)
    )  # why this grouping (a model's, or the fallback's reason)


class Version(SQLModel, table=True):
    __tablename__ = "versions"
    __table_args__ = (
        UniqueConstraint("skill_id", "content_hash", name="uq_version_skill_content"),
    )
    id: str = Field(primary_key=True, max_length=64)
    skill_id: str = Field(foreign_key="skills.id", index=True, max_length=64)
    revision_id: str | None = Field(default=None, foreign_key="source_revisions.id", max_length=64)
    annotations_as_of: datetime | None = None
    content_hash: str = Field(max_length=64)
    renderer: str = Field(max_length=64)
    files_json: str = Field(sa_column=Column(Text, nullable=False))  # {"path": "sha256", ...}
    # the derivation whose pack holds the files (one read for all, a ranged read for one); None
    # for a version made before packs, whose files are blobs of their own. A published version's
    # files are blobs of their own as well: followers read them by key
    derivation_blob: str | None = Field(default=None, max_length=64)
    hosts_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    status: str = Field(default="proposed", max_length=16)  # proposed | published | superseded
    diff_json: str = Field(
        default="{}", sa_column=Column(Text, nullable=False)
    )  # against the live version when proposed
    base_version_id: str | None = Field(
        default=None, max_length=64
    )  # the live version the diff is against
    created_at: datetime

    @property
    def files(self) -> dict[str, str]:
        """Each file's path → the sha256 of its blob (`files_json`, decoded)."""
        return _object(self.files_json)

    @property
    def hosts(self) -> list[str]:
        return [str(h) for h in _array(self.hosts_json)]

    @property
    def diff(self) -> dict[str, Any]:
        """What it changed against `base_version_id` (`diff_json`, decoded)."""
        return _object(self.diff_json)


class Publication(SQLModel, table=True):
    __tablename__ = "publications"
    id: int | None = Field(default=None, primary_key=True)
    skill_id: str = Field(foreign_key="skills.id", index=True, max_length=64)
    version_id: str = Field(foreign_key="versions.id", max_length=64)
    previous_version_id: str | None = Field(default=None, max_length=64)
    published_by: str = Field(max_length=128)
    published_at: datetime


class LiveSet(SQLModel, table=True):
    """One row: a number that moves in the same transaction as any skill's live pointer, so
    "has anything gone live since?" is one read of one row, whatever the size of the registry
    (`epoch` is new whenever the row is made, so a number seen before a re-migration never
    names another live set)."""

    __tablename__ = "live_set"
    id: int = Field(default=1, primary_key=True)
    epoch: str = Field(max_length=32)
    generation: int = 0


class ActionItem(SQLModel, table=True):
    __tablename__ = "action_items"
    id: int | None = Field(default=None, primary_key=True)
    skill_id: str = Field(foreign_key="skills.id", index=True, max_length=64)
    kind: str = Field(max_length=32)
    message: str = Field(sa_column=Column(Text, nullable=False))
    version_id: str | None = Field(default=None, max_length=64)
    created_at: datetime
    resolved_at: datetime | None = None


class ApprovalRequest(SQLModel, table=True):
    """A call to a gated operation, waiting for a person (or decided): the values it binds, who
    decided, and whether the grant was used (a grant lets exactly one call through)."""

    __tablename__ = "approval_requests"
    id: int | None = Field(default=None, primary_key=True)
    skill: str = Field(max_length=128, index=True)  # the skill's slug
    operation: str = Field(max_length=128)
    risk: str = Field(max_length=16)
    bound_json: str = Field(sa_column=Column(Text, nullable=False))  # canonical JSON
    status: str = Field(
        default="pending", max_length=16
    )  # pending | granted | denied | used | auto | expired
    requested_by: str = Field(max_length=128)
    decided_by: str | None = Field(default=None, max_length=128)
    created_at: datetime
    decided_at: datetime | None = None
    # the name of the API token that asked (None: a call made where the records are): a runtime
    # reads and consumes only its own requests
    token: str | None = Field(default=None, max_length=64)
    # one exact call by one asker (skill, operation, bound values, token): at most one open
    # request has it (a partial unique index), so identical calls asking at once share it
    ask_key: str | None = Field(default=None, max_length=64)

    @property
    def bound(self) -> dict[str, Any]:
        """The values the gate binds (`bound_json`, decoded)."""
        return _object(self.bound_json)


class DeadLetter(SQLModel, table=True):
    __tablename__ = "dead_letters"
    id: int | None = Field(default=None, primary_key=True)
    subject: str = Field(max_length=256)
    worker: str = Field(max_length=64)
    msg_id: str | None = Field(default=None, max_length=256)
    error: str = Field(sa_column=Column(Text, nullable=False))
    payload: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime
    replayed_at: datetime | None = None  # re-published by `dead-letters --replay`
    replayed_as: str | None = Field(default=None, max_length=256)  # under this message id


class SubmissionOutcome(SQLModel, table=True):
    """How a submission ended when it made no revision of its own: refused before its bytes
    were stored (a URL refused, a blob missing, over the size cap), or unchanged (bytes already
    seen: `revision_id` is theirs). Every accepted submission id has a status that ends."""

    __tablename__ = "submission_outcomes"
    submission: str = Field(primary_key=True, max_length=128)
    skill: str = Field(max_length=128, index=True)
    outcome: str = Field(max_length=16)  # refused | unchanged
    revision_id: str | None = Field(default=None, max_length=64)
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime


class Suggestion(SQLModel, table=True):
    """A guessed approval rule or identity for one operation: shown for review, never applied."""

    __tablename__ = "suggestions"
    __table_args__ = (
        UniqueConstraint("revision_id", "operation", "kind", name="uq_suggestion_rev_op_kind"),
    )
    id: str = Field(primary_key=True, max_length=64)
    skill_id: str = Field(foreign_key="skills.id", index=True, max_length=64)
    revision_id: str = Field(foreign_key="source_revisions.id", index=True, max_length=64)
    operation: str = Field(max_length=128)
    kind: str = Field(max_length=16)  # approval | identity | header
    group: str = Field(max_length=16)  # money | deletes | changes | reads
    body_json: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(default="open", max_length=16)  # open | confirmed | dismissed
    created_at: datetime
    decided_by: str | None = Field(default=None, max_length=128)  # who confirmed or dismissed it
    decided_at: datetime | None = None

    @property
    def body(self) -> dict[str, Any]:
        return _object(self.body_json)


class AnnotationRecord(SQLModel, table=True):
    """A person's addition, keyed on what the spec names. Added and retired, never edited or deleted."""

    __tablename__ = "annotations"
    id: str = Field(primary_key=True, max_length=64)
    skill_id: str = Field(foreign_key="skills.id", index=True, max_length=64)
    kind: str = Field(max_length=16)
    target: str = Field(max_length=300)  # skill | category:<tag> | operation:<name>
    body_json: str = Field(sa_column=Column(Text, nullable=False))
    created_by: str = Field(max_length=128)
    created_at: datetime
    retired_at: datetime | None = None
    retired_by: str | None = Field(default=None, max_length=128)

    @property
    def body(self) -> dict[str, Any]:
        return _object(self.body_json)


class WorkflowRun(SQLModel, table=True):
    """One run of a workflow: its steps as they ended (requests, statuses, tries, timings and
    answers, secrets redacted) and how it ended. A run waiting at a gate (`approval`) resumes
    when the same workflow is run again with the same arguments (`arguments_key`)."""

    __tablename__ = "workflow_runs"
    id: int | None = Field(default=None, primary_key=True)
    skill: str = Field(max_length=128, index=True)  # the skill's slug
    version: str | None = Field(default=None, max_length=64)
    workflow: str = Field(max_length=128)
    execution: str = Field(max_length=16)  # draft | guided | hardened | direct (one call)
    arguments_json: str = Field(sa_column=Column(Text, nullable=False))  # redacted
    arguments_key: str = Field(max_length=64, index=True)  # sha256 of the arguments as given
    status: str = Field(max_length=16)  # running | succeeded | failed | waiting
    started_by: str = Field(max_length=128)
    steps_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    result_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    approval: int | None = None  # the approval request a waiting run waits on
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments as given, secrets redacted (`arguments_json`, decoded)."""
        return _object(self.arguments_json)

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [s for s in _array(self.steps_json) if isinstance(s, dict)]

    @property
    def result(self) -> Any:
        return None if self.result_json is None else json.loads(self.result_json)
