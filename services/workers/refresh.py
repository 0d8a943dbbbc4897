"""refresh: `cmd.refresh_sources` → each URL source due for a re-fetch submitted again, as the
schedule. A changed spec flows through the pipeline to a proposal and an action item; the same
bytes stop at fetch as unchanged. Nothing here publishes a version."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import col, select

from schemas.events import RefreshSources, SpecSubmitted
from schemas.records import Skill, Source
from schemas.subjects import COMMANDS, EVENTS
from services.app.context import AppContext
from services.platform.ids import derived_id
from services.workers.delivery import Outgoing, Step

__all__ = ["STEP", "refresh"]


def refresh(ctx: AppContext, cmd: RefreshSources) -> list[Outgoing]:
    now = datetime.now(UTC)
    due_before = now - timedelta(seconds=max(ctx.settings.refresh_interval, 0.0) * 0.9)
    out: list[Outgoing] = []
    with ctx.records.session() as s:
        query = select(Source, Skill).where(
            Source.skill_id == Skill.id, Source.kind == "url", col(Source.fetched_from).is_not(None)
        )
        if cmd.skill:
            query = query.where(Skill.slug == cmd.skill)
        for source, skill in s.exec(query).all():
            checked = source.last_checked_at
            if checked is not None and checked.tzinfo is None:
                checked = checked.replace(tzinfo=UTC)
            if cmd.skill is None and checked is not None and checked > due_before:
                continue
            source.last_checked_at = now
            submission = derived_id("refresh", source.id, now.isoformat())
            out.append(
                Outgoing(
                    EVENTS["spec_submitted"],
                    SpecSubmitted(
                        submission=submission,
                        skill=skill.slug,
                        url=source.fetched_from,
                        base_url=source.base_url,
                        created_by="schedule",
                    ),
                    f"submitted:{submission}",
                )
            )
    return out


STEP = Step("refresh", COMMANDS["refresh_sources"], RefreshSources, refresh)
