"""The parse stage's use-case: a revision's document loaded under every bound and derived once (its
files and grouping stored under one manifest the later stages read instead of deriving again), or
refused with its reason; written once (a redelivery keeps the first)."""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.records.derivations import (
    derive_revision,
    load_revision,
    store_derivation,
)
from skillpress.app.records.revisions import record_parse
from skillpress.derive import SpecRefused
from skillpress.schemas.records import SourceRevision

__all__ = ["parse_revision"]


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
