"""Workflow runs as records: each run's steps kept as they end, shown to people (`skillpress
runs`, the API, the skill page), and a run waiting at a gate resumed by the same workflow run
again with the same arguments once its approval is granted — its sent steps replayed from the
record, never sent twice (one taker: a waiting run is claimed before it resumes)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select

from skillpress.app.base.context import AppContext
from skillpress.app.base.views import RunStepView, RunView
from skillpress.errors import NotFound
from skillpress.runtime.workflows.run import Workflow
from skillpress.runtime.workflows.run_log import RunLog, StepRecord, redact
from skillpress.runtime.workflows.steps import DIRECT
from skillpress.schemas.records import WorkflowRun

__all__ = ["RecordedRuns", "get_run", "list_runs", "arguments_key"]

RUNS_SHOWN = 50


def arguments_key(workflow: str, arguments: dict[str, Any]) -> str:
    """What identifies a run's arguments without keeping them (they may hold a secret)."""
    canon = json.dumps(
        [workflow, arguments],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canon.encode()).hexdigest()


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()


def _steps_json(log: RunLog) -> str:
    return json.dumps([s.as_dict() for s in log.steps], ensure_ascii=False, default=str)


def _steps(row: WorkflowRun) -> list[StepRecord]:
    return [StepRecord.from_dict(s) for s in row.steps]


def _view(row: WorkflowRun, with_steps: bool) -> RunView:
    assert row.id is not None
    steps = row.steps
    view = RunView(
        id=row.id,
        skill=row.skill,
        version=row.version,
        workflow=row.workflow,
        execution=row.execution,
        arguments=row.arguments,
        status=row.status,
        started_by=row.started_by,
        started_at=_iso(row.started_at) or "",
        updated_at=_iso(row.updated_at) or "",
        finished_at=_iso(row.finished_at),
        result=row.result,
        error=row.error,
        approval=row.approval,
        step_count=len(steps),
    )
    if with_steps:
        view["steps"] = [RunStepView(**StepRecord.from_dict(s).as_dict()) for s in steps]  # type: ignore[typeddict-item]
    return view


def list_runs(ctx: AppContext, slug: str | None = None, limit: int = RUNS_SHOWN) -> list[RunView]:
    """The latest runs (of one skill, or of all), newest first, without their steps."""
    with ctx.records.session() as s:
        q = select(WorkflowRun).order_by(col(WorkflowRun.id).desc()).limit(max(1, min(limit, 500)))
        if slug is not None:
            q = q.where(WorkflowRun.skill == slug)
        return [_view(r, False) for r in s.exec(q).all()]


def get_run(ctx: AppContext, run_id: int) -> RunView:
    """One run with its steps (NotFound when there is none)."""
    with ctx.records.session() as s:
        row = s.get(WorkflowRun, run_id)
        if row is None:
            raise NotFound(f"no workflow run #{run_id} (skillpress runs lists them)")
        return _view(row, True)


class RecordedRuns:
    """A face's runs kept in the records (a RunJournal): each step saved as it ends; a new run
    of a hardened workflow (or a direct call, kept as a run of one step) takes over the newest
    run of it waiting with the same arguments."""

    def __init__(self, open_ctx: Callable[[], AppContext]) -> None:
        self._open = open_ctx

    def _with(self, do: Callable[[AppContext], Any]) -> Any:
        ctx = self._open()
        try:
            return do(ctx)
        finally:
            ctx.close()

    def begin(
        self, slug: str, version: str | None, wf: Workflow, arguments: dict[str, Any], by: str
    ) -> RunLog:
        key = arguments_key(wf.name, arguments)

        def start(ctx: AppContext) -> tuple[int, list[StepRecord]]:
            now = ctx.clock()
            with ctx.records.session() as s:
                if wf.execution in ("hardened", DIRECT):
                    waiting = s.exec(
                        select(WorkflowRun)
                        .where(WorkflowRun.skill == slug, WorkflowRun.arguments_key == key)
                        .where(WorkflowRun.status == "waiting")
                        .order_by(col(WorkflowRun.id).desc())
                    ).first()
                    if waiting is not None and waiting.id is not None:
                        claimed = s.connection().execute(
                            update(WorkflowRun)
                            .where(col(WorkflowRun.id) == waiting.id)
                            .where(col(WorkflowRun.status) == "waiting")
                            .values(status="running", updated_at=now, started_by=by[:128])
                        )
                        if claimed.rowcount == 1:
                            return waiting.id, _steps(waiting)
                row = WorkflowRun(
                    skill=slug,
                    version=version,
                    workflow=wf.name,
                    execution=wf.execution,
                    arguments_json=json.dumps(redact(arguments), ensure_ascii=False, default=str),
                    arguments_key=key,
                    status="running",
                    started_by=by[:128],
                    started_at=now,
                    updated_at=now,
                )
                s.add(row)
                s.flush()
                assert row.id is not None
                return row.id, []

        run_id, prior = self._with(start)
        return RunLog(run_id, prior, on_change=self._save)

    def _save(self, log: RunLog) -> None:
        steps = _steps_json(log)

        def save(ctx: AppContext) -> None:
            with ctx.records.session() as s:
                row = s.get(WorkflowRun, log.run_id)
                if row is not None:
                    row.steps_json, row.updated_at = steps, ctx.clock()

        self._with(save)

    def end(self, log: RunLog, status: str, result: Any = None, error: str | None = None) -> None:
        last = log.steps[-1] if log.steps else None
        steps = _steps_json(log)

        def end(ctx: AppContext) -> None:
            now = ctx.clock()
            with ctx.records.session() as s:
                row = s.get(WorkflowRun, log.run_id)
                if row is None:
                    return
                row.status, row.steps_json, row.updated_at = status, steps, now
                row.error = error
                row.approval = last.approval if status == "waiting" and last else None
                row.finished_at = None if status == "waiting" else now
                if status == "succeeded":
                    row.result_json = json.dumps(redact(result), ensure_ascii=False, default=str)

        self._with(end)
