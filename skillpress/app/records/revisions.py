"""Revision records: what the parse and categorize stages decide about a revision, each written
once (a redelivery keeps the first decision)."""

from __future__ import annotations

from dataclasses import dataclass

from skillpress.app.base.context import AppContext
from skillpress.errors import Permanent
from skillpress.schemas.records import SourceRevision

__all__ = ["Grouped", "record_grouping", "record_parse", "revision_grouping"]


@dataclass(frozen=True)
class Grouped:
    """The grouping a revision's categorize stage decided, and where it came from."""

    blob: str
    source: str | None
    tag_failure: str | None
    note: str | None


def record_grouping(ctx: AppContext, revision_id: str, grouping: Grouped) -> None:
    """The categorize stage's decision on its revision, written once."""
    with ctx.records.session() as s:
        row = s.get(SourceRevision, revision_id)
        if row is None:
            raise Permanent(f"no revision {revision_id}")
        if row.grouping_blob is None:
            row.grouping_blob, row.grouping_source, row.tag_failure, row.grouping_note = (
                grouping.blob,
                grouping.source,
                grouping.tag_failure,
                grouping.note,
            )


def revision_grouping(ctx: AppContext, revision_id: str) -> Grouped:
    with ctx.records.session() as s:
        row = s.get(SourceRevision, revision_id)
        if row is None or row.grouping_blob is None:
            raise Permanent(f"revision {revision_id} has no grouping")
        return Grouped(row.grouping_blob, row.grouping_source, row.tag_failure, row.grouping_note)


def record_parse(
    ctx: AppContext,
    revision_id: str,
    status: str,
    reason: str | None,
    operations: int | None,
    manifest: str | None,
) -> SourceRevision:
    """The parse stage's outcome on its revision, written once (a redelivery keeps the first);
    the revision as it now stands."""
    with ctx.records.session() as s:
        row = s.get(SourceRevision, revision_id)
        if row is None:
            raise Permanent(f"no revision {revision_id}")
        if row.status == "stored":
            row.status, row.refusal_reason, row.operations, row.package_blob = (
                status,
                reason,
                operations,
                manifest,
            )
        s.flush()
        s.expunge(row)
        return row
