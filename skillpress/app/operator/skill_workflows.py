"""Workflows of a published skill, kept as annotations so they survive regeneration: add them
from a `workflows.yaml`, promote one (draft → guided → hardened) as a change that proposes a
version like any other; a promotion to hardened needs steps and a dry run that passes."""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.operator.annotations import (
    Change,
    Stored,
    check_annotation,
    store_checked,
)
from skillpress.app.records.annotations import active_of_kind
from skillpress.app.records.versions import find_skill, live_skills
from skillpress.derive.annotations import Annotation
from skillpress.errors import NotFound, Refused
from skillpress.runtime.workflows.load import EXECUTIONS, WORKFLOW_LIMITS
from skillpress.schemas.records import AnnotationRecord, Skill

__all__ = ["add_workflows", "promote_workflow"]


def _active(ctx: AppContext, skill: Skill) -> dict[str, AnnotationRecord]:
    """The skill's active workflow annotations by workflow name."""
    rows = active_of_kind(ctx, skill.id, "workflow")
    return {r.body["workflow"]["name"]: r for r in rows}


def add_workflows(ctx: AppContext, slug: str, text: bytes, by: str) -> Stored:
    """Each workflow of a `workflows.yaml` as an annotation, checked with the skill's latest
    revision (and every workflow it already has) before any is stored."""
    from skillpress.format.errors import SpecRefused
    from skillpress.format.load import parse_bytes

    try:  # as a package's workflows.yaml is read: a key given twice is refused with its lines
        doc = parse_bytes(text, WORKFLOW_LIMITS)
    except SpecRefused as exc:
        raise Refused(f"not a workflows.yaml: {exc}") from None
    flows = doc.get("workflows") if isinstance(doc, dict) else None
    if not isinstance(flows, list) or not flows:
        raise Refused("a workflows.yaml holds `workflows:`, a list of at least one")
    skill = find_skill(ctx, slug)

    def prepare() -> Change:
        have = _active(ctx, skill)
        new = []
        for flow in flows:
            name = flow.get("name") if isinstance(flow, dict) else None
            if name in have:
                raise Refused(
                    f"{slug} has a workflow {name!r} already: promote it, or retire annotation"
                    f" {have[name].id}"
                )
            new.append(Annotation("(new)", "workflow", "skill", {"workflow": flow}))
        check_annotation(ctx, skill, new)
        return [(a.kind, a.target, a.body) for a in new], []

    return store_checked(ctx, skill, prepare, by)


def promote_workflow(
    ctx: AppContext, slug: str, name: str, to: str, by: str, tool: str | None = None
) -> Stored:
    """The workflow at another execution level, as a new annotation replacing its old one
    (`ids`: [old, new]); to guided with the operation the model is made to call (`tool`, unless
    the workflow names one already); to hardened only with steps and a dry run whose every
    request builds."""
    from skillpress.derive.annotations import AnnotationRefused
    from skillpress.runtime.package.skill import load_skill
    from skillpress.runtime.workflows.load import load_workflows
    from skillpress.runtime.workflows.run import StepFailed, WorkflowRefused, dry_call, run_workflow

    if to not in EXECUTIONS:
        raise Refused(f"--to {to!r}: one of {', '.join(EXECUTIONS)}")
    skill = find_skill(ctx, slug)

    def prepare() -> Change:  # what is promoted, read anew each time it is checked
        row = _active(ctx, skill).get(name)
        if row is None:
            raise NotFound(f"{slug} has no workflow {name!r} (skillpress workflow add {slug} FILE)")
        flow = dict(row.body["workflow"])
        if flow.get("execution", "draft") == to:
            raise Refused(f"{name} is {to} already")
        flow["execution"] = to
        if tool is not None:
            if to != "guided":
                raise Refused(f"--tool names a guided workflow's operation; {name} goes to {to}")
            flow["tool"] = tool
        elif to == "guided" and not flow.get("tool"):
            raise Refused(
                f"a guided workflow names the operation the model calls: give --tool OPERATION"
                f" (an operation of {slug}) to promote {name}"
            )
        if to == "hardened" and not flow.get("steps"):
            raise Refused(
                f"{name} has no steps: a hardened workflow runs its steps; add them first"
            )
        new = Annotation("(new)", "workflow", "skill", {"workflow": flow})
        check_annotation(ctx, skill, [new], retiring=frozenset({row.id}))
        if to == "hardened":
            from skillpress.app.records.derivations import (
                annotations_in_force,
                derive_revision,
                latest_revision_id,
                load_revision,
            )

            revision = latest_revision_id(ctx, skill.id)
            assert revision is not None  # check_annotation refused otherwise
            in_force = annotations_in_force(ctx, skill.id, ctx.clock())
            kept = [a for a in in_force if a.id != row.id]
            package = derive_revision(ctx, load_revision(ctx, revision), None, (*kept, new))
            loaded = load_skill(package.files, lazy=True)
            try:
                with live_skills(ctx) as finder:
                    flows = load_workflows(package.files, loaded, finder)
                run_workflow(flows, name, {}, loaded, dry_call(), dry_run=True, unknown_inputs=True)
            except (StepFailed, WorkflowRefused) as exc:
                raise AnnotationRefused(
                    f"{name} cannot be hardened: its dry run stopped ({exc})"
                ) from None
        return [("workflow", "skill", {"workflow": flow})], [row.id]

    return store_checked(ctx, skill, prepare, by)
