"""The JSON API under /v1: each route parses its input, calls one use-case of the application
layer and returns what it gives (the CLI calls the same ones). People's additions and the review
are `annotation_routes`, the approvals, tokens and runs a runtime reaches `approvals_routes`,
action items and dead letters `operations_routes`; the OpenAPI document is generated from the
four routers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse
from fastapi.routing import APIRoute

from skillpress.api.deps import (
    Ctx,
    Operator,
    Reader,
    SpecInput,
    read_spec_input,
    state,
)
from skillpress.api.problems import PROBLEM_RESPONSES
from skillpress.app.base.context import AppContext
from skillpress.app.base.views import (
    Detached,
    Overlay,
    SkillView,
    SubmissionView,
    VersionDiff,
    VersionRow,
    VersionView,
)
from skillpress.app.operator.intake import SpecPreview, Submitted
from skillpress.schemas.events import LiveVersion

__all__ = ["router", "submission_stream", "submit", "with_summaries"]

router = APIRouter(prefix="/v1", responses=PROBLEM_RESPONSES)


# the same fields without the upload, so a client that cannot send multipart (an agent calling
# through skillpress's own skill) pastes the spec or names its URL
def _paste_form(required: list[str]) -> dict[str, Any]:
    return {
        "requestBody": {
            "content": {
                "application/x-www-form-urlencoded": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "string",
                                "description": "the OpenAPI document, pasted",
                            },
                            "url": {
                                "type": "string",
                                "description": "an http(s) URL to fetch it from",
                            },
                            "blob": {
                                "type": "string",
                                "description": "the `blob` a preview returned",
                            },
                            "slug": {"type": "string", "description": "the skill's slug"},
                            "base_url": {
                                "type": "string",
                                "description": "where the API lives, when the spec does not say",
                            },
                        },
                        "required": required,
                    }
                }
            }
        }
    }


def _bytes(description: str, media: str) -> dict[int | str, dict[str, Any]]:
    """The success answer of an operation that returns a file: its media type, as bytes."""
    binary = {"schema": {"type": "string", "format": "binary"}}
    return {200: {"description": description, "content": {media: binary}}}


SpecFile = Annotated[UploadFile | None, File(description="the OpenAPI document, uploaded")]
SpecText = Annotated[str | None, Form(description="the OpenAPI document, pasted")]
SpecUrl = Annotated[str | None, Form(description="an http(s) URL to fetch it from")]
SpecBlob = Annotated[str | None, Form(description="the `blob` a preview returned")]
SlugForm = Annotated[str | None, Form(description="the skill's slug (default: from the title)")]
BaseUrlForm = Annotated[
    str | None, Form(description="where the API lives, when the spec does not say")
]


async def preview(
    ctx: AppContext, spec: SpecInput, slug: str | None, base_url: str | None
) -> SpecPreview:
    from skillpress.app.operator.intake import preview as previewed

    return await run_in_threadpool(previewed, ctx, spec.data, spec.url, slug, base_url)


@router.post(
    "/skills/preview",
    name="preview_skill",
    response_model=SpecPreview,
    tags=["skills"],
    openapi_extra=_paste_form([]),
)
async def preview_skill(
    ctx: Ctx,
    who: Operator,
    file: SpecFile = None,
    spec: SpecText = None,
    url: SpecUrl = None,
    blob: SpecBlob = None,
    slug: SlugForm = None,
    base_url: BaseUrlForm = None,
) -> SpecPreview:
    """What the spec already answers, and what is still to ask; nothing is stored but its bytes."""
    return await preview(ctx, await read_spec_input(ctx, file, spec, url, blob), slug, base_url)


async def submit(
    request: Request,
    spec: SpecInput,
    slug: str,
    base_url: str | None,
    who: str,
    credential_env: str | None = None,
) -> Submitted:
    """Submit a spec to the pipeline and return where to follow it."""
    from skillpress.app.operator.intake import submit as submitted

    shared = state(request)
    return await submitted(
        shared.ctx, shared.nc, slug, spec.data, spec.url, base_url, who, credential_env
    )


@router.post(
    "/skills",
    name="create_skill",
    status_code=202,
    response_model=Submitted,
    tags=["skills"],
    openapi_extra=_paste_form(["slug"]),
)
async def create_skill(
    request: Request,
    ctx: Ctx,
    who: Operator,
    slug: Annotated[str, Form(description="the skill's slug")],
    file: SpecFile = None,
    spec: SpecText = None,
    url: SpecUrl = None,
    blob: SpecBlob = None,
    base_url: BaseUrlForm = None,
    credential_env: Annotated[
        str | None,
        Form(
            description="the environment variable the skill's credential is read from, when not <SLUG>_API_KEY (a name, kept with the skill)"
        ),
    ] = None,
) -> Submitted:
    """Create = submit: the spec goes through the pipeline to a proposed version."""
    given = await read_spec_input(ctx, file, spec, url, blob)
    return await submit(request, given, slug, base_url, who, credential_env or None)


@router.get("/skills", name="list_skills", tags=["skills"])
def list_skills(
    ctx: Ctx,
    who: Operator,
    response: Response,
    after: Annotated[
        str | None, Query(max_length=64, description="the last slug of the page before")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="skills a page lists")] = 100,
    q: Annotated[
        str, Query(max_length=100, description="a part of a skill's slug or title (any case)")
    ] = "",
) -> list[SkillView]:
    """The skills by slug, a page at a time: each with its live version, proposals waiting and
    open action items. A `Link` header names the next page (`rel="next"`); without it this is
    the last. `X-Total-Count` counts every skill (a search's pages count only what it finds)."""
    from urllib.parse import urlencode

    from skillpress.app.records.skill_list import skills_count, skills_page

    page, next_after = skills_page(ctx, after, limit, q.strip())
    if next_after is not None:
        query = urlencode({"after": next_after, "limit": limit} | ({"q": q} if q else {}))
        response.headers["Link"] = f'</v1/skills?{query}>; rel="next"'
    response.headers["X-Total-Count"] = str(skills_count(ctx))
    return page


@router.get("/skills/{slug}", name="get_skill", tags=["skills"])
def get_skill(ctx: Ctx, who: Operator, slug: str) -> SkillView:
    """One skill: its live version, proposals waiting, open action items (404: no such skill)."""
    from skillpress.app.records.overview import skill_overview

    return skill_overview(ctx, slug)


@router.get("/submissions/{submission}", name="get_submission", tags=["pipeline"])
def submission_status(ctx: Ctx, who: Operator, submission: str) -> SubmissionView:
    """Where a submission is, stage by stage, from the records."""
    from skillpress.app.records.overview import submission_status as status

    return status(ctx, submission)


async def submission_stream(
    request: Request, slug: str, submission: str, after: int | None
) -> AsyncIterator[str]:
    """Server-Sent Events: `stage` per event (its words and body), `end` with the outcome (a
    dead letter included: its words say what a person does next)."""
    from skillpress.app.operator.submissions import Stopped, describe_event, submission_events

    st = state(request)
    yield "retry: 2000\n\n"
    events = submission_events(st.nc, st.ctx, slug, submission, after)
    async with contextlib.aclosing(events) as stages:
        async for item in stages:
            if item is None:
                yield ": waiting\n\n"
                if await request.is_disconnected():
                    return
                continue
            if isinstance(item, Stopped):
                said = {
                    "subject": "dead_lettered",
                    "text": item.text,
                    "next": None,
                    "body": {"dead_letter": item.dead_letter},
                }
                yield f"event: end\ndata: {json.dumps(said)}\n\n"
                return
            subject, body = item.subject, item.body
            text, awaiting = describe_event(item)
            if text == subject:
                text = subject.split(".", 1)[-1].replace(".", " ")  # spec submitted
            data = json.dumps({"subject": subject, "text": text, "next": awaiting, "body": body})
            name = (
                "end"
                if subject.rsplit(".", 1)[-1] in ("proposed", "rejected", "unchanged")
                else "stage"
            )
            yield f"event: {name}\ndata: {data}\n\n"


@router.get(
    "/skills/{slug}/submissions/{submission}/events",
    name="follow_submission",
    tags=["pipeline"],
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {
                "text/event-stream": {
                    "schema": {
                        "type": "string",
                        "description": "Server-Sent Events: `event: stage` for each pipeline"
                        " stage and `event: end` for the outcome (proposed, rejected,"
                        " unchanged, or dead_lettered: `text` says what stopped it and what to"
                        " do), each `data:` a JSON object {subject, text, next, body}"
                        " (the stage's subject, its words, what it waits for next, its"
                        " message); `: waiting` comments while nothing happens.",
                    }
                }
            }
        }
    },
)
async def submission_events_stream(
    request: Request,
    who: Operator,
    slug: str,
    submission: str,
    after: Annotated[
        int | None, Query(ge=1, description="replay from this stream sequence")
    ] = None,
) -> StreamingResponse:
    """A submission's stages as they happen (replayed from `after`), ending with its outcome."""
    if state(request).nc is None:
        from skillpress.app.base.bus import StackError

        raise StackError("this server has no pipeline connection")
    from skillpress.app.operator.submissions import submission_known

    await submission_known(state(request).nc, state(request).ctx, submission, after)
    return StreamingResponse(
        submission_stream(request, slug, submission, after),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.get("/skills/{slug}/versions", name="list_versions", tags=["versions"])
def versions(ctx: Ctx, who: Operator, slug: str) -> list[VersionRow]:
    """The skill's versions, newest first."""
    from skillpress.app.records.versions import list_versions

    return list_versions(ctx, slug)


@router.get(
    "/live",
    name="list_live_versions",
    tags=["versions"],
    response_model=list[LiveVersion],
    responses={304: {"description": "nothing changed since the look that gave this ETag"}},
)
async def live(
    request: Request,
    ctx: Ctx,
    who: Reader,
    skill: Annotated[
        list[str] | None,
        Query(description="only these skills (repeat it: ?skill=a&skill=b); every one if none"),
    ] = None,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=60,
            description="with If-None-Match: hold the look open up to this many seconds until"
            " something changes (answered 200 at once then), else 304 when they pass",
        ),
    ] = 0,
) -> Any:
    """Every skill's live version (or the named ones'): its id, each file's sha256, its hosts
    (what followers keep; a runtime's token reads it). Answered with an `ETag` of the live set;
    a look that sends it back in `If-None-Match` is answered 304 with no body while nothing
    changed, at the cost of one read of one row whatever the size of the registry (of the named
    skills' rows when named), or held open up to `wait` seconds and answered as soon as
    something changes. The whole set's answer is made once per change and held."""
    from skillpress.app.serving.live_answer import look_answer, look_tag, until_changed

    tag = await run_in_threadpool(look_tag, ctx, skill)
    asked = request.headers.get("if-none-match")
    if asked == f'"{tag}"' and wait > 0:
        await until_changed(ctx, skill, tag, wait, request.scope.get("skillpress.stopping"))
        tag = await run_in_threadpool(look_tag, ctx, skill)
    headers = {"ETag": f'"{tag}"', "Cache-Control": "no-cache", "Vary": "Accept-Encoding"}
    if asked == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    answer = await run_in_threadpool(look_answer, ctx, skill, tag)
    headers["ETag"] = f'"{answer.tag}"'
    # the first catch-up of a registry is every skill's every digest (33.7 MB at 10,000 skills),
    # held compressed: sent so to a client that takes it, else decompressed as it is sent
    if not answer.gzipped:
        return Response(answer.data, media_type="application/json", headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(answer.data, media_type="application/json", headers=headers)
    return StreamingResponse(answer.chunks(), media_type="application/json", headers=headers)


@router.get("/skills/{slug}/versions/{ref}", name="get_version", tags=["versions"])
def version(ctx: Ctx, who: Reader, slug: str, ref: str) -> VersionView:
    """One version's id, files by sha256, hosts, status and whether it is live (`ref`: an id or
    prefix, `live`, `newest`, or `current`: the live one, else the newest; a runtime's token
    reads published versions only)."""
    from skillpress.app.records.versions import version_view

    return version_view(ctx, slug, ref, not who.operator)


def _files(ctx: AppContext, slug: str, ref: str, published_only: bool) -> dict[str, bytes]:
    from skillpress.app.records.versions import resolve_version, version_files

    return version_files(ctx.blobs, resolve_version(ctx, slug, ref, published_only)[1])


@router.get("/skills/{slug}/versions/{ref}/files", name="list_version_files", tags=["versions"])
def version_file_list(ctx: Ctx, who: Reader, slug: str, ref: str) -> dict[str, int]:
    """A version's files and their sizes (`ref`: a version id or prefix, `live` or `newest`)."""
    files = _files(ctx, slug, ref, not who.operator)
    return {path: len(data) for path, data in sorted(files.items())}


@router.get(
    "/skills/{slug}/versions/{ref}/files/{path:path}",
    name="get_version_file",
    tags=["versions"],
    response_class=Response,
    responses={
        200: {
            "description": "the file's bytes: Markdown (text/markdown) or JSON",
            "content": {
                "text/markdown": {"schema": {"type": "string"}},
                "application/json": {
                    "schema": {
                        "type": "object",
                        "description": "skill.json, index.json, types.json",
                    }
                },
            },
        }
    },
)
def version_file(ctx: Ctx, who: Reader, slug: str, ref: str, path: str) -> Response:
    """One file of a version, as stored (read alone, by its digest)."""
    from skillpress.app.records.versions import version_file as one_file

    kind = "application/json" if path.endswith(".json") else "text/markdown; charset=utf-8"
    return Response(one_file(ctx, slug, ref, path, not who.operator), media_type=kind)


@router.get(
    "/skills/{slug}/versions/{ref}/archive",
    name="get_version_archive",
    tags=["versions"],
    response_class=Response,
    responses=_bytes("every file of the version in one tar.gz, as stored", "application/gzip"),
)
def version_archive(ctx: Ctx, who: Reader, slug: str, ref: str) -> Response:
    """Every file of a version in one gzip-compressed tar (what a follower fetches: check each
    file against the sha256 `/v1/live` names for it before using it)."""
    from skillpress.app.records.versions import version_archive as archive

    version_id, data = archive(ctx, slug, ref, not who.operator)
    return Response(
        data,
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{slug}@{version_id[:16]}.tar.gz"'},
    )


@router.get("/skills/{slug}/diff", name="diff_versions", tags=["versions"])
def diff(
    ctx: Ctx,
    who: Operator,
    slug: str,
    from_: Annotated[str | None, Query(alias="from", description="default: live")] = None,
    to: Annotated[str | None, Query(description="default: newest")] = None,
) -> VersionDiff:
    """What changed between two versions, with the annotations the newer one orphans."""
    from skillpress.app.records.versions import diff_versions

    return diff_versions(ctx, slug, from_, to)


@router.post("/skills/{slug}/detach", name="detach_skill", tags=["skills"])
def detach(ctx: Ctx, who: Operator, slug: str) -> Detached:
    """From now on the skill is an ordinary package: new revisions propose nothing."""
    from skillpress.app.operator.annotations import detach as detached

    detached(ctx, slug)
    return {"skill": slug, "detached": True}


@router.get("/skills/{slug}/export/overlay", name="export_overlay", tags=["exports"])
def export_overlay(ctx: Ctx, who: Operator, slug: str) -> Overlay:
    """The annotations as an OpenAPI Overlay 1.0 document."""
    from skillpress.app.operator.exports import overlay

    return overlay(ctx, slug)


@router.get(
    "/skills/{slug}/export/agent-skills",
    name="export_agent_skills",
    tags=["exports"],
    response_class=Response,
    responses=_bytes(
        "the Agent Skills folder (SKILL.md, tools.json, references/), zipped", "application/zip"
    ),
)
def export_agent_skills(ctx: Ctx, who: Operator, slug: str) -> Response:
    """The live version as an Agent Skills folder, zipped."""
    from skillpress.app.operator.exports import agent_skills_zip

    return Response(
        agent_skills_zip(ctx, slug),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{slug}-agent-skill.zip"'},
    )


def with_summaries(router: APIRouter) -> None:
    """Each operation's summary: its docstring's first line."""
    for route in router.routes:
        if isinstance(route, APIRoute) and route.description and not route.summary:
            route.summary = route.description.strip().splitlines()[0].rstrip(".")


with_summaries(router)
