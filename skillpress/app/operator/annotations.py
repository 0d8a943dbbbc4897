"""People's additions: add one (checked against the skill's latest revision, refusing what cannot
be meant), list them with their state, retire, re-key, retract a turn's examples, detach.

Each change is stored first and then proposes a version through the pipeline
(`skillpress.app.operator.dispatch.propose_change`); nothing here publishes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import AnnotationView
from skillpress.app.records.annotations import (
    active_ids,
    active_of_kind,
    annotations_to_rekey,
    retire_annotations,
    skill_annotations,
    write_if_unchanged,
)
from skillpress.app.records.derivations import (
    annotations_in_force,
    derive_revision,
    latest_revision_id,
    load_revision,
    parsed_operation_names,
)
from skillpress.app.records.versions import find_skill, newest_manifest, set_detached
from skillpress.derive.annotations import Annotation, check_shape
from skillpress.errors import Refused, Unavailable
from skillpress.format.manifest import Manifest
from skillpress.platform.ids import derived_id
from skillpress.schemas.records import AnnotationRecord, Skill

__all__ = [
    "KINDS",
    "Kind",
    "Stored",
    "record_annotation",
    "check_annotation",
    "check_workflows",
    "compose_annotation",
    "detach",
    "annotations_of",
    "list_annotations",
    "record_rekeying",
    "record_retirement",
    "retract_turn",
    "skill_credential",
    "annotation_record",
    "store_checked",
]


@dataclass(frozen=True)
class Stored:
    """What a change stored: the annotations it touched, its skill, and the moment it took effect."""

    ids: list[str]
    skill: Skill
    at: datetime


# what a person can add, by the words they give it: the CLI's flags, the API and the console's form
Kind = Literal[
    "note",
    "skill_note",
    "prefer",
    "hidden",
    "approval",
    "identity",
    "example",
    "fixed",
    "fixed_header",
    "style",
    "rename_category",
    "merge_categories",
    "credential",
]
KINDS: tuple[str, ...] = get_args(Kind)


def _pair(text: str, what: str) -> tuple[str, Any]:
    if "=" not in text:
        raise Refused(f"{what} takes NAME=VALUE")
    name, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return name.strip(), value


def _listed(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _gate_body(matches: str, values: Mapping[str, str | None]) -> dict[str, Any]:
    """An approval rule's body from a person's words: what it matches, its risk, the arguments
    it binds, the amount it reads and below which it is approved by itself."""
    body: dict[str, Any] = {
        "matches": " ".join(matches.split()),
        "risk": values.get("risk") or "high",
    }
    if values.get("binds"):
        body["binds"] = _listed(values["binds"] or "")
    for key in ("amount", "currency", "auto_currency"):
        if values.get(key):
            body[key] = values[key]
    if values.get("auto_below"):
        try:
            body["auto_below"] = float(values["auto_below"] or "")
        except ValueError:
            raise Refused(f"auto below {values['auto_below']!r} is not a number") from None
    return body


def compose_annotation(
    kind: str, operation: str | None, category: str | None, values: Mapping[str, str | None]
) -> tuple[str, str, dict[str, Any]]:
    """(stored kind, target, body) of an annotation from the words a person gave: `values[kind]`
    is its main value (a note's text, a gate's `matches`, `NAME=VALUE`, a credential's header…),
    with `risk`, `binds`, `amount`, `currency`, `auto_below` for a gate, `turn` for an example,
    and `credential_in`, `credential_kind`, `credential_env` for a credential. Refused with what to
    give instead; the body's own rules are checked by `check_shape` when it is added."""
    if kind not in KINDS:
        raise Refused(f"no annotation kind {kind!r}: one of {', '.join(KINDS)}")
    main = (values.get(kind) or "").strip() if kind != "hidden" else ""
    if kind != "hidden" and not main:
        raise Refused(f"a {kind.replace('_', ' ')} needs its value")
    target = f"operation:{operation or ''}"
    if category:
        if kind != "note" or operation:
            raise Refused("a category takes a note (and no operation)")
        target = f"category:{category}"
    body = _body(kind, main, values)
    if kind in ("rename_category", "merge_categories"):
        return "category", "skill", body
    if kind == "credential":
        if operation or category:
            raise Refused("a credential is the whole skill's: give no operation or category")
        return kind, "skill", body
    if kind in ("fixed", "fixed_header"):
        return "fixed", target, body
    return kind, "skill" if kind == "skill_note" else target, body


def _body(kind: str, main: str, values: Mapping[str, str | None]) -> dict[str, Any]:
    """An annotation's body from its main value and the words that go with its kind."""
    if kind in ("note", "skill_note"):
        return {"text": main}
    if kind == "prefer":
        return {"operation": main}
    if kind == "hidden":
        return {}
    if kind == "approval":
        return _gate_body(main, values)
    if kind == "example":
        try:
            return {"arguments": json.loads(main), "turn": values.get("turn") or ""}
        except json.JSONDecodeError as exc:
            raise Refused(f"the example is not valid JSON ({exc.msg})") from None
    if kind == "identity":
        return {"fields": _listed(main)}
    if kind in ("rename_category", "merge_categories"):
        old, new = _pair(main, kind.replace("_", " "))
        if kind == "rename_category":
            return {"rename": old, "to": str(new)}
        return {"merge": _listed(old), "to": str(new)}
    if kind == "style":
        name, style = _pair(main, "a style")
        return {"name": name, "style": style}
    if kind == "credential":
        env = values.get("credential_env")
        return {
            "name": main,
            "in": values.get("credential_in") or "header",
            "kind": values.get("credential_kind") or "apiKey",
        } | ({"env": env} if env else {})
    name, value = _pair(main, kind.replace("_", " "))
    return {"name": name, "value": value} | ({"in": "header"} if kind == "fixed_header" else {})


def check_annotation(
    ctx: AppContext, skill: Skill, new: list[Annotation], retiring: frozenset[str] = frozenset()
) -> Manifest:
    """Derive the latest revision with the active annotations (less `retiring`, less those already
    orphaned) plus `new`, refusing (AnnotationRefused) what cannot be meant; the derived skill.json."""
    revision_id = latest_revision_id(ctx, skill.id)
    if revision_id is None:
        raise Refused(
            f"{skill.slug} has no derived revision yet (skillpress import SPEC --skill {skill.slug})"
        )
    inputs = load_revision(ctx, revision_id)
    in_force = annotations_in_force(ctx, skill.id, ctx.clock())
    current = [a for a in in_force if a.id not in retiring]
    # the parse stage's derivation names the operations: an annotation on any other is orphaned
    names = parsed_operation_names(ctx, inputs.revision)
    orphaned = {a.id for a in current if a.operation is not None and a.operation not in names}
    kept = tuple(a for a in current if a.id not in orphaned)
    package = derive_revision(ctx, inputs, None, kept + tuple(new), strict=True)
    if any(a.kind == "workflow" for a in (*kept, *new)):
        check_workflows(ctx, package.files)
    return package.manifest


def check_workflows(ctx: AppContext, files: Mapping[str, bytes]) -> None:
    """The package's workflows load as the runtime will load them, a skill one `uses` being the
    published one (AnnotationRefused if not)."""
    from skillpress.app.records.versions import live_skills
    from skillpress.derive.annotations import AnnotationRefused
    from skillpress.runtime.package.skill import load_skill
    from skillpress.runtime.workflows.load import load_workflows
    from skillpress.runtime.workflows.run import WorkflowRefused

    with live_skills(ctx) as finder:
        try:
            load_workflows(files, load_skill(files, lazy=True), finder)
        except WorkflowRefused as exc:
            raise AnnotationRefused(str(exc)) from None


def annotation_record(
    skill: Skill, kind: str, target: str, body: dict[str, Any], by: str, now: datetime
) -> AnnotationRecord:
    """An annotation as it is stored, its id derived from what it says and when."""
    body_json = json.dumps(body, sort_keys=True)
    aid = derived_id("annotation", skill.id, kind, target, body_json, now.isoformat())[:16]
    return AnnotationRecord(
        id=aid,
        skill_id=skill.id,
        kind=kind,
        target=target,
        body_json=body_json,
        created_by=by,
        created_at=now,
    )


# what a change is: the annotations it adds (kind, target, body) and the ids it retires
Change = tuple[list[tuple[str, str, dict[str, Any]]], list[str]]
# how many times a change is checked again after another changed the skill's annotations
_TURNS = 10


def store_checked(ctx: AppContext, skill: Skill, prepare: Callable[[], Change], by: str) -> Stored:
    """A change to a skill's annotations, checked by `prepare` (which reads what it needs,
    refuses what cannot be meant, and returns what to add and retire), then written in one
    transaction only if the annotations in force are still those it was checked against:
    otherwise checked again. The one place annotations are added: of two people gating one
    operation at once, setting its credential or promoting one workflow, the second is checked
    against the first's (and refused where two would clash), never stored beside it unseen."""
    for _ in range(_TURNS):
        seen = active_ids(ctx, skill.id)
        try:
            adding, retiring = prepare()
        except Refused:
            if active_ids(ctx, skill.id) != seen:
                continue  # refused amid another change: checked again against what it made
            raise
        now = ctx.clock()
        records = [annotation_record(skill, k, t, body, by, now) for k, t, body in adding]
        if write_if_unchanged(ctx, skill.id, seen, records, retiring, by, now):
            return Stored([*retiring, *(r.id for r in records)], skill, now)
    raise Unavailable(
        f"{skill.slug}'s annotations kept changing while this change was checked; ask again"
    )


def record_annotation(
    ctx: AppContext, slug: str, kind: str, target: str, body: dict[str, Any], by: str
) -> Stored:
    """Check one annotation's shape, then against the skill's latest revision, then store it."""
    check_shape(kind, target, body)
    skill = find_skill(ctx, slug)

    def prepare() -> Change:
        check_annotation(ctx, skill, [Annotation("(new)", kind, target, body)])
        return [(kind, target, body)], []

    return store_checked(ctx, skill, prepare, by)


def list_annotations(
    ctx: AppContext, slug: str, include_retired: bool = False
) -> list[AnnotationView]:
    """A skill's annotations, each applied, orphaned, pending (not yet in a version) or retired."""
    skill = find_skill(ctx, slug)
    _, manifest = newest_manifest(ctx, skill)
    return annotations_of(ctx, skill, manifest, include_retired)


def annotations_of(
    ctx: AppContext, skill: Skill, manifest: Manifest | None, include_retired: bool = False
) -> list[AnnotationView]:
    """`list_annotations` for a skill and its newest manifest already read."""
    rows = skill_annotations(ctx, skill.id)
    state = manifest.annotations if manifest is not None else None
    out: list[AnnotationView] = []
    for r in rows:
        if r.retired_at is not None and not include_retired:
            continue
        if r.retired_at:
            status = "retired"
        elif state is not None and r.id in state.orphaned:
            status = "orphaned"
        elif state is not None and r.id in state.applied:
            status = "applied"
        else:
            status = "pending"
        out.append(
            {
                "id": r.id,
                "kind": r.kind,
                "target": r.target,
                "body": r.body,
                "status": status,
                "created_by": r.created_by,
                "created_at": r.created_at.isoformat(),
            }
        )
    return out


def record_retirement(ctx: AppContext, annotation_id: str, by: str) -> Stored:
    """Retire an annotation: it stays on record, and later versions leave it out."""
    now = ctx.clock()
    return Stored([annotation_id], retire_annotations(ctx, [annotation_id], by, now), now)


def retract_turn(ctx: AppContext, slug: str, turn: str, by: str) -> Stored | None:
    """Retire every example observed in a flagged turn; None when the turn gave none."""
    skill = find_skill(ctx, slug)
    rows = active_of_kind(ctx, skill.id, "example")
    ids = [r.id for r in rows if r.body.get("turn") == turn]
    if not ids:
        return None
    now = ctx.clock()
    return Stored(ids, retire_annotations(ctx, ids, by, now), now)


def record_rekeying(ctx: AppContext, moves: Mapping[str, str], by: str) -> Stored:
    """Move annotations to their operations' new names (`moves`: annotation id → operation) in
    one change: each old one retired, the same one added on its new name, all checked together
    first. `ids` is the old ones, then the new ones in the same order."""
    if not moves:
        raise Refused("name at least one annotation to re-key and the operation it belongs to now")
    skill, _ = annotations_to_rekey(ctx, list(moves))

    def prepare() -> Change:
        _, rows = annotations_to_rekey(ctx, list(moves))  # still in force
        found = [(r.kind, f"operation:{moves[r.id]}", r.body) for r in rows]
        new = [Annotation("(new)", kind, target, body) for kind, target, body in found]
        check_annotation(ctx, skill, new, retiring=frozenset(moves))
        return found, list(moves)

    return store_checked(ctx, skill, prepare, by)


def detach(ctx: AppContext, slug: str) -> None:
    """From now on the skill is an ordinary package: new revisions and annotations propose nothing."""
    set_detached(ctx, find_skill(ctx, slug).id)


def skill_credential(manifest: Manifest | None, slug: str) -> dict[str, Any]:
    """What the skill page says of a version's credential: in words (`said`), whether a person
    set it (a `credential` annotation) or the spec did, and the variable it is read from unless
    another is named (`default_env`)."""
    from skillpress.derive.auth import by_person
    from skillpress.derive.diff import credential_words
    from skillpress.format.credentials import default_credential_env

    auth = manifest.auth if manifest is not None else None
    return {
        "said": credential_words(auth) if auth is not None else "none",
        "by_person": auth is not None and by_person(auth),
        "default_env": default_credential_env(slug),
    }
