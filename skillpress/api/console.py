"""The operator console: server-rendered pages over the same use-cases as the API and the CLI:
signing in, the skills, an import and its submission, a skill's page with its annotations and
publishing. Every form carries a CSRF token; a refusal comes back on the page it was made from,
in words (`console_kit`, shared with `console_operations`: the review and the operations page)."""

from __future__ import annotations

import asyncio
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from skillpress.api.auth import SESSION_COOKIE
from skillpress.api.console_kit import (
    act,
    back,
    checked,
    operator_of,
    proposed,
    render,
)
from skillpress.api.deps import read_spec_input, state
from skillpress.api.skill_page import changes_view, skill_view
from skillpress.app.operator import changes, intake
from skillpress.app.records.runs import get_run
from skillpress.errors import NotFound, Permanent, Refused, Retryable

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


# --- signing in ---------------------------------------------------------------------------


def _signed_in(request: Request, name: str, next_url: str) -> RedirectResponse:
    target = next_url if next_url.startswith("/") and not next_url.startswith("//") else "/skills"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        state(request).operators.session(name),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_page(request: Request, token: str = "", next: str = "/skills") -> Response:
    if token:  # from the address bar to a cookie at once: the token never stays in view
        name = state(request).operators.who(token)
        if name is not None:
            return _signed_in(request, name, next)
        return back(request, "/sign-in", error=_not_signed_in(request, token), next=next)
    return render(request, "sign_in.html", next=next)


@router.post("/sign-in", response_class=HTMLResponse)
def sign_in(
    request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/skills"
) -> Response:
    name = state(request).operators.who(token.strip())
    if name is None:
        error = _not_signed_in(request, token.strip())
        return render(request, "sign_in.html", 401, next=next, error=error)
    return _signed_in(request, name, next)


def _not_signed_in(request: Request, token: str) -> str:
    """Why a token does not open the console: unknown, or a runtime's (which reads live
    versions and asks for approvals, and decides nothing)."""
    found = state(request).operators.caller(token)
    if found is not None:
        return f"{found.name}'s token is a {found.role}'s: only an operator signs in here"
    return "that token is not known here"


@router.post("/sign-out")
def sign_out(request: Request, csrf: Annotated[str, Form()] = "") -> Response:
    checked(request, csrf)
    state(request).operators.sign_out(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/sign-in", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/skills", status_code=303)


# --- skills -------------------------------------------------------------------------------


@router.get("/skills", response_class=HTMLResponse)
def skills(request: Request, q: str = "", after: str = "") -> Response:
    """The skills a page at a time (found by a part of their slug or title), under the counts a
    person reads first."""
    from skillpress.app.records.skill_list import skills_page, skills_totals

    operator_of(request)
    ctx = state(request).ctx
    query = q.strip()[:100]
    page, next_after = skills_page(ctx, after[:64] or None, query=query)
    return render(
        request,
        "skills.html",
        skills=page,
        next_after=next_after,
        after=after[:64],
        q=query,
        totals=skills_totals(ctx),
    )


@router.get("/skills/import", response_class=HTMLResponse)
def import_page(request: Request) -> Response:
    operator_of(request)
    return render(request, "import.html", shown=None, given={})


@router.post("/skills/import", response_class=HTMLResponse)
async def import_preview(
    request: Request,
    csrf: Annotated[str, Form()] = "",
    file: UploadFile | None = None,
    spec: Annotated[str | None, Form()] = None,
    url: Annotated[str | None, Form()] = None,
    blob: Annotated[str | None, Form()] = None,
    slug: Annotated[str | None, Form()] = None,
    base_url: Annotated[str | None, Form()] = None,
) -> Response:
    """The preview: every prefilled field editable, anything the spec did not say asked for."""
    checked(request, csrf)
    ctx = state(request).ctx
    given = {"url": url or "", "spec": spec or "", "slug": slug or "", "base_url": base_url or ""}
    try:
        spec_in = await read_spec_input(ctx, file, spec, url, blob)
        shown = await run_in_threadpool(
            intake.preview, ctx, spec_in.data, spec_in.url, slug, base_url
        )
    except (Permanent, Retryable) as exc:
        return render(request, "import.html", 422, shown=None, given=given, error=str(exc))
    return render(request, "import.html", shown=shown, given=given)


@router.post("/skills/import/create")
async def import_create(
    request: Request,
    csrf: Annotated[str, Form()] = "",
    blob: Annotated[str, Form()] = "",
    slug: Annotated[str, Form()] = "",
    base_url: Annotated[str | None, Form()] = None,
    credential_env: Annotated[str | None, Form()] = None,
    replace: Annotated[str, Form()] = "",
) -> Response:
    who = checked(request, csrf)
    ctx = state(request).ctx
    try:
        in_use = await run_in_threadpool(intake.slug_in_use, ctx, slug, ())
        if in_use is not None and replace != slug:
            raise Refused(
                f"{slug!r} is {in_use.title}'s slug already (from {in_use.source}): creating would"
                " submit a new revision of it; preview again and confirm, or choose another slug"
            )
        spec_in = await read_spec_input(ctx, None, None, None, blob)
        done = await intake.submit(
            ctx,
            state(request).nc,
            slug,
            spec_in.data,
            spec_in.url,
            base_url,
            who,
            credential_env or None,
        )
    except (Permanent, Retryable) as exc:
        return render(
            request,
            "import.html",
            422,
            shown=None,
            given={"slug": slug, "base_url": base_url or ""},
            error=str(exc),
        )
    return back(request, f"/skills/{done.skill}/submissions/{done.submission}", after=str(done.seq))


@router.get("/skills/{slug}/submissions/{submission}", response_class=HTMLResponse)
async def submission_page(
    request: Request, slug: str, submission: str, after: int | None = None
) -> Response:
    """The pipeline's stages live; at the end, the proposed version and what it still needs
    (a submission no stage recorded and the stream does not hold at `after`: a 404 page)."""
    from skillpress.app.operator.submissions import submission_known

    operator_of(request)
    await submission_known(state(request).nc, state(request).ctx, submission, after)
    return await asyncio.to_thread(_submission_page, request, slug, submission, after)


def _submission_page(request: Request, slug: str, submission: str, after: int | None) -> Response:
    """The pipeline's stages live; at the end, the proposed version and what it still needs."""
    from skillpress.app.operator.submissions import stored_outcome
    from skillpress.app.records.versions import (
        find_skill,
        manifest_of,
        version_files,
        version_for_outcome,
        what_it_needs,
    )
    from skillpress.schemas.events import RevisionRejected

    operator_of(request)
    ctx = state(request).ctx
    outcome = stored_outcome(ctx, slug, submission)
    if outcome is None:
        events = f"/v1/skills/{quote(slug)}/submissions/{quote(submission)}/events" + (
            f"?after={after}" if after else ""
        )
        return render(request, "submission.html", slug=slug, events=events, outcome=None)
    if isinstance(outcome.message, RevisionRejected):
        return render(
            request,
            "submission.html",
            slug=slug,
            events=None,
            outcome="refused",
            reason=outcome.message.reason,
        )
    body = outcome.body
    version = version_for_outcome(ctx, find_skill(ctx, slug), body)
    manifest = manifest_of(version_files(ctx.blobs, version))
    if manifest is None:
        raise NotFound(f"version {version.id[:12]} of {slug} has no skill.json")
    needs = what_it_needs(slug, manifest)
    return render(
        request,
        "submission.html",
        slug=slug,
        events=None,
        outcome="proposed" if body.get("created", True) else "unchanged",
        version=version,
        summary=version.diff.get("summary", {}),
        manifest=manifest,
        needs=needs,
    )


@router.get("/skills/{slug}", response_class=HTMLResponse)
def skill_page(
    request: Request,
    slug: str,
    file: str | None = None,
    v: str | None = None,
    q: str = "",
    ap: int = 1,
) -> Response:
    operator_of(request)
    try:
        st = state(request)
        view = skill_view(st.ctx, slug, file, v, q.strip()[:100], page=ap, drops_seen=st.drops_seen)
    except NotFound as exc:
        return render(request, "skills.html", 404, skills=[], error=str(exc))
    return render(request, "skill.html", **view)


@router.get("/skills/{slug}/changes", response_class=HTMLResponse)
def changes_page(
    request: Request,
    slug: str,
    v: str | None = None,
    which: str = Query("changed", alias="list"),
    start: int = Query(0, alias="from"),
) -> Response:
    """One of a proposal's lists of changes (of version `v`, else the newest) against the live
    one: whole as a page, or (to htmx, which puts it in the skill page in place of the link)
    the entries from `from` on."""
    operator_of(request)
    try:
        view = changes_view(state(request).ctx, slug, v, which)
    except NotFound as exc:
        return render(request, "skills.html", 404, skills=[], error=str(exc))
    if request.headers.get("hx-request"):
        return render(request, "_diff_rest.html", **view, start=max(start, 0))
    return render(request, "changes.html", **view)


@router.get("/skills/{slug}/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, slug: str, run_id: int) -> Response:
    """One workflow run: each step's request, outcome, status, tries, timing and answer."""
    operator_of(request)
    try:
        found = get_run(state(request).ctx, run_id)
        if found["skill"] != slug:
            raise NotFound(f"run #{run_id} is not a run of {slug}")
    except NotFound as exc:
        return render(request, "skills.html", 404, skills=[], error=str(exc))
    return render(request, "run.html", run=found, slug=slug)


@router.post("/skills/{slug}/annotations")
async def add_annotation_form(
    request: Request,
    slug: str,
    csrf: Annotated[str, Form()] = "",
    kind: Annotated[str, Form()] = "note",
    operation: Annotated[str, Form()] = "",
    category: Annotated[str, Form()] = "",
    value: Annotated[str, Form()] = "",
    risk: Annotated[str, Form()] = "high",
    binds: Annotated[str, Form()] = "",
    amount: Annotated[str, Form()] = "",
    currency: Annotated[str, Form()] = "",
    auto_below: Annotated[str, Form()] = "",
    auto_currency: Annotated[str, Form()] = "",
    turn: Annotated[str, Form()] = "",
    credential_in: Annotated[str, Form()] = "",
    credential_kind: Annotated[str, Form()] = "",
    credential_env: Annotated[str, Form()] = "",
    back: Annotated[str, Form()] = "",
) -> Response:
    who = checked(request, csrf)
    ctx = state(request).ctx
    here = f"/skills/{slug}"
    values = {
        kind: value,
        "risk": risk,
        "binds": binds or None,
        "amount": amount or None,
        "currency": currency or None,
        "auto_below": auto_below or None,
        "auto_currency": auto_currency or None,
        "turn": turn or None,
        "credential_in": credential_in or None,
        "credential_kind": credential_kind or None,
        "credential_env": credential_env or None,
    }
    return await act(
        request,
        here,
        lambda: changes.annotate(ctx, slug, kind, operation or None, category or None, values, who),
        lambda done: f"annotation {done['annotation_id']} added; {proposed(done)}",
        **({"file": back} if back else {}),
    )


@router.post("/skills/{slug}/annotations/{annotation_id}/retire")
async def retire_form(
    request: Request, slug: str, annotation_id: str, csrf: Annotated[str, Form()] = ""
) -> Response:
    who = checked(request, csrf)
    ctx = state(request).ctx
    return await act(
        request,
        f"/skills/{slug}",
        lambda: changes.retire(ctx, annotation_id, who),
        lambda done: f"retired {annotation_id}; {proposed(done)}",
    )


@router.post("/skills/{slug}/annotations/rekey")
async def rekey_form(request: Request, slug: str) -> Response:
    """The orphaned annotations' form: each `rekey-ID` field names the operation it moves to
    (empty: left as it is); all chosen move in one proposal."""
    form = await request.form()
    who = checked(request, str(form.get("csrf") or ""))
    ctx = state(request).ctx
    moves = {
        str(key)[len("rekey-") :]: str(value)
        for key, value in form.multi_items()
        if str(key).startswith("rekey-") and str(value)
    }
    if not moves:
        return back(request, f"/skills/{slug}", error="choose an operation for at least one")
    return await act(
        request,
        f"/skills/{slug}",
        lambda: changes.rekey(ctx, moves, who),
        lambda done: (
            f"re-keyed {len(moves)} annotation{'s' if len(moves) > 1 else ''}"
            f" ({', '.join(f'{a} to {op}' for a, op in moves.items())}); {proposed(done)}"
        ),
    )


@router.post("/skills/{slug}/publish")
async def publish_form(
    request: Request,
    slug: str,
    csrf: Annotated[str, Form()] = "",
    version: Annotated[str, Form()] = "",
    remove_gates: Annotated[str, Form()] = "",
) -> Response:
    who = checked(request, csrf)
    ctx = state(request).ctx
    return await act(
        request,
        f"/skills/{slug}",
        lambda: changes.publish(ctx, slug, version, remove_gates == "yes", 60.0, who),
        lambda done: f"published {done['version_id'][:12]}: it is live",
    )


# --- review -------------------------------------------------------------------------------


# --- action items and dead letters ---------------------------------------------------------
