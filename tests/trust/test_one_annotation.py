"""Invariant: a change to a skill's annotations is stored only against the annotations it was
checked with (`app/operator/annotations.store_checked`, the one place annotations are added;
its write takes the skill's row and compares what is in force with what the check read,
`app/records/annotations.write_if_unchanged`; a group confirmation the same way).

One gate per operation, one credential per skill, one workflow of a name: each is checked
against what is in force, so two people changing one skill at once were each checked against a
skill without the other's change, and both stored (8 gates on one operation, 8 credentials, a
workflow promoted twice over). Every face that changes annotations (the command line's
`annotate`, `workflow add|promote`, `suggestions confirm`; the API's annotation, workflow and
suggestion routes; the console's forms) ends in these functions: attacked here with N people
at once, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import col, select

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.operator import annotations
from skillpress.app.operator.skill_workflows import add_workflows, promote_workflow
from skillpress.derive.annotations import AnnotationRefused
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import AnnotationRecord
from skillpress.schemas.subjects import EVENTS
from tests.app import bus
from tests.trust.harness import N, race

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"
RISKS = ("high", "medium", "low", "high")
FLOW = b"""
workflows:
  - name: book_room
    execution: draft
    procedure: Check the room, then book it.
    parameters: {type: object, properties: {room_id: {type: string}}}
"""


def _in_force(ctx: AppContext, kind: str) -> list[AnnotationRecord]:
    with ctx.records.session() as s:
        query = select(AnnotationRecord).where(
            AnnotationRecord.kind == kind, col(AnnotationRecord.retired_at).is_(None)
        )
        return list(s.exec(query).all())


def _home(settings: Settings) -> AppContext:
    ctx = open_app(settings)
    blob = ctx.blobs.put(HOLLOWBROOK.read_bytes())
    event = SpecSubmitted(submission="one", skill="hollowbrook", blob=blob, created_by="t")
    bus.run(ctx, EVENTS.spec_submitted, event)
    return ctx


def _one_stored_rest_refused(outcomes: list[Any], refusal: str) -> None:
    stored = [o for o in outcomes if isinstance(o, annotations.Stored)]
    refused = [o for o in outcomes if isinstance(o, AnnotationRefused) and refusal in str(o)]
    assert (len(stored), len(refused)) == (1, N - 1), outcomes


def test_many_gating_one_operation_at_once_store_one_gate(settings: Settings) -> None:
    ctx = _home(settings)
    try:

        def gate(i: int) -> Any:
            body = {"matches": "DELETE /bookings/{booking_id}", "risk": RISKS[i % len(RISKS)]}
            target = "operation:cancel_booking"
            return annotations.record_annotation(
                ctx, "hollowbrook", "approval", target, body, f"p{i}"
            )

        outcomes = race(N, gate)
        _one_stored_rest_refused(outcomes, "cancel_booking is gated already")
        gates = _in_force(ctx, "approval")
        won = next(o for o in outcomes if isinstance(o, annotations.Stored))
        assert [g.id for g in gates] == won.ids
    finally:
        ctx.close()


def test_many_setting_the_credential_at_once_store_one(settings: Settings) -> None:
    ctx = _home(settings)
    try:

        def credential(i: int) -> Any:
            kind, target, body = annotations.compose_annotation(
                "credential",
                None,
                None,
                {"credential": "X-Key", "credential_env": f"HOLLOWBROOK_KEY_{i}"},
            )
            return annotations.record_annotation(ctx, "hollowbrook", kind, target, body, f"p{i}")

        outcomes = race(N, credential)
        _one_stored_rest_refused(outcomes, "the skill's credential is set already")
        assert len(_in_force(ctx, "credential")) == 1
    finally:
        ctx.close()


def test_one_workflow_promoted_by_many_at_once_is_promoted_once(settings: Settings) -> None:
    ctx = _home(settings)
    try:
        add_workflows(ctx, "hollowbrook", FLOW, "ops")
        outcomes = race(
            N,
            lambda i: promote_workflow(
                ctx, "hollowbrook", "book_room", "guided", f"p{i}", "create_booking"
            ),
        )
        stored = [o for o in outcomes if isinstance(o, annotations.Stored)]
        refused = [o for o in outcomes if "book_room is guided already" in str(o)]
        assert (len(stored), len(refused)) == (1, N - 1), outcomes
        flows = _in_force(ctx, "workflow")
        assert [f.body["workflow"]["execution"] for f in flows] == ["guided"]
    finally:
        ctx.close()
