"""The parse stage's use-case: a revision's document loaded under every bound and derived once (its
files and grouping stored under one manifest the later stages read instead of deriving again), or
refused with its reason; written once (a redelivery keeps the first)."""

from __future__ import annotations

from skillpress.schemas.records import SourceRevision
from skillpress.services.app.base.context import AppContext
from skillpress.services.app.records.derivations import (
    derive_revision,
    load_revision,
    store_derivation,
)
from skillpress.services.derive import SpecRefused
from skillpress.services.errors import Permanent

__all__ = ["parse_revision", "record_parse"]


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


def parse_revision(ctx: AppContext, revision_id: str) -> SourceRevision:
    """The revision parsed (or refused), as it now stands: derived only while it is `stored`."""
    inputs = load_revision(ctx, revision_id)
    rev = inputs.revision
    if rev.status != "stored":
        return rev
    manifest = None
    try:
        package = derive_revision(ctx, inputs)
        status, reason, operations = "parsed", None, package.manifest.stats.operations
        manifest = store_derivation(ctx, package).manifest  # later stages read it
    except SpecRefused as exc:
        status, reason, operations = "refused", exc.reason, None
    return record_parse(ctx, rev.id, status, reason, operations, manifest)
