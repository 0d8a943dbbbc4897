"""The closed catalogue of NATS subjects. Events are past-tense facts; commands are requests.

Each subject is an attribute (`EVENTS.version_proposed`), so a misspelled one is a type error
where it is written, not a lookup that fails when a message flows.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

__all__ = ["STREAM", "STREAM_SUBJECTS", "EVENTS", "COMMANDS", "ALL_SUBJECTS"]

STREAM = "SKILLPRESS"
STREAM_SUBJECTS = ["skillpress.>"]


@dataclass(frozen=True)
class EventSubjects:
    """What happened: each a past-tense fact a worker or a face announces."""

    spec_submitted: str = "skillpress.spec.submitted"
    revision_stored: str = "skillpress.revision.stored"
    revision_unchanged: str = "skillpress.revision.unchanged"
    revision_parsed: str = "skillpress.revision.parsed"
    revision_rejected: str = "skillpress.revision.rejected"
    revision_categorized: str = "skillpress.revision.categorized"
    suggestions_made: str = "skillpress.suggestions.made"
    annotation_changed: str = "skillpress.annotation.changed"
    version_proposed: str = "skillpress.version.proposed"
    version_published: str = "skillpress.version.published"
    approval_requested: str = "skillpress.approval.requested"

    def values(self) -> tuple[str, ...]:
        return tuple(str(v) for v in astuple(self))


@dataclass(frozen=True)
class CommandSubjects:
    """What is asked for: each a request one worker carries out."""

    publish_version: str = "skillpress.cmd.publish_version"
    refresh_sources: str = "skillpress.cmd.refresh_sources"

    def values(self) -> tuple[str, ...]:
        return tuple(str(v) for v in astuple(self))


EVENTS = EventSubjects()
COMMANDS = CommandSubjects()
ALL_SUBJECTS = sorted({*EVENTS.values(), *COMMANDS.values()})
