"""What an operator asks of the pipeline and waits for: a version published, dead letters sent
again, a changed annotation's proposal, the scheduled refresh asked for now.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from skillpress.app.base.bus import Event, Pipeline, send, send_and_follow, with_pipeline
from skillpress.app.base.context import AppContext
from skillpress.app.base.views import PublicationView, Replayed
from skillpress.schemas.subjects import COMMANDS, EVENTS

if TYPE_CHECKING:
    from skillpress.schemas.events import PublishVersion

__all__ = [
    "propose_change",
    "publish_command",
    "replay_dead_letters",
    "request_publish",
    "request_refresh",
]


def publish_command(
    slug: str, version_id: str, remove_gates: bool, requested_by: str
) -> tuple[PublishVersion, str]:
    """The command that publishes `version_id`, and its message id: each request its own (the
    answer names it), so a second publish of a version already live is answered too."""
    from skillpress.schemas.events import PublishVersion

    request = uuid.uuid4().hex
    command = PublishVersion(
        skill=slug,
        version_id=version_id,
        remove_gates=remove_gates,
        requested_by=requested_by,
        request=request,
    )
    return command, f"publish:{version_id}:{request}"


def request_publish(
    ctx: AppContext,
    slug: str,
    version_id: str,
    remove_gates: bool,
    timeout: float,
    requested_by: str = "cli",
) -> PublicationView:
    """Send the publish command and wait for its `version.published`: the publication it says."""
    from skillpress.schemas.events import VersionPublished

    command, msg_id = publish_command(slug, version_id, remove_gates, requested_by)

    async def work(pipeline: Pipeline) -> list[Event]:
        return await send_and_follow(
            pipeline,
            COMMANDS.publish_version,
            command,
            msg_id,
            lambda e: (
                e.subject == EVENTS.version_published
                and getattr(e.message, "version_id", None) == version_id
            ),
            timeout,
        )

    done = with_pipeline(ctx, work)[-1].message
    assert isinstance(done, VersionPublished)  # what the wait above ends on
    return PublicationView(
        version_id=done.version_id,
        skill=done.skill,
        files=dict(done.files),
        hosts=list(done.hosts),
        auth_header=done.auth_header,
        previous_version_id=done.previous_version_id,
        already_live=done.already_live,
    )


def replay_dead_letters(ctx: AppContext, ids: list[int] | None) -> list[Replayed]:
    """Re-publish dead letters' original messages (those numbered `ids`, or every one not yet
    replayed) under fresh message ids, and record when and as what; NotFound for an unknown id."""
    from skillpress.app.records.dead_letters import letters_to_replay, mark_replayed
    from skillpress.errors import NotFound
    from skillpress.schemas.subjects import STREAM

    rows = letters_to_replay(ctx, ids)
    missing = sorted(set(ids or []) - {r.id for r in rows if r.id is not None})
    if missing:
        raise NotFound(f"no dead letter #{missing[0]} (skillpress dead-letters lists them)")

    async def work(pipeline: Pipeline) -> list[str]:
        async with pipeline.connection() as nc:
            js = nc.jetstream()
            sent = []
            for row in rows:
                msg_id = f"replay:{row.id}:{uuid.uuid4().hex}"
                await js.publish(
                    row.subject,
                    row.payload.encode(),
                    headers={"Nats-Msg-Id": msg_id},
                    stream=STREAM,
                )
                sent.append(msg_id)
            return sent

    sent = with_pipeline(ctx, work) if rows else []
    mark_replayed(ctx, [(int(r.id or 0), m) for r, m in zip(rows, sent, strict=True)], ctx.clock())
    return [
        {"id": row.id, "subject": row.subject, "replayed_as": msg_id}
        for row, msg_id in zip(rows, sent, strict=True)
    ]


def propose_change(
    ctx: AppContext, slug: str, ids: list[str], change: str, as_of: datetime, timeout: float
) -> Event:
    """Announce changed annotations and wait for the version they propose (or the refusal)."""
    from skillpress.schemas.events import AnnotationChanged

    submission = uuid.uuid4().hex
    event = AnnotationChanged(
        skill=slug,
        annotation_ids=ids,
        change=change,
        as_of=as_of.isoformat(),
        submission=submission,
    )
    endings = (EVENTS.version_proposed, EVENTS.revision_rejected)

    async def work(pipeline: Pipeline) -> list[Event]:
        return await send_and_follow(
            pipeline,
            EVENTS.annotation_changed,
            event,
            f"annotation:{submission}",
            lambda e: e.submission == submission and e.subject in endings,
            timeout,
        )

    return with_pipeline(ctx, work)[-1]


def request_refresh(ctx: AppContext, interval: float | None = None) -> str:
    """Ask the refresh worker to re-fetch the URL sources that are due, once per slot of
    `interval` seconds (default: the refresh interval) however many schedulers ask: the message
    id names the slot. Returns that id."""
    import time

    from skillpress.schemas.events import RefreshSources

    every = interval or ctx.settings.refresh_interval or 3600.0
    msg_id = f"refresh-slot:{int(time.time() // every)}"

    async def work(pipeline: Pipeline) -> None:
        async with pipeline.connection() as nc:
            await send(nc, COMMANDS.refresh_sources, RefreshSources(), msg_id)

    with_pipeline(ctx, work)
    return msg_id
