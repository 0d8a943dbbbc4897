"""People's additions from the command line: annotate, annotations, retire, rekey, review, detach, export.

Every change is checked against the skill's latest revision before it is stored (the same
derivation, refusing instead of degrading), then proposes a new version through the pipeline.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from services.platform.settings import Settings

__all__ = ["register"]

AsJson = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
Timeout = Annotated[float, typer.Option("--timeout", help="seconds to wait for the proposal")]
By = Annotated[str, typer.Option("--by", help="who is making the change (recorded with it)")]


def _fail(reason: str, code: int = 2) -> Any:
    from services.cli.main import fail

    return fail(reason, code)


def _check(
    ctx: Any, skill: Any, new: list[Any], retiring: set[str] = frozenset()
) -> dict[str, Any]:  # type: ignore[assignment]
    """Derive the latest revision with the active annotations (less `retiring`, less those already
    orphaned) plus `new`, refusing what cannot be meant; returns the derived skill.json."""
    from services.derive.annotations import AnnotationRefused
    from services.workers.inputs import (
        derivation_files,
        derive_revision,
        latest_revision_id,
        load_derivation,
        load_revision,
    )
    from services.workers.render import active_annotations

    revision_id = latest_revision_id(ctx, skill.id)
    if revision_id is None:
        _fail(
            f"{skill.slug} has no derived revision yet (skillpress import SPEC --skill {skill.slug})"
        )
    inputs = load_revision(ctx, revision_id)
    with ctx.records.session() as s:
        current = [
            a for a in active_annotations(s, skill.id, datetime.now(UTC)) if a.id not in retiring
        ]
    # the parse stage's derivation names the operations: an annotation on any other is orphaned
    assert inputs.revision.package_blob is not None  # a categorized revision was parsed
    parsed = json.loads(
        derivation_files(ctx, load_derivation(ctx, inputs.revision.package_blob))["skill.json"]
    )
    names = {op["name"] for op in parsed["operations"]}
    orphaned = {a.id for a in current if a.operation is not None and a.operation not in names}
    try:
        package = derive_revision(
            ctx,
            inputs,
            None,
            tuple(a for a in current if a.id not in orphaned) + tuple(new),
            strict=True,
        )
    except AnnotationRefused as exc:
        _fail(str(exc))
    return dict(json.loads(package.files["skill.json"]))


def _propose(
    settings: Settings, slug: str, ids: list[str], change: str, as_of: datetime, timeout: float
) -> dict[str, Any]:
    from schemas.events import AnnotationChanged
    from schemas.subjects import EVENTS
    from services.cli.pipeline_commands import _follow
    from services.cli.stack import Pipeline, StackError, with_pipeline

    submission = uuid.uuid4().hex
    event = AnnotationChanged(
        skill=slug,
        annotation_ids=ids,
        change=change,
        as_of=as_of.isoformat(),
        submission=submission,
    )

    async def work(pipeline: Pipeline) -> list[tuple[str, dict[str, Any]]]:
        return await _follow(
            pipeline,
            EVENTS["annotation_changed"],
            event,
            f"annotation:{submission}",
            lambda subj, body: (
                body.get("submission") == submission
                and subj in (EVENTS["version_proposed"], EVENTS["revision_rejected"])
            ),
            timeout,
        )

    try:
        seen = with_pipeline(settings, work)
    except (StackError, TimeoutError) as exc:
        _fail(str(exc), 1)
    subject, body = seen[-1]
    if subject == EVENTS["revision_rejected"]:
        _fail(f"refused: {body['reason']}")
    return body


def _store(
    ctx: Any, skill: Any, kind: str, target: str, body: dict[str, Any], by: str, now: datetime
) -> str:
    from schemas.records import AnnotationRecord
    from services.platform.ids import derived_id

    aid = derived_id(
        "annotation", skill.id, kind, target, json.dumps(body, sort_keys=True), now.isoformat()
    )[:16]
    with ctx.records.session() as s:
        s.add(
            AnnotationRecord(
                id=aid,
                skill_id=skill.id,
                kind=kind,
                target=target,
                body_json=json.dumps(body, sort_keys=True),
                created_by=by,
                created_at=now,
            )
        )
    return aid


def _report(
    proposal: dict[str, Any], as_json: bool, what: str, extra: dict[str, Any] | None = None
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


def _kv(text: str, flag: str) -> tuple[str, Any]:
    if "=" not in text:
        _fail(f"{flag} takes NAME=VALUE")
    name, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return name.strip(), value


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
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Add one annotation (a note, a gate, an identity…) and propose the version it makes."""
    from services.cli.pipeline_commands import _open, _skill
    from services.derive.annotations import AnnotationRefused, check_shape

    given = {
        k: v
        for k, v in {
            "note": note,
            "prefer": prefer,
            "hidden": hidden or None,
            "approval": approval,
            "example": example,
            "identity": identity,
            "fixed": fixed or fixed_header,
            "skill_note": skill_note,
            "category": rename_category or merge_categories,
        }.items()
        if v is not None
    }
    if len(given) != 1:
        _fail(
            "give exactly one of --note, --prefer, --hidden, --approval, --example, --identity, --fixed, --fixed-header,"
            " --skill-note, --rename-category, --merge-categories"
        )
    kind = next(iter(given))
    target = "skill" if kind in ("skill_note", "category") else f"operation:{operation or ''}"
    if category is not None:
        if kind != "note" or operation:
            _fail("--category takes a --note (and no --operation)")
        target = f"category:{category}"
    body: dict[str, Any]
    if kind in ("note", "skill_note"):
        body = {"text": note if kind == "note" else skill_note}
    elif kind == "prefer":
        body = {"operation": prefer}
    elif kind == "hidden":
        body = {}
    elif kind == "approval":
        body = {"matches": " ".join((approval or "").split()), "risk": risk}
        if binds:
            body["binds"] = [b.strip() for b in binds.split(",") if b.strip()]
        for key, value in (("amount", amount), ("currency", currency), ("auto_below", auto_below)):
            if value is not None:
                body[key] = value
    elif kind == "example":
        try:
            body = {"arguments": json.loads(example or ""), "turn": turn or ""}
        except json.JSONDecodeError as exc:
            _fail(f"--example is not valid JSON ({exc.msg})")
    elif kind == "identity":
        body = {"fields": [f.strip() for f in (identity or "").split(",") if f.strip()]}
    elif kind == "category":
        old, new = _kv(
            rename_category or merge_categories or "",
            "--rename-category" if rename_category else "--merge-categories",
        )
        body = (
            {"rename": old, "to": str(new)}
            if rename_category
            else {"merge": [x.strip() for x in old.split(",") if x.strip()], "to": str(new)}
        )
    else:
        name, value = _kv(
            fixed or fixed_header or "", "--fixed-header" if fixed_header else "--fixed"
        )
        body = {"name": name, "value": value} | ({"in": "header"} if fixed_header else {})
    try:
        check_shape(kind, target, body)
    except AnnotationRefused as exc:
        _fail(str(exc))
    settings = Settings()
    ctx = _open(settings)
    skill = _skill(ctx, slug)
    from services.derive.annotations import Annotation

    _check(ctx, skill, [Annotation("(new)", kind, target, body)])
    now = datetime.now(UTC)
    aid = _store(ctx, skill, kind, target, body, by, now)
    ctx.records.close()
    proposal = _propose(settings, slug, [aid], "added", now, timeout)
    _report(proposal, as_json, f"annotation {aid} ({kind} on {target})", {"annotation_id": aid})


def annotations(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    include_retired: Annotated[
        bool, typer.Option("--all", help="include retired annotations")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """A skill's annotations, and whether the newest version applies each or finds it orphaned."""
    from sqlmodel import col, select

    from schemas.records import AnnotationRecord
    from services.cli.pipeline_commands import _open, _skill
    from services.workers.versions import newest_version, version_files

    ctx = _open(Settings())
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        rows = s.exec(
            select(AnnotationRecord)
            .where(AnnotationRecord.skill_id == skill.id)
            .order_by(col(AnnotationRecord.created_at))
        ).all()
        newest = newest_version(s, skill.id)
    state = (
        json.loads(version_files(ctx.blobs, newest)["skill.json"]).get("annotations", {})
        if newest
        else {}
    )
    out = []
    for r in rows:
        if r.retired_at is not None and not include_retired:
            continue
        status = (
            "retired"
            if r.retired_at
            else (
                "orphaned"
                if r.id in state.get("orphaned", [])
                else "applied"
                if r.id in state.get("applied", [])
                else "pending"
            )
        )
        out.append(
            {
                "id": r.id,
                "kind": r.kind,
                "target": r.target,
                "body": json.loads(r.body_json),
                "status": status,
                "created_by": r.created_by,
                "created_at": r.created_at.isoformat(),
            }
        )
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    if not out:
        typer.echo(f"{slug} has no annotations")
    for a in out:
        typer.echo(
            f"{a['id']}  {a['status']:<8} {a['kind']:<10} {a['target']}  {json.dumps(a['body'], ensure_ascii=False)[:120]}"
        )


def _retire_rows(ctx: Any, ids: list[str], by: str, now: datetime) -> Any:
    """Retire the annotations `ids` at `now`; returns their skill."""
    from schemas.records import AnnotationRecord, Skill

    with ctx.records.session() as s:
        rows = [s.get(AnnotationRecord, i) for i in ids]
        if any(r is None or r.retired_at is not None for r in rows):
            _fail(
                f"no active annotation {next(i for i, r in zip(ids, rows, strict=True) if r is None or r.retired_at is not None)!r}"
                " (skillpress annotations SLUG)"
            )
        for r in rows:
            r.retired_at, r.retired_by = now, by
        skill = s.get(Skill, rows[0].skill_id)
        s.expunge(skill)
        return skill


def retire(
    annotation_id: Annotated[str, typer.Argument(help="the annotation's id")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Retire an annotation (it stays on record) and propose the version without it."""
    from services.cli.pipeline_commands import _open

    settings = Settings()
    ctx = _open(settings)
    now = datetime.now(UTC)
    skill = _retire_rows(ctx, [annotation_id], by, now)
    ctx.records.close()
    proposal = _propose(settings, skill.slug, [annotation_id], "retired", now, timeout)
    _report(proposal, as_json, f"retired {annotation_id}")


def retract_turn(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    turn: Annotated[str, typer.Argument(help="the turn that was flagged")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """A flagged turn takes its examples down with it: every example observed in it is retired."""
    from sqlmodel import col, select

    from schemas.records import AnnotationRecord
    from services.cli.pipeline_commands import _open, _skill

    settings = Settings()
    ctx = _open(settings)
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        rows = s.exec(
            select(AnnotationRecord).where(
                AnnotationRecord.skill_id == skill.id,
                AnnotationRecord.kind == "example",
                col(AnnotationRecord.retired_at).is_(None),
            )
        ).all()
        ids = [r.id for r in rows if json.loads(r.body_json).get("turn") == turn]
    if not ids:
        ctx.records.close()
        typer.echo(f"{slug} has no example from turn {turn!r}")
        return
    now = datetime.now(UTC)
    _retire_rows(ctx, ids, by, now)
    ctx.records.close()
    proposal = _propose(settings, slug, ids, "retired", now, timeout)
    _report(proposal, as_json, f"retired {len(ids)} example(s) from turn {turn}", {"retired": ids})


def rekey(
    annotation_id: Annotated[str, typer.Argument(help="an orphaned annotation's id")],
    operation: Annotated[str, typer.Argument(help="the operation it belongs to now")],
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Move an annotation to an operation's new name: the old one retired, the same one added on the new name."""
    from schemas.records import AnnotationRecord, Skill
    from services.cli.pipeline_commands import _open
    from services.derive.annotations import Annotation

    settings = Settings()
    ctx = _open(settings)
    with ctx.records.session() as s:
        row = s.get(AnnotationRecord, annotation_id)
        if row is None or row.retired_at is not None:
            _fail(f"no active annotation {annotation_id!r}")
        kind, body = row.kind, json.loads(row.body_json)
        skill = s.get(Skill, row.skill_id)
        s.expunge(skill)
    _check(
        ctx,
        skill,
        [Annotation("(new)", kind, f"operation:{operation}", body)],
        retiring={annotation_id},
    )
    now = datetime.now(UTC)
    _retire_rows(ctx, [annotation_id], by, now)
    aid = _store(ctx, skill, kind, f"operation:{operation}", body, by, now)
    ctx.records.close()
    proposal = _propose(settings, skill.slug, [annotation_id, aid], "rekeyed", now, timeout)
    _report(
        proposal,
        as_json,
        f"re-keyed {annotation_id} → {aid} on {operation}",
        {"annotation_id": aid},
    )


def review(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    accept_group: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-group", help="confirm a whole group: money, deletes, changes, reads"
        ),
    ] = None,
    by: By = "cli",
    as_json: AsJson = False,
    timeout: Timeout = 120.0,
) -> None:
    """Walk the approval and identity suggestions: money, deletes, changes, then reads; each confirmation becomes an annotation."""
    from sqlmodel import select

    from schemas.records import Suggestion
    from services.cli.pipeline_commands import _open, _skill
    from services.derive.annotations import Annotation, AnnotationRefused
    from services.derive.approvals import GROUPS
    from services.workers.inputs import latest_revision_id

    settings = Settings()
    ctx = _open(settings)
    skill = _skill(ctx, slug)
    groups = accept_group or []
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        _fail(f"--accept-group {unknown[0]!r}: one of {', '.join(GROUPS)}")
    interactive = not groups and sys.stdin.isatty()
    if not groups and not interactive:
        _fail(
            "not a terminal: name the groups to confirm with --accept-group money|deletes|changes|reads"
        )
    revision_id = latest_revision_id(ctx, skill.id)
    with ctx.records.session() as s:
        rows = s.exec(
            select(Suggestion).where(
                Suggestion.revision_id == revision_id, Suggestion.status == "open"
            )
        ).all()
        pending = sorted(rows, key=lambda r: (GROUPS.index(r.group), r.operation, r.kind))
        for r in pending:
            s.expunge(r)
    confirmed: list[str] = []
    skipped: list[str] = []
    remaining = len(pending)
    for sug in pending:
        body = json.loads(sug.body_json)
        if groups and sug.group not in groups:
            continue
        if sug.kind == "approval" and not body.get("bindable"):
            skipped.append(f"{sug.operation}: nothing to bind, so no gate can be confirmed")
            continue
        if sug.kind == "approval":
            kind, ann = (
                "approval",
                {
                    k: v
                    for k, v in body.items()
                    if k in ("matches", "risk", "binds", "amount", "currency")
                },
            )
        else:
            kind, ann = "identity", {"fields": body["fields"]}
        if interactive:
            answer = typer.prompt(
                f"[{sug.group}] {sug.operation} {kind} {json.dumps(ann)} — ({body.get('why', '')}) confirm? [y/n/q]",
                default="y",
            )
            if answer.lower().startswith("q"):
                break
            if not answer.lower().startswith("y"):
                continue
        target = f"operation:{sug.operation}"
        try:
            _check_quiet(ctx, skill, Annotation("(new)", kind, target, ann))
        except AnnotationRefused as exc:
            skipped.append(f"{sug.operation}: {exc}")
            continue
        aid = _store(ctx, skill, kind, target, ann, by, datetime.now(UTC))
        with ctx.records.session() as s:
            row = s.get(Suggestion, sug.id)
            if row is not None:
                row.status = "confirmed"
        confirmed.append(aid)
        remaining -= 1
        if not as_json:
            typer.echo(
                f"  confirmed {sug.operation} {kind} → annotation {aid} ({remaining} suggestion(s) left)"
            )
    ctx.records.close()
    for line in skipped:
        if not as_json:
            typer.echo(f"  skipped {line}", err=True)
    if not confirmed:
        if as_json:
            typer.echo(
                json.dumps({"confirmed": [], "skipped": skipped, "remaining": remaining}, indent=2)
            )
        else:
            typer.echo("nothing confirmed")
        return
    proposal = _propose(settings, slug, confirmed, "reviewed", datetime.now(UTC), timeout)
    _report(
        proposal,
        as_json,
        f"confirmed {len(confirmed)} suggestion(s), {remaining} left",
        {"confirmed": confirmed, "skipped": skipped, "remaining": remaining},
    )


def _check_quiet(ctx: Any, skill: Any, new: Any) -> None:
    """`_check`, raising AnnotationRefused instead of exiting (a review skips what cannot be confirmed)."""
    from services.derive.annotations import AnnotationRefused

    try:
        _check(ctx, skill, [new])
    except typer.Exit:
        raise AnnotationRefused("refused by the derivation") from None


def detach(slug: Annotated[str, typer.Argument(help="the skill's slug")]) -> None:
    """Detach a skill from its source: from its live version on it is an ordinary package that no longer regenerates."""
    from schemas.records import Skill
    from services.cli.pipeline_commands import _open, _skill

    ctx = _open(Settings())
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        row = s.get(Skill, skill.id)
        assert row is not None
        row.detached = True
    typer.echo(f"{slug} is detached: new spec revisions and annotations no longer propose versions")


def export(
    target: Annotated[
        str,
        typer.Argument(
            metavar="SLUG|DIR",
            help="a skill's slug (overlay, agent-skills) or a package directory (agent-skills)",
        ),
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="overlay: the annotations as an OpenAPI Overlay 1.0 document; agent-skills: a SKILL.md folder with tools.json",
        ),
    ] = "overlay",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="the folder to write (agent-skills)")
    ] = None,
) -> None:
    """Export a skill for other tooling: its annotations as an Overlay, or the whole skill as an Agent Skills folder."""
    if format == "agent-skills":
        from services.cli.call_commands import _skill_files
        from services.cli.output import write_package_dir
        from services.runtime.contracts import agent_skills_folder

        if out is None:
            _fail("--format agent-skills needs --out DIR")
        skill, files = _skill_files(target, None, "apiKey", None)
        folder = agent_skills_folder(skill, files)
        try:
            write_package_dir(folder, out, marker="SKILL.md")
        except OSError as exc:
            _fail(str(exc))
        contract = json.loads(folder["tools.json"])
        typer.echo(
            f"wrote {out}: SKILL.md, tools.json ({len(contract)} tools, {sum(t['type'] == 'write' for t in contract)} write),"
            f" {sum(1 for p in folder if p.startswith('references/'))} reference files"
        )
        return
    if format != "overlay":
        _fail(f"--format {format!r}: overlay or agent-skills")
    _overlay(target)


def verify(folder: Annotated[Path, typer.Argument(help="an exported Agent Skills folder")]) -> None:
    """Check an exported folder: tools.json is a sound contract and SKILL.md states the same rules (exit 1 if not)."""
    from services.runtime.contracts import ContractError, verify_folder

    if not folder.is_dir():
        _fail(f"{folder} is not a directory")
    files = {
        p.name: p.read_bytes()
        for p in folder.iterdir()
        if p.is_file() and p.name in ("SKILL.md", "tools.json")
    }
    try:
        counts = verify_folder(files)
    except ContractError as exc:
        _fail(f"{folder}: {exc}", 1)
    typer.echo(
        f"ok: {counts['tools']} tools, {counts['write']} write (each requires confirmation), {counts['idempotent']} idempotent"
    )


def _overlay(slug: str) -> None:
    from sqlmodel import col, select

    from schemas.records import AnnotationRecord
    from services.cli.pipeline_commands import _open, _skill
    from services.workers.versions import newest_version, version_files

    ctx = _open(Settings())
    skill = _skill(ctx, slug)
    with ctx.records.session() as s:
        rows = s.exec(
            select(AnnotationRecord)
            .where(
                AnnotationRecord.skill_id == skill.id, col(AnnotationRecord.retired_at).is_(None)
            )
            .order_by(col(AnnotationRecord.created_at))
        ).all()
        newest = newest_version(s, skill.id)
    index = (
        {
            o["name"]: o
            for o in json.loads(version_files(ctx.blobs, newest)["skill.json"])["operations"]
        }
        if newest
        else {}
    )
    updates: dict[str, dict[str, Any]] = {}
    for r in rows:
        body = json.loads(r.body_json)
        if r.kind == "skill_note":
            updates.setdefault("$.info", {}).setdefault("x-skillpress-conventions", []).append(
                body["text"]
            )
            continue
        op = index.get(r.target.split(":", 1)[1])
        if op is None:
            continue  # orphaned: nowhere in the document to put it
        target = f"$.paths['{op['path']}'].{op['method'].lower()}"
        key = f"x-skillpress-{r.kind.replace('_', '-')}"
        entry = updates.setdefault(target, {})
        if r.kind in ("note", "example", "fixed"):
            entry.setdefault(key + ("s" if not key.endswith("s") else ""), []).append(body)
        else:
            entry[key] = body if body else True
    doc = {
        "overlay": "1.0.0",
        "info": {
            "title": f"skillpress annotations of {slug}",
            "version": newest.id[:12] if newest else "0",
        },
        "actions": [{"target": t, "update": u} for t, u in sorted(updates.items())],
    }
    typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))


def register(app: typer.Typer) -> None:
    app.command()(annotate)
    app.command()(annotations)
    app.command()(retire)
    app.command()(rekey)
    app.command("retract-turn")(retract_turn)
    app.command()(review)
    app.command()(detach)
    app.command()(export)
    app.command()(verify)
