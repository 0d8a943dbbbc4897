"""Several skills' newest proposals published in one request (`skillpress publish
--all-proposed`, `POST /v1/publications`): each checked as a single publish is, each refusal
kept with its reason, the commands sent over one connection and their publications followed
together. An operator who imported a directory published 657 versions one call at a time."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from skillpress.app.base.bus import Pipeline, follow, send, with_pipeline
from skillpress.app.base.context import AppContext
from skillpress.app.base.views import ManyPublished, PublishedBrief, PublishRefusal
from skillpress.app.operator.dispatch import publish_command
from skillpress.errors import Permanent
from skillpress.schemas.subjects import COMMANDS, EVENTS

__all__ = ["publish_proposed"]

# what one request publishes at most (a registry publishes in several; the command line does)
MAX_PUBLISHED = 500


def publish_proposed(
    ctx: AppContext,
    slugs: list[str] | None,
    remove_gates: bool,
    timeout: float,
    by: str,
    progress: Callable[[int, int], None] | None = None,
) -> ManyPublished:
    """The newest waiting proposal of every skill (or of those `slugs` name) made live, each
    checked first as a single publish is (a refusal listed with its reason, the others still
    published); `timeout` seconds without a publication ends the wait, and what was not
    published by then is listed as refused with why. `progress(done, total)` as each lands."""
    from skillpress.app.records.publish_check import check_publish_request
    from skillpress.app.records.skill_list import waiting_proposals

    if slugs is not None and len(slugs) > MAX_PUBLISHED:
        raise Permanent(f"at most {MAX_PUBLISHED} skills in one publish; {len(slugs)} named")
    found, unknown = waiting_proposals(ctx, slugs)
    refused: list[PublishRefusal] = [
        {"skill": slug, "version_id": None, "reason": f"no skill {slug!r}"} for slug in unknown
    ]
    if slugs is not None:
        have = {slug for slug, _ in found}
        refused += [
            {"skill": slug, "version_id": None, "reason": "no proposal waits to be published"}
            for slug in sorted(set(slugs) - have - set(unknown))
        ]
    checked: list[tuple[str, str]] = []
    for slug, version_id in found[:MAX_PUBLISHED]:
        try:
            checked.append((slug, check_publish_request(ctx, slug, version_id, remove_gates)))
        except Permanent as exc:
            refused.append({"skill": slug, "version_id": version_id, "reason": str(exc)})
    published = _published(ctx, checked, remove_gates, timeout, by, progress)
    landed = {p["version_id"] for p in published}
    for slug, version_id in checked:
        if version_id not in landed:
            reason = f"no publication within {timeout:g} s of the last (see skillpress status)"
            refused.append({"skill": slug, "version_id": version_id, "reason": reason})
    return {
        "published": sorted(published, key=lambda p: p["skill"]),
        "refused": sorted(refused, key=lambda r: r["skill"]),
    }


def _published(
    ctx: AppContext,
    checked: list[tuple[str, str]],
    remove_gates: bool,
    timeout: float,
    by: str,
    progress: Callable[[int, int], None] | None,
) -> list[PublishedBrief]:
    """Every checked version's publish command sent over one connection, then the stream
    followed from the first until each is published (or `timeout` seconds pass without one)."""
    from skillpress.schemas.events import VersionPublished

    if not checked:
        return []
    wanted = {version_id: slug for slug, version_id in checked}

    async def work(pipeline: Pipeline) -> list[PublishedBrief]:
        out: list[PublishedBrief] = []
        async with pipeline.connection() as nc:
            first = None
            for slug, version_id in checked:
                command, msg_id = publish_command(slug, version_id, remove_gates, by)
                seq = await send(nc, COMMANDS.publish_version, command, msg_id)
                first = seq if first is None else first
            await pipeline.say_if_nobody_takes(nc, COMMANDS.publish_version, timeout)
            deadline = time.monotonic() + timeout
            async with contextlib.aclosing(follow(nc, first, min(3.0, timeout))) as events:
                async for event in events:
                    message = event.message if event is not None else None
                    if (
                        event is not None
                        and event.subject == EVENTS.version_published
                        and isinstance(message, VersionPublished)
                        and wanted.pop(message.version_id, None) is not None
                    ):
                        out.append(
                            {
                                "skill": message.skill,
                                "version_id": message.version_id,
                                "previous_version_id": message.previous_version_id,
                                "already_live": message.already_live,
                            }
                        )
                        deadline = time.monotonic() + timeout  # a publication: wait on
                        if progress is not None:
                            progress(len(out), len(checked))
                    if not wanted or time.monotonic() > deadline:
                        break
        return out

    return with_pipeline(ctx, work)
