"""Invariant: a suggestion is decided once, and its annotation stored only with the decision
that won (`app/records/suggestions`: a suggestion is confirmed or dismissed by a conditional
update from `open`; the annotation a confirmation adds is stored in that same transaction, only
where that update won).

Every face that decides suggestions (the command line's `suggestions confirm|dismiss`, `POST
/v1/skills/{slug}/suggestions/confirm|dismiss`, the console's buttons) ends in
`app/operator/review`, attacked there with N people at once, on SQLite and PostgreSQL. An
earlier release stored as many identical gates as people who confirmed at once, and a gate
confirmed while another person dismissed the same suggestion stayed in force with the
suggestion recorded as dismissed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.operator import review
from skillpress.app.records import versions
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import AnnotationRecord, Suggestion
from skillpress.schemas.subjects import EVENTS
from tests.app import bus
from tests.trust.harness import N, race

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"


def _skill_with_suggestions(ctx: AppContext) -> tuple[Any, review.Pending]:
    blob = ctx.blobs.put(HOLLOWBROOK.read_bytes())
    event = SpecSubmitted(submission="one", skill="hollowbrook", blob=blob, created_by="t")
    bus.run(ctx, EVENTS.spec_submitted, event)
    skill = versions.find_skill(ctx, "hollowbrook")
    pending = {(p.operation, p.kind): p for p in review.open_suggestions(ctx, skill)}
    return skill, pending[("cancel_booking", "approval")]


def _gates(ctx: AppContext, operation: str) -> list[AnnotationRecord]:
    from sqlmodel import select

    with ctx.records.session() as s:
        rows = s.exec(select(AnnotationRecord).where(AnnotationRecord.kind == "approval")).all()
        return [r for r in rows if r.target == f"operation:{operation}"]


def _status(ctx: AppContext, suggestion: str) -> tuple[str, str | None]:
    with ctx.records.session() as s:
        row = s.get(Suggestion, suggestion)
        assert row is not None
        return row.status, row.decided_by


def test_many_confirming_one_suggestion_at_once_store_one_gate(settings: Settings) -> None:
    ctx = open_app(settings)
    try:
        skill, sug = _skill_with_suggestions(ctx)
        outcomes = race(N, lambda i: review.confirm(ctx, skill, sug, f"person{i}"))
        gates = _gates(ctx, "cancel_booking")
        assert len(gates) == 1, [(g.id, g.created_by) for g in gates]
        # each confirmer is answered with the one gate in force: confirming twice adds nothing
        assert outcomes == [gates[0].id] * N, outcomes
        assert _status(ctx, sug.id) == ("confirmed", gates[0].created_by)
    finally:
        ctx.close()


def test_a_suggestion_confirmed_and_dismissed_at_once_is_one_decision(
    settings: Settings,
) -> None:
    ctx = open_app(settings)
    try:
        skill, sug = _skill_with_suggestions(ctx)

        def decide(i: int) -> Any:
            if i % 2:
                return review.dismiss_suggestions(ctx, skill, ids=[sug.id], by=f"dismisser{i}")
            return review.confirm(ctx, skill, sug, f"confirmer{i}")

        outcomes = race(N, decide)
        status, by = _status(ctx, sug.id)
        gates = _gates(ctx, "cancel_booking")
        if status == "confirmed":  # the gate in force is the confirmer's that won
            assert [g.created_by for g in gates] == [by], (by, gates)
        else:  # dismissed first: no gate, and no confirmer was told it stored one
            assert status == "dismissed" and gates == [], (by, gates)
            assert not [o for o in outcomes if isinstance(o, str)], outcomes
        won = [o for o in outcomes if o == 1 or isinstance(o, str)]
        assert won, outcomes
    finally:
        ctx.close()
