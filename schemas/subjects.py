"""The closed catalogue of NATS subjects. Events are past-tense facts; commands are requests."""

from __future__ import annotations

__all__ = ["STREAM", "STREAM_SUBJECTS", "EVENTS", "COMMANDS", "ALL_SUBJECTS"]

STREAM = "SKILLPRESS"
STREAM_SUBJECTS = ["skillpress.>"]

EVENTS = {
    "spec_submitted": "skillpress.spec.submitted",
    "revision_stored": "skillpress.revision.stored",
    "revision_unchanged": "skillpress.revision.unchanged",
    "revision_parsed": "skillpress.revision.parsed",
    "revision_rejected": "skillpress.revision.rejected",
    "revision_categorized": "skillpress.revision.categorized",
    "suggestions_made": "skillpress.suggestions.made",
    "annotation_changed": "skillpress.annotation.changed",
    "version_proposed": "skillpress.version.proposed",
    "version_published": "skillpress.version.published",
    "approval_requested": "skillpress.approval.requested",
}
COMMANDS = {
    "publish_version": "skillpress.cmd.publish_version",
    "refresh_sources": "skillpress.cmd.refresh_sources",
}
ALL_SUBJECTS = sorted({*EVENTS.values(), *COMMANDS.values()})
