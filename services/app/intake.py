"""A spec coming in: the slug it will live under checked once, its preview (what the spec
already answers and what is still to ask), and its submission to the pipeline. The HTTP API,
the console and the command line read the bytes (an upload, a paste, a file, a URL) and call
these.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from skillpress.schemas.subjects import EVENTS
from skillpress.services.app.context import AppContext
from skillpress.services.errors import Refused

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

__all__ = ["SpecPreview", "Submitted", "check_slug", "preview", "spec_bytes", "submit"]


def check_slug(given: str | None, named: str = "slug") -> str | None:
    """`given` when it is a slug already (lowercase letters, digits, '-'), None when empty;
    Refused, with the slug it could be, otherwise (`named`: what the caller calls it)."""
    from skillpress.services.derive.naming import slugify

    if not given:
        return None
    slug = slugify(given)
    if not slug or slug != given:
        raise Refused(
            f"{named} {given!r}: a slug is lowercase letters, digits and '-'"
            f" (try {slug or 'my-api'!r})"
        )
    return slug


def spec_bytes(ctx: AppContext, data: bytes | None, url: str | None) -> bytes:
    """The spec's bytes: as given, or fetched from `url` through the fetch guard."""
    if data is not None:
        return data
    from skillpress.services.app.offline import fetch_url

    assert url is not None
    return fetch_url(ctx.settings, url)


class SpecPreview(BaseModel):
    """What a spec already answers, and what is still to ask; nothing stored but its bytes."""

    title: str
    slug: str
    description: str
    base_url: str | None
    base_url_question: str | None = Field(
        description="asked when the spec names no absolute server"
    )
    auth_header: str | None
    auth_kind: str | None
    credential_env: str = Field(description="the environment variable the credential goes in")
    credential_holds: str = Field(
        description="what that variable holds and how it is sent ('' when the spec declares no credential)"
    )
    operations_needing_auth: int
    operations_unservable: int = Field(description="operations needing auth a header cannot serve")
    unservable_kinds: list[str]
    hosts: list[str]
    operations: int
    tools: int
    categories: int
    body: str = Field(description="the body exactly as agents will carry it")
    body_bytes: int
    warnings: list[str]
    blob: str | None = Field(description="pass as `blob` to create the skill from the same bytes")


def preview(
    ctx: AppContext, data: bytes | None, url: str | None, slug: str | None, base_url: str | None
) -> SpecPreview:
    """Derive the spec offline and say what it answers; its bytes are kept (as `blob`) so the
    skill is created from exactly what was previewed."""
    from skillpress.services.app.preview import preview_spec

    given = spec_bytes(ctx, data, url)
    shown = preview_spec(given, check_slug(slug), base_url)
    return SpecPreview(**shown.to_dict(), blob=ctx.blobs.put(given))


class Submitted(BaseModel):
    """A submission on its way: where to follow it."""

    submission: str
    skill: str
    seq: int = Field(description="the stream sequence of the submission: replay events from it")
    events: str = Field(description="the submission's stages as Server-Sent Events")
    status: str


async def submit(
    ctx: AppContext,
    nc: NATS | None,
    slug: str,
    data: bytes | None,
    url: str | None,
    base_url: str | None,
    by: str,
) -> Submitted:
    """Submit a spec to the pipeline over `nc` (its first check done here, so a refused
    document is refused at once) and say where to follow it."""
    from skillpress.services.app.pipeline import StackError, send, spec_submitted
    from skillpress.services.derive.load import LoadLimits, load_document

    checked = check_slug(slug)
    if checked is None:
        raise Refused("a skill needs a slug")
    if data is not None:
        await asyncio.to_thread(load_document, data, LoadLimits())
    submission = uuid.uuid4().hex
    event = await asyncio.to_thread(
        spec_submitted, ctx, checked, data, url, base_url or None, by, submission
    )
    if nc is None:
        raise StackError("this server has no pipeline connection")
    seq = await send(nc, EVENTS.spec_submitted, event, f"submitted:{submission}")
    base = f"/v1/skills/{checked}/submissions/{submission}"
    return Submitted(
        submission=submission,
        skill=checked,
        seq=seq,
        events=f"{base}/events?after={seq}",
        status=f"/v1/submissions/{submission}",
    )
