"""A spec coming in: the slug it will live under checked once, its preview (what the spec
already answers and what is still to ask), the message that submits it (its base URL and
credential variable checked), and its submission to the pipeline. The HTTP API, the console and
the command line read the bytes (an upload, a paste, a file, a URL) and call these; following a
submission is `submissions`' (which stands on this, never the other way).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from skillpress.app.base.context import AppContext
from skillpress.errors import Refused
from skillpress.schemas.subjects import EVENTS

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

    from skillpress.schemas.events import SpecSubmitted

__all__ = [
    "SlugInUse",
    "SpecPreview",
    "Submitted",
    "check_slug",
    "preview",
    "slug_in_use",
    "spec_submitted",
    "spec_bytes",
    "send_submission",
    "submit",
]


def check_slug(given: str | None, named: str = "slug") -> str | None:
    """`given` when it is a slug already (lowercase letters, digits, '-'), None when empty;
    Refused, with the slug it could be, otherwise (`named`: what the caller calls it)."""
    from skillpress.format.names import slugify

    if not given:
        return None
    if re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", given) and len(given) <= 64:
        return given
    slug = slugify(given)
    raise Refused(
        f"{named} {given!r} is not a slug: lowercase letters and digits, words joined by single"
        f" '-', at most 64 characters (try {slug or 'my-api'!r})"
    )


def first_check(slug: str | None, data: bytes | None, named: str = "slug") -> str:
    """The one door every face submits through, before anything is recorded: the slug (Refused,
    with the slug it could be) and, for bytes given, that they are a document derive can read
    (SpecRefused with the reason), so a refused submission is refused at once and never queued."""
    from skillpress.format.load import LoadLimits, load_document

    checked = check_slug(slug, named)
    if checked is None:
        raise Refused(f"a skill needs a {named}")
    if data is not None:
        load_document(data, LoadLimits())
    return checked


def spec_bytes(ctx: AppContext, data: bytes | None, url: str | None) -> bytes:
    """The spec's bytes: as given, or fetched from `url` through the fetch guard."""
    if data is not None:
        return data
    from skillpress.app.operator.offline import fetch_url

    assert url is not None
    return fetch_url(ctx.settings, url)


class SlugInUse(BaseModel):
    """The skill a slug already names, and what importing over it would do: a new revision of
    it, removing the operations the new spec does not have and orphaning their annotations."""

    slug: str
    title: str = Field(description="the title of the skill's newest version")
    source: str = Field(description="where its spec came from: a URL, or 'an uploaded file'")
    live_version_id: str | None
    operations: int = Field(description="operations in its newest version")
    removed: list[str] = Field(description="operations the import would remove (the first 50)")
    removed_count: int
    added_count: int
    changed_count: int = Field(
        default=0, description="operations both have whose call the import would change"
    )
    annotations: int = Field(description="annotations in force on it")
    orphaned: int = Field(description="annotations on operations the import would remove")


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
    in_use: SlugInUse | None = Field(
        default=None,
        description="the skill this slug already names: creating submits a new revision of it",
    )


def preview(
    ctx: AppContext, data: bytes | None, url: str | None, slug: str | None, base_url: str | None
) -> SpecPreview:
    """Derive the spec offline and say what it answers; its bytes are kept (as `blob`) so the
    skill is created from exactly what was previewed."""
    from skillpress.app.operator.preview import preview_spec

    given = spec_bytes(ctx, data, url)
    shown = preview_spec(given, check_slug(slug), base_url)
    return SpecPreview(
        **shown.to_dict(),
        blob=ctx.blobs.put(given),
        in_use=slug_in_use(
            ctx, shown.slug, shown.operation_names, shown.files, (given, base_url or None)
        ),
    )


def slug_in_use(
    ctx: AppContext,
    slug: str,
    names: tuple[str, ...],
    files: Mapping[str, bytes] | None = None,
    spec: tuple[bytes, str | None] | None = None,
) -> SlugInUse | None:
    """What `slug` already names, and what a spec making operations `names` (its package:
    `files`; its bytes and base URL: `spec`) would remove from it and change in it (None when
    no skill has the slug)."""
    from skillpress.app.operator.annotations import annotations_of
    from skillpress.app.records.versions import newest_manifest, skill_and_source

    found = skill_and_source(ctx, slug)
    if found is None:
        return None
    skill, source = found
    newest, manifest = newest_manifest(ctx, skill)
    had = [o.name for o in manifest.operations] if manifest is not None else []
    changed = 0
    if files and newest is not None:  # calls whose declaration the import would change
        changed = _calls_changed(ctx, skill, newest, files, spec)
    removed = sorted(set(had) - set(names))
    annotations = annotations_of(ctx, skill, manifest)  # retired ones left out
    gone = {f"operation:{n}" for n in removed}
    return SlugInUse(
        slug=slug,
        title=manifest.title if manifest is not None else skill.title,
        source=(source.fetched_from if source and source.fetched_from else "an uploaded file"),
        live_version_id=skill.live_version_id,
        operations=len(had),
        removed=removed[:50],
        removed_count=len(removed),
        added_count=len(set(names) - set(had)),
        changed_count=changed,
        annotations=len(annotations),
        orphaned=sum(1 for a in annotations if a["target"] in gone),
    )


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
    credential_env: str | None = None,
) -> Submitted:
    """Submit a spec to the pipeline over `nc` (its first check done here, so a refused
    document is refused at once) and say where to follow it. `credential_env`: the variable
    the skill's credential is read from, when not `<SLUG>_API_KEY` (kept with its source)."""
    from skillpress.app.base.bus import StackError

    checked = await asyncio.to_thread(first_check, slug, data)
    if nc is None:
        raise StackError("this server has no pipeline connection")
    return await send_submission(
        ctx, nc, checked, data, url, base_url or None, by, uuid.uuid4().hex, credential_env
    )


async def send_submission(
    ctx: AppContext,
    nc: NATS,
    checked: str,
    data: bytes | None,
    url: str | None,
    base_url: str | None,
    by: str,
    submission: str,
    credential_env: str | None = None,
) -> Submitted:
    """The one door every face's submission goes through once its first check passed (`checked`
    is the slug it gave): the spec stored, its message sent as `submission`, and where to follow
    it."""
    from skillpress.app.base.bus import send

    event = await asyncio.to_thread(
        spec_submitted, ctx, checked, data, url, base_url, by, submission, credential_env
    )
    seq = await send(nc, EVENTS.spec_submitted, event, f"submitted:{submission}")
    base = f"/v1/skills/{checked}/submissions/{submission}"
    return Submitted(
        submission=submission,
        skill=checked,
        seq=seq,
        events=f"{base}/events?after={seq}",
        status=f"/v1/submissions/{submission}",
    )


def spec_submitted(
    ctx: AppContext,
    slug: str,
    data: bytes | None,
    url: str | None,
    base_url: str | None,
    created_by: str,
    submission: str,
    credential_env: str | None = None,
) -> SpecSubmitted:
    """The message that submits a spec (its bytes stored first as a blob, or its URL to fetch);
    Refused for a base URL that is not an absolute http(s) address, or a credential variable
    that is not an environment variable's name."""
    from skillpress.app.operator.preview import check_base_url
    from skillpress.format.credentials import credential_env_refusal, default_credential_env
    from skillpress.schemas.events import SpecSubmitted

    check_base_url(base_url)
    if credential_env == default_credential_env(slug):
        credential_env = None  # the default is not a choice worth keeping
    if credential_env and (why := credential_env_refusal(credential_env, slug)) is not None:
        raise Refused(f"credential variable {why}")
    blob = ctx.blobs.put(data) if data is not None else None
    return SpecSubmitted(
        submission=submission,
        skill=slug,
        blob=blob,
        url=url,
        base_url=base_url,
        created_by=created_by,
        credential_env=credential_env or None,
    )


def _calls_changed(
    ctx: AppContext,
    skill: Any,
    newest: Any,
    files: Mapping[str, bytes],
    spec: tuple[bytes, str | None] | None,
) -> int:
    """How many calls the import would change, counted as its proposal will count them: the
    spec (`spec`: its bytes and base URL) derived again with the annotations in force, since
    the newest version carries them (without them every note and gate counted as a changed
    call: 206 where the proposal then said 14)."""
    from skillpress.app.records.derivations import annotations_in_force
    from skillpress.app.records.versions import version_files
    from skillpress.derive.diff import diff_packages

    held = annotations_in_force(ctx, skill.id, ctx.clock())
    if held and spec is not None:
        from skillpress.derive.package import derive_package
        from skillpress.derive.package_types import DeriveOptions
        from skillpress.format.errors import SpecRefused

        try:
            options = DeriveOptions(slug=skill.slug, base_url=spec[1], annotations=held)
            files = derive_package(spec[0], options).files
        except SpecRefused:
            pass  # the preview has said why already; count against what it derived
    return len(diff_packages(dict(version_files(ctx.blobs, newest)), dict(files))["changed"])
