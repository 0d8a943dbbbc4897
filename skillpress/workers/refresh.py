"""refresh: `cmd.refresh_sources` → each URL source due for a re-fetch submitted again, as the
schedule. A changed spec flows through the pipeline to a proposal and an action item; the same
bytes stop at fetch as unchanged. Nothing here publishes a version."""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.stages.fetch import due_sources
from skillpress.schemas.events import RefreshSources, SpecSubmitted
from skillpress.schemas.subjects import COMMANDS, EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "refresh"]


def refresh(ctx: AppContext, cmd: RefreshSources) -> list[Outgoing]:
    return [
        Outgoing(
            EVENTS.spec_submitted,
            SpecSubmitted(
                submission=due.submission,
                skill=due.slug,
                url=due.url,
                base_url=due.base_url,
                created_by="schedule",
            ),
            f"submitted:{due.submission}",
        )
        for due in due_sources(ctx, cmd.skill, ctx.settings.refresh_interval)
    ]


STEP = Step("refresh", COMMANDS.refresh_sources, RefreshSources, refresh)
