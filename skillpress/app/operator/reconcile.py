"""The two copies of "live" made one again (#44.3): the records are the source of truth, and the
NATS bucket runtimes follow (`SKILLPRESS_LIVE`) is repaired to say what they say. After NATS is
restored from an older backup (or lost), a pointer may be missing, stale, or name a skill the
records no longer have live; `skillpress reconcile` (and every `serve` as it starts) finds each
and rewrites or removes it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from skillpress.app.base.context import AppContext
from skillpress.app.records.live import live_versions
from skillpress.schemas.events import LiveVersion

__all__ = ["Disagreement", "disagreements", "reconcile", "reconcile_live", "said"]


@dataclass(frozen=True)
class Disagreement:
    """A skill whose pointer in NATS is not what the records say is live."""

    slug: str
    pointer: str | None  # the version NATS names (None: no pointer; "?" one that cannot be read)
    records: LiveVersion | None  # what the records say is live (None: nothing is)


def disagreements(
    truth: list[LiveVersion], pointers: Mapping[str, bytes | None]
) -> list[Disagreement]:
    """Each skill whose pointer differs from the records' live version, by slug (pure)."""
    by_slug = {live.skill: live for live in truth}
    out: list[Disagreement] = []
    for slug in sorted(set(by_slug) | set(pointers)):
        want = by_slug.get(slug)
        raw = pointers.get(slug)
        try:
            have = LiveVersion.model_validate_json(raw) if raw else None
        except ValueError:
            out.append(Disagreement(slug, "?", want))
            continue
        if _essence(have) != _essence(want):
            out.append(Disagreement(slug, have.version_id if have else None, want))
    return out


def _essence(live: LiveVersion | None) -> tuple[str, dict[str, str], list[str]] | None:
    """What a runtime loads by: the version, its files, its hosts (the credential header's
    name is read from the version's own manifest, and is the same when these are)."""
    return None if live is None else (live.version_id, live.files, live.hosts)


def _with_header(ctx: AppContext, live: LiveVersion) -> LiveVersion:
    """The pointer as the publish stage writes it: with the credential header's name."""
    from skillpress.format.manifest import Manifest

    if "skill.json" not in live.files:
        return live
    header = Manifest.from_json(ctx.blobs.get(live.files["skill.json"])).auth.header
    return live.model_copy(update={"auth_header": header})


def said(d: Disagreement, repaired: bool) -> str:
    """One disagreement in words, as found or as repaired."""
    was = "no live pointer" if d.pointer is None else f"a pointer to {d.pointer[:12]}"
    if d.records is None:
        return f"{d.slug}: NATS had {was}, and the records say nothing is live" + (
            ": removed" if repaired else ""
        )
    now = d.records.version_id[:12]
    return f"{d.slug}: NATS had {was}, the records say {now} is live" + (
        f": pointer written ({now})" if repaired else ""
    )


async def reconcile_live(ctx: AppContext, nc: object, repair: bool) -> list[Disagreement]:
    """The disagreements between the records and the live bucket on `nc` (a connected nats-py
    client), each repaired when `repair`: the pointer written from the records, or removed."""
    from skillpress.platform.broker import LIVE_BUCKET, live_pointers

    kv = await nc.jetstream().key_value(LIVE_BUCKET)  # type: ignore[attr-defined]
    pointers: dict[str, bytes | None] = dict(await live_pointers(nc))  # type: ignore[arg-type]
    truth = await asyncio.to_thread(live_versions, ctx)
    found = disagreements(truth, pointers)
    if repair:
        for d in found:
            if d.records is None:
                await kv.delete(d.slug)
            else:
                pointer = await asyncio.to_thread(_with_header, ctx, d.records)
                await kv.put(d.slug, pointer.model_dump_json().encode())
    return found


async def reconcile(ctx: AppContext, nats_url: str | None, repair: bool) -> list[Disagreement]:
    """`reconcile_live` on `nats_url`; with none (no NATS configured, no `up` running), on this
    home's embedded NATS started for the duration (its store holds the bucket)."""
    from skillpress.platform.broker import connect, ensure_stream, nats_options

    server = None
    if nats_url is None:
        from skillpress.platform.embedded_nats import NatsServer

        server = NatsServer(ctx.settings.nats_dir).start()
        nats_url = server.url
    try:
        nc = await connect(
            nats_url, name="skillpress-reconcile", options=nats_options(ctx.settings, nats_url)
        )
        try:
            await ensure_stream(nc, ctx.settings.stream_replicas)
            return await reconcile_live(ctx, nc, repair)
        finally:
            await nc.close()
    finally:
        if server is not None:
            server.stop()
