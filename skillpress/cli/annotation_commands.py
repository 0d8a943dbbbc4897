"""People's additions from the command line: annotate, annotations, retire, rekey, retract-turn,
and review (`review_commands`).

Every change is checked against the skill's latest revision before it is stored (the same
derivation, refusing instead of degrading), then proposes a new version through the pipeline.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillpress.cli.common import (
    AsJson,
    By,
    Timeout,
    fail,
    failures,
    open_ctx,
)

if TYPE_CHECKING:
    from skillpress.app.base.context import AppContext
    from skillpress.app.base.views import ProposalView
    from skillpress.app.operator.annotations import Stored

__all__ = ["register"]


def propose(ctx: AppContext, stored: Stored, change: str, timeout: float) -> ProposalView:
    """The version a stored change proposes (refused: exit 2; no pipeline: exit 1)."""
    from skillpress.app.operator.changes import proposal_of

    try:
        with failures():
            return proposal_of(ctx, stored, change, timeout)
    finally:
        ctx.close()


def report(
    proposal: ProposalView, as_json: bool, what: str, extra: dict[str, Any] | None = None
) -> None:
    if as_json:
        typer.echo(json.dumps({**(extra or {}), "proposal": proposal}, indent=2, sort_keys=True))
        return
    s = proposal.get("summary", {})
    fresh = "" if proposal.get("created", True) else " (identical to a version already stored)"
    typer.echo(
        f"{what}; proposed version {proposal['version_id'][:12]}{fresh}"
        + (f", {s.get('orphaned')} orphaned annotation(s)" if s.get("orphaned") else "")
        + f". Publish it: skillpress publish {proposal['skill']} {proposal['version_id'][:12]}"
    )
    revision = proposal.get("revision_id")
    if revision and proposal.get("revision_published") is False:
        typer.echo(
            f"note: it stands on spec revision {revision[:12]}, which was never published:"
            " publishing it puts that revision's spec changes live too"
            f" (skillpress diff {proposal['skill']} shows them all)"
        )


def annotate(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    operation: Annotated[
        str | None,
        typer.Option(
            "--operation", "-o", help="the operation, by the name the skill shows it under"
        ),
    ] = None,
    category: Annotated[
        str | None, typer.Option("--category", "-c", help="with --note: a category, by its tag")
    ] = None,
    note: Annotated[
        str | None,
        typer.Option("--note", help="prose for the operation's file, under its own heading"),
    ] = None,
    prefer: Annotated[
        str | None, typer.Option("--prefer", help="another operation to use instead")
    ] = None,
    hidden: Annotated[
        bool, typer.Option("--hidden", help="leave the operation out of manifest and files")
    ] = False,
    approval: Annotated[
        str | None,
        typer.Option("--approval", help="a gate: what it matches, like 'DELETE /invoices/{id}'"),
    ] = None,
    risk: Annotated[
        str, typer.Option("--risk", help="the gate's risk: low, medium, high")
    ] = "high",
    binds: Annotated[
        str | None,
        typer.Option("--binds", help="fields the gate binds, comma-separated (default: all)"),
    ] = None,
    amount: Annotated[
        str | None, typer.Option("--amount", help="the body field holding an amount")
    ] = None,
    currency: Annotated[
        str | None, typer.Option("--currency", help="the body field holding its currency")
    ] = None,
    auto_below: Annotated[
        float | None, typer.Option("--auto-below", help="approve automatically below this amount")
    ] = None,
    auto_currency: Annotated[
        str | None,
        typer.Option(
            "--auto-currency",
            help="the currency --auto-below is in (EUR): an amount in another is never automatic",
        ),
    ] = None,
    example: Annotated[
        str | None, typer.Option("--example", help="an observed call's arguments (JSON)")
    ] = None,
    turn: Annotated[
        str | None, typer.Option("--turn", help="the turn the example came from")
    ] = None,
    identity: Annotated[
        str | None,
        typer.Option("--identity", help="fields that make two writes the same, comma-separated"),
    ] = None,
    fixed: Annotated[
        str | None,
        typer.Option("--fixed", help="NAME=VALUE: an argument the skill fixes and always sends"),
    ] = None,
    fixed_header: Annotated[
        str | None,
        typer.Option("--fixed-header", help="NAME=VALUE: a header the skill always sends"),
    ] = None,
    style: Annotated[
        str | None,
        typer.Option(
            "--style",
            help="NAME=STYLE: how a query parameter is written (form, csv, ssv, tsv, pipes, deepObject, json)",
        ),
    ] = None,
    skill_note: Annotated[
        str | None, typer.Option("--skill-note", help="a convention stated once in the body")
    ] = None,
    rename_category: Annotated[
        str | None,
        typer.Option("--rename-category", help="OLD=NEW: rename a category, whatever grouped it"),
    ] = None,
    merge_categories: Annotated[
        str | None, typer.Option("--merge-categories", help="A,B=NEW: merge categories into one")
    ] = None,
    credential: Annotated[
        str | None,
        typer.Option(
            "--credential",
            help="the header (or query parameter) the skill's credential is sent in",
        ),
    ] = None,
    credential_in: Annotated[
        str | None, typer.Option("--credential-in", help="header (default) or query")
    ] = None,
    credential_kind: Annotated[
        str | None,
        typer.Option("--credential-kind", help="apiKey (sent as it is, default), bearer, or basic"),
    ] = None,
    credential_env: Annotated[
        str | None,
        typer.Option(
            "--credential-env",
            help="the variable it is read from, when not <SLUG>_API_KEY (a name, never a value)",
        ),
    ] = None,
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Add one annotation (a note, a gate, an identity, the skill's credential…) and propose
    the version it makes."""
    # size: a typer command: one option per annotation kind
    given = {
        k: v
        for k, v in {
            "note": note,
            "prefer": prefer,
            "hidden": "" if hidden else None,
            "approval": approval,
            "example": example,
            "identity": identity,
            "fixed": fixed,
            "fixed_header": fixed_header,
            "style": style,
            "skill_note": skill_note,
            "rename_category": rename_category,
            "merge_categories": merge_categories,
            "credential": credential,
        }.items()
        if v is not None
    }
    if len(given) != 1:
        fail(
            "give exactly one of --note, --prefer, --hidden, --approval, --example, --identity, --fixed, --fixed-header,"
            " --style, --skill-note, --rename-category, --merge-categories, --credential"
        )
    if category is not None and ("note" not in given or operation):
        fail("--category takes a --note (and no --operation)")
    extra = {
        "risk": risk,
        "binds": binds,
        "amount": amount,
        "currency": currency,
        "auto_below": None if auto_below is None else str(auto_below),
        "auto_currency": auto_currency,
        "turn": turn,
        "credential_in": credential_in,
        "credential_kind": credential_kind,
        "credential_env": credential_env,
    }
    from skillpress.app.base.views import AnnotationAdded
    from skillpress.cli.remote import through_api

    kind = next(iter(given))
    request = {"kind": kind, "operation": operation, "category": category, "value": given[kind]}
    done = through_api(
        lambda api: api.post(
            f"/skills/{slug}/annotations",
            request | extra | {"timeout": min(timeout, 600.0)},  # the API waits 600 s at most
            AnnotationAdded,
            wait=timeout,
        ),
        by,
    )
    if done is not None:
        aid, kind, target, proposal = (
            done["annotation_id"],
            done["kind"],
            done["target"],
            done["proposal"],
        )
    else:
        from skillpress.app.operator.annotations import (
            compose_annotation,
            record_annotation,
        )

        with failures():
            kind, target, body = compose_annotation(kind, operation, category, given | extra)
        ctx = open_ctx()
        with failures():
            stored = record_annotation(ctx, slug, kind, target, body, by)
        proposal = propose(ctx, stored, "added", timeout)
        aid = stored.ids[0]
    report(proposal, as_json, f"annotation {aid} ({kind} on {target})", {"annotation_id": aid})


def annotations_(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    include_retired: Annotated[
        bool, typer.Option("--all", help="include retired annotations")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """A skill's annotations, and whether the newest version applies each or finds it orphaned."""
    from skillpress.app.base.views import AnnotationView
    from skillpress.cli.remote import through_api

    retired = "true" if include_retired else "false"
    out = through_api(
        lambda api: api.get(
            f"/skills/{slug}/annotations", list[AnnotationView], include_retired=retired
        )
    )
    if out is None:
        from skillpress.app.operator.annotations import list_annotations

        with failures():
            out = list_annotations(open_ctx(), slug, include_retired)
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    if not out:
        typer.echo(f"{slug} has no annotations")
    for a in out:
        typer.echo(
            f"{a['id']}  {a['status']:<8} {a['kind']:<10} {a['target']}  {json.dumps(a['body'], ensure_ascii=False)[:120]}"
        )


def retire(
    annotation_id: Annotated[str, typer.Argument(help="the annotation's id")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Retire an annotation (it stays on record) and propose the version without it."""
    from skillpress.app.base.views import AnnotationRetired
    from skillpress.cli.remote import through_api

    done = through_api(
        lambda api: api.post(
            f"/annotations/{annotation_id}/retire", {}, AnnotationRetired, wait=timeout
        ),
        by,
    )
    if done is not None:
        proposal = done["proposal"]
    else:
        from skillpress.app.operator.annotations import record_retirement

        ctx = open_ctx()
        with failures():
            stored = record_retirement(ctx, annotation_id, by)
        proposal = propose(ctx, stored, "retired", timeout)
    report(proposal, as_json, f"retired {annotation_id}")


def retract_turn(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    turn: Annotated[str, typer.Argument(help="the turn that was flagged")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """A flagged turn takes its examples down with it: every example observed in it is retired."""
    from skillpress.app.operator.annotations import retract_turn as retract

    ctx = open_ctx()
    with failures():
        stored = retract(ctx, slug, turn, by)
    if stored is None:
        ctx.close()
        typer.echo(f"{slug} has no example from turn {turn!r}")
        return
    proposal = propose(ctx, stored, "retired", timeout)
    report(
        proposal,
        as_json,
        f"retired {len(stored.ids)} example(s) from turn {turn}",
        {"retired": stored.ids},
    )


def rekey(
    annotation_id: Annotated[str, typer.Argument(help="an orphaned annotation's id")],
    operation: Annotated[str, typer.Argument(help="the operation it belongs to now")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Move an annotation to an operation's new name: the old one retired, the same one added on the new name."""
    from skillpress.app.base.views import AnnotationRekeyed
    from skillpress.cli.remote import through_api

    done = through_api(
        lambda api: api.post(
            f"/annotations/{annotation_id}/rekey",
            {"operation": operation},
            AnnotationRekeyed,
            wait=timeout,
        ),
        by,
    )
    if done is not None:
        aid, proposal = done["annotation_id"], done["proposal"]
    else:
        from skillpress.app.operator.annotations import record_rekeying

        ctx = open_ctx()
        with failures():
            stored = record_rekeying(ctx, {annotation_id: operation}, by)
        proposal = propose(ctx, stored, "rekeyed", timeout)
        aid = stored.ids[1]
    report(
        proposal,
        as_json,
        f"re-keyed {annotation_id} → {aid} on {operation}",
        {"annotation_id": aid},
    )


def register(app: typer.Typer) -> None:
    app.command()(annotate)
    app.command("annotations")(annotations_)
    app.command()(retire)
    app.command()(rekey)
    app.command("retract-turn")(retract_turn)
