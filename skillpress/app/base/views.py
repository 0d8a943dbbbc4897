"""What the application layer answers, typed: the read models every face shows (the command
line's `--json`, the HTTP API's responses and their schemas in `schemas/openapi.json`, the
console's pages). mypy holds each place that builds one to its fields; the API documents each by
name. A field added here is added everywhere at once; none is ever dropped on the way out
(`extra` allowed, so an older client's view of a newer answer loses nothing).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from skillpress.derive.diff import ChangedOperation, DiffSummary, PackageDiff

__all__ = [
    "ActionItemView",
    "ActionResolved",
    "AnnotationAdded",
    "AnnotationRekeyed",
    "AnnotationRetired",
    "AnnotationView",
    "ApprovalView",
    "RunStepView",
    "RunView",
    "ChangedOperation",
    "Confirmation",
    "DeadLetterBrief",
    "DeadLetterView",
    "Detached",
    "Dismissal",
    "DiffSummary",
    "ManyPublished",
    "Overlay",
    "PackageDiff",
    "ProposalBrief",
    "ProposalView",
    "PublicationView",
    "PublishedBrief",
    "PublishRefusal",
    "Replayed",
    "RevisionView",
    "SkillView",
    "Stage",
    "SubmissionView",
    "SuggestionGroups",
    "SuggestionView",
    "VersionDiff",
    "VersionRow",
    "VersionView",
]

_OPEN = ConfigDict(extra="allow")


def _opened(kind: Any, doc: str) -> None:
    """`with_config(_OPEN)` and a docstring, for a TypedDict written the functional way (a field
    named `from` cannot be written as a class)."""
    for name, value in (("__pydantic_config__", _OPEN), ("__doc__", doc)):
        setattr(kind, name, value)


@with_config(_OPEN)
class SkillView(TypedDict):
    """A skill in the list: its live version, proposals waiting, open action items."""

    slug: str
    title: str
    live_version_id: str | None
    proposals: int
    open_actions: int
    detached: bool


@with_config(_OPEN)
class DeadLetterBrief(TypedDict):
    """A dead letter as a submission's status names it: its worker and the first line of why."""

    id: int | None
    worker: str
    subject: str
    error: str
    replayed_at: str | None  # sent again (`dead-letters --replay`): no longer where it stopped


# one stage of a submission: fetched (at, from), refused (reason), unchanged (the revision and
# version its bytes made before), parsed (operations), categorized (source), proposed
# (version_id, at), published (version_id)
Stage = TypedDict(
    "Stage",
    {
        "stage": Literal[
            "fetched", "refused", "unchanged", "parsed", "categorized", "proposed", "published"
        ],
        "at": NotRequired[str],
        "from": NotRequired[str],
        "reason": NotRequired[str | None],
        "operations": NotRequired[int | None],
        "source": NotRequired[str | None],
        "version_id": NotRequired[str],
        "revision_id": NotRequired[str],
    },
)
_opened(Stage, "One stage of a submission and what it recorded.")


@with_config(_OPEN)
class SubmissionView(TypedDict):
    """Where a submission is, stage by stage, and the dead letters it made."""

    submission: str
    revision_id: NotRequired[str]
    stages: list[Stage]
    dead_letters: list[DeadLetterBrief]


RevisionView = TypedDict(
    "RevisionView",
    {
        "revision_id": str,
        "spec_sha256": str,
        "fetched_at": str,
        "from": str,
        "status": str,
        "refusal_reason": str | None,
        "operations": int | None,
        "submission": str | None,
        "versions": list[str],
    },
)
_opened(RevisionView, "A revision: when, from where, parsed or refused (and why), its versions.")


class ProposalBrief(TypedDict):
    """A proposal a publish spans: its version, when it was made, and why (in words)."""

    version_id: str
    created_at: str
    because: str


VersionDiff = TypedDict(
    "VersionDiff",
    {
        "from": str | None,
        "to": str,
        "added": list[str],
        "removed": list[str],
        "changed": list[ChangedOperation],
        "files_changed": int,
        "summary": DiffSummary,
        "orphaned": list[dict[str, Any]],
        "workflows": NotRequired[list[str]],
        "described": NotRequired[list[str]],
        "other_files": NotRequired[list[str]],
        "credential": NotRequired[str],  # the skill's credential, before → after
        # the proposals between live and `to`, oldest first, and which of them each named
        # operation's (or file's) change came from
        "proposals": NotRequired[list[ProposalBrief]],
        "came_from": NotRequired[dict[str, str]],
    },
)
_opened(VersionDiff, "What changed between two versions, with the annotations the newer orphans.")


@with_config(_OPEN)
class VersionRow(TypedDict):
    """A version in a skill's list: its status, whether it is live, what it changed."""

    version_id: str
    status: str
    live: bool
    revision_id: str | None
    created_at: str
    diff: dict[str, int]
    base_version_id: str | None


class NeedsView(TypedDict):
    """What a proposed version still needs before its calls can work."""

    hosts: list[str]
    header: str | None
    holds: str | None
    env: str
    base_url: str | None
    unservable: int
    headers_to_fix: list[str]


@with_config(_OPEN)
class VersionView(TypedDict):
    """One version: its files by sha256, hosts, status, whether it is live, and the blob that
    indexes the pack of every file (None: each is read by its key)."""

    skill: str
    version_id: str
    files: dict[str, str]
    hosts: list[str]
    auth_header: str | None
    status: str
    live: bool
    pack: str | None


@with_config(_OPEN)
class ProposalView(TypedDict):
    """The version a change proposed (`created` false: equal to one already stored)."""

    version_id: str
    skill: str
    revision_id: NotRequired[str | None]
    # an annotation change's: whether the revision it stands on was ever published (when not,
    # publishing it puts that revision's spec changes live too)
    revision_published: NotRequired[bool]
    created: NotRequired[bool]
    summary: NotRequired[dict[str, int]]
    submission: NotRequired[str | None]


@with_config(_OPEN)
class PublicationView(TypedDict):
    """A version made live: its files by sha256, hosts, and the version it replaced."""

    version_id: str
    skill: str
    files: dict[str, str]
    hosts: list[str]
    auth_header: NotRequired[str | None]
    previous_version_id: NotRequired[str | None]
    already_live: NotRequired[bool]  # it was live already: its pointer written again
    changes: NotRequired[VersionDiff]  # what it changed against the version that was live


class PublishedBrief(TypedDict):
    """One skill of a publish of many: the version made live, and the one it replaced."""

    skill: str
    version_id: str
    previous_version_id: str | None
    already_live: bool


class PublishRefusal(TypedDict):
    """One skill of a publish of many that was not published, and why, in a person's words."""

    skill: str
    version_id: str | None
    reason: str


class ManyPublished(TypedDict):
    """A publish of several skills' newest proposals, each checked as a single publish is."""

    published: list[PublishedBrief]
    refused: list[PublishRefusal]


@with_config(_OPEN)
class AnnotationView(TypedDict):
    """An annotation and where it stands: applied, orphaned, pending or retired."""

    id: str
    kind: str
    target: str
    body: dict[str, Any]
    status: str
    created_by: str
    created_at: str


@with_config(_OPEN)
class AnnotationAdded(TypedDict):
    """An annotation stored, and the version it proposed."""

    annotation_id: str
    kind: str
    target: str
    proposal: ProposalView


@with_config(_OPEN)
class AnnotationRetired(TypedDict):
    """An annotation retired (it stays on record), and the version without it."""

    retired: str
    proposal: ProposalView


@with_config(_OPEN)
class AnnotationRekeyed(TypedDict):
    """Orphaned annotations moved to their operations' new names (new ids, in the order asked),
    and the one version they propose."""

    annotation_id: str  # the first one's new id
    annotation_ids: list[str]
    proposal: ProposalView


@with_config(_OPEN)
class SuggestionView(TypedDict):
    """A guessed gate or identity waiting for a person (`bindable` false: a header's value,
    which only the operator can give, so it cannot be confirmed as it is)."""

    id: str
    operation: str
    kind: str
    annotation: dict[str, Any]
    why: str
    bindable: bool


@with_config(_OPEN)
class SuggestionGroups(TypedDict):
    """Open suggestions grouped money, deletes, changes, reads."""

    remaining: int
    groups: dict[str, list[SuggestionView]]


@with_config(_OPEN)
class Confirmation(TypedDict):
    """Suggestions confirmed (their annotations), skipped (with why), left open, and the
    version the confirmed ones proposed (None when nothing was confirmed)."""

    confirmed: list[str]
    skipped: list[dict[str, str]]
    remaining: int
    proposal: ProposalView | None


@with_config(_OPEN)
class Dismissal(TypedDict):
    """Suggestions dismissed (decided, never offered again, recorded under who did it) and how
    many stay open."""

    dismissed: int
    remaining: int


@with_config(_OPEN)
class Detached(TypedDict):
    """A skill that is an ordinary package from now on."""

    skill: str
    detached: bool


@with_config(_OPEN)
class Overlay(TypedDict):
    """An OpenAPI Overlay 1.0 document: the annotations as actions on the spec."""

    overlay: str
    info: dict[str, Any]
    actions: list[dict[str, Any]]


@with_config(_OPEN)
class ActionItemView(TypedDict):
    """Something a scheduled refresh proposed, waiting for a person."""

    id: int | None
    skill: str | None
    kind: str
    version_id: str | None
    created_at: str
    message: str


@with_config(_OPEN)
class ActionResolved(TypedDict):
    """An action item marked handled (it stays on record)."""

    id: int | None
    resolved_at: str


@with_config(_OPEN)
class DeadLetterView(TypedDict):
    """A message no worker could handle, with its error and payload, and its replay."""

    id: int | None
    worker: str
    subject: str
    msg_id: str | None
    error: str
    created_at: str
    payload: str
    skill: str | None  # the skill its message names, when it names one
    submission: str | None  # the submission it descends from, when it does
    replayed_at: str | None
    replayed_as: str | None


@with_config(_OPEN)
class Replayed(TypedDict):
    """A dead letter's message published again, under a fresh message id."""

    id: int | None
    subject: str
    replayed_as: str


@with_config(_OPEN)
class ApprovalView(TypedDict):
    """A call to a gated operation and its decision: who asked, what it binds, who decided."""

    id: int | None
    skill: str
    operation: str
    risk: str
    bound: dict[str, Any]
    status: str
    requested_by: str
    decided_by: str | None
    created_at: str
    decided_at: str | None
    expires_at: str | None  # pending or granted: when it expires unless decided (or used)
    token: str | None  # the API token that asked (None: a call made where the records are)


@with_config(_OPEN)
class RunStepView(TypedDict):
    """One step's call in a workflow run, as it ended: `outcome` sent | failed | waiting (held
    at its gate: `approval` names the request); every try (status or error, and the pause after
    it); the answer as kept (fields named like secrets redacted)."""

    step: str
    operation: str
    skill: str
    outcome: str
    request: dict[str, Any] | None
    status: int | None
    tries: list[dict[str, Any]]
    waited: float
    started_at: str
    ms: int
    answer: Any
    answer_kept: bool
    error: str | None
    approval: int | None


@with_config(_OPEN)
class RunView(TypedDict):
    """A workflow run: what was asked, by whom, how it ended (running | succeeded | failed |
    waiting: on the approval request `approval`, resumed by the same run with the same
    arguments once it is granted) and, shown one at a time, its steps."""

    id: int
    skill: str
    version: str | None
    workflow: str
    execution: str
    arguments: dict[str, Any]
    status: str
    started_by: str
    started_at: str
    updated_at: str
    finished_at: str | None
    result: Any
    error: str | None
    approval: int | None
    step_count: int
    steps: NotRequired[list[RunStepView]]
