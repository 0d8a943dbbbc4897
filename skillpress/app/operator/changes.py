"""A person's change and the version it proposes, as one use-case each: an annotation added,
retired or re-keyed, suggestions confirmed, a version published. Each stores the change, then
waits for the pipeline's answer (the proposed version, or the refusal) and returns it typed; the
HTTP API and the console call these, and show what they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import (
    AnnotationAdded,
    AnnotationRekeyed,
    AnnotationRetired,
    Confirmation,
    Dismissal,
    ProposalView,
    PublicationView,
)
from skillpress.app.operator.annotations import (
    Stored,
    compose_annotation,
    record_annotation,
    record_rekeying,
    record_retirement,
)
from skillpress.app.operator.dispatch import propose_change, request_publish
from skillpress.app.operator.review import (
    confirm_suggestions,
    dismiss_suggestions,
    open_suggestions,
)
from skillpress.app.records.publish_check import check_publish_request
from skillpress.app.records.versions import (
    diff_versions,
    find_skill,
    resolve_version,
    revision_published,
)
from skillpress.errors import Refused
from skillpress.schemas.events import RevisionRejected, VersionProposed

__all__ = [
    "annotate",
    "confirm",
    "proposal_of",
    "publish",
    "rekey",
    "retire",
]

PROPOSAL_WAIT = 120.0  # seconds a change waits for the version it proposes


def proposal_of(
    ctx: AppContext, stored: Stored, change: str, timeout: float = PROPOSAL_WAIT
) -> ProposalView:
    """The version `stored` proposes (Refused with the reason when its derivation refuses it)."""
    event = propose_change(ctx, stored.skill.slug, stored.ids, change, stored.at, timeout)
    if isinstance(event.message, RevisionRejected):
        raise Refused(f"refused: {event.message.reason}")
    made = event.message
    assert isinstance(made, VersionProposed)  # the wait ends on a proposal or a refusal
    return ProposalView(
        version_id=made.version_id,
        skill=made.skill,
        revision_id=made.revision_id,
        created=made.created,
        summary=dict(made.summary),
        submission=made.submission,
        revision_published=revision_published(ctx, stored.skill, made.revision_id),
    )


def annotate(
    ctx: AppContext,
    slug: str,
    kind: str,
    operation: str | None,
    category: str | None,
    values: Mapping[str, str | None],
    by: str,
    timeout: float = PROPOSAL_WAIT,
) -> AnnotationAdded:
    """Add one annotation (from the words a person gave: `values[kind]` is its main value),
    checked against the latest revision, and propose the version it makes."""
    stored_kind, target, body = compose_annotation(kind, operation, category, values)
    stored = record_annotation(ctx, slug, stored_kind, target, body, by)
    return {
        "annotation_id": stored.ids[0],
        "kind": stored_kind,
        "target": target,
        "proposal": proposal_of(ctx, stored, "added", timeout),
    }


def retire(ctx: AppContext, annotation_id: str, by: str) -> AnnotationRetired:
    """Retire an annotation (it stays on record) and propose the version without it."""
    stored = record_retirement(ctx, annotation_id, by)
    return {"retired": annotation_id, "proposal": proposal_of(ctx, stored, "retired")}


def rekey(ctx: AppContext, moves: Mapping[str, str], by: str) -> AnnotationRekeyed:
    """Move orphaned annotations (id → the operation it belongs to now) to their operations'
    new names, and propose the one version they make."""
    stored = record_rekeying(ctx, moves, by)
    new = stored.ids[len(moves) :]
    return {
        "annotation_id": new[0],
        "annotation_ids": new,
        "proposal": proposal_of(ctx, stored, "rekeyed"),
    }


def confirm(
    ctx: AppContext, slug: str, ids: Sequence[str], groups: Sequence[str], by: str
) -> Confirmation:
    """Confirm suggestions one at a time or a group at once (each becomes an annotation, all
    checked in one derivation), and propose the version they make."""
    if not ids and not groups:
        raise Refused("name suggestions (`ids`) or groups (`groups`) to confirm")
    skill = find_skill(ctx, slug)
    done = confirm_suggestions(ctx, skill, ids=ids, groups=groups, by=by)
    out: Confirmation = {
        "confirmed": done.annotation_ids,
        "skipped": done.skipped,
        "remaining": done.remaining,
        "proposal": None,
    }
    if done.annotation_ids:
        stored = Stored(done.annotation_ids, skill, ctx.clock())
        out["proposal"] = proposal_of(ctx, stored, "reviewed")
    return out


def dismiss(
    ctx: AppContext, slug: str, ids: Sequence[str], groups: Sequence[str], by: str
) -> Dismissal:
    """Dismiss suggestions one at a time or a group at once: decided by `by`, never offered
    again (on later revisions either), nothing proposed."""
    if not ids and not groups:
        raise Refused("name suggestions (`ids`) or groups (`groups`) to dismiss")
    skill = find_skill(ctx, slug)
    gone = dismiss_suggestions(ctx, skill, ids=ids, groups=groups, by=by)
    return {"dismissed": gone, "remaining": len(open_suggestions(ctx, skill))}


def publish(
    ctx: AppContext, slug: str, ref: str, remove_gates: bool, timeout: float, by: str
) -> PublicationView:
    """Make the version `ref` names live (refused with the gates it would drop unless
    `remove_gates`) and wait for its publication; with it, the whole change against what was
    live (spec changes and annotation changes alike, each declaration's in words)."""
    version_id = check_publish_request(
        ctx, slug, resolve_version(ctx, slug, ref)[1].id, remove_gates
    )
    changes = diff_versions(ctx, slug, None, version_id)  # against live, before it moves
    done = request_publish(ctx, slug, version_id, remove_gates, timeout, by)
    done["changes"] = changes
    return done
