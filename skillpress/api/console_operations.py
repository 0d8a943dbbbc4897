"""The console's pages of what waits for a person: a skill's review of suggestions (confirmed or
dismissed in groups) and the operations page (calls waiting for approval, action items, dead
letters), each form CSRF-checked and its refusal shown in words."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response

from skillpress.api.console_kit import act, attempt, back, checked, operator_of, render
from skillpress.api.deps import state
from skillpress.app.base.views import SuggestionGroups
from skillpress.app.operator import changes
from skillpress.app.operator.review import suggestion_groups
from skillpress.errors import NotFound

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

REVIEW_PAGE = 50  # suggestions a group shows at once


def _review_view(review: SuggestionGroups, q: str, group: str, page: int) -> dict[str, Any]:
    """The review list as a page shows it: filtered by operation name (`q`), each group's first
    REVIEW_PAGE, or one `group` paged; every count says how many there are in all."""
    needle = q.strip().lower()[:100]
    groups: dict[str, dict[str, Any]] = {}
    for name, items in review["groups"].items():
        if group and name != group:
            continue
        matching = [s for s in items if needle in s["operation"].lower()] if needle else items
        pages = max(1, -(-len(matching) // REVIEW_PAGE))
        at = min(max(page, 1), pages) if group else 1
        start = (at - 1) * REVIEW_PAGE
        groups[name] = {
            "shown": matching[start : start + REVIEW_PAGE],
            "total": len(items),  # what "Confirm all" confirms: the whole group
            "matching": len(matching),
            "first": start + 1,
            "page": at,
            "pages": pages,
        }
    return {"review": review, "groups": groups, "q": q.strip()[:100], "group": group}


@router.get("/skills/{slug}/review", response_class=HTMLResponse)
def review_page(
    request: Request, slug: str, q: str = "", group: str = "", page: int = 1
) -> Response:
    operator_of(request)
    try:
        review = suggestion_groups(state(request).ctx, slug)
    except NotFound as exc:
        return render(request, "skills.html", 404, skills=[], error=str(exc))
    if group and group not in review["groups"]:
        return render(
            request, "skills.html", 404, skills=[], error=f"no suggestion group {group!r}"
        )
    view = _review_view(review, q, group, page)
    if request.headers.get("hx-request") and request.headers.get("hx-target") == "review":
        return render(request, "review_list.html", slug=slug, **view)
    return render(request, "review.html", slug=slug, **view)


@router.post("/skills/{slug}/review", response_class=HTMLResponse)
async def review_confirm(
    request: Request,
    slug: str,
    csrf: Annotated[str, Form()] = "",
    suggestion: Annotated[str, Form()] = "",
    group: Annotated[str, Form()] = "",
    q: Annotated[str, Form()] = "",
    shown: Annotated[str, Form()] = "",
    page: Annotated[int, Form()] = 1,
    decision: Annotated[str, Form()] = "confirm",
    dismiss: Annotated[str, Form()] = "",
) -> Response:
    """A group decided (`group`, `decision`), or one suggestion: a row's button names it as
    `suggestion` (confirm) or `dismiss`, the list's one form carrying the rest."""
    who = checked(request, csrf)
    ctx = state(request).ctx
    if dismiss:
        suggestion, decision = dismiss, "dismiss"
    ids, groups = [suggestion] if suggestion else [], [group] if group else []
    notice = None
    if decision == "dismiss":
        gone, error = await attempt(lambda: changes.dismiss(ctx, slug, ids, groups, who))
        done = None
        if gone is not None:
            notice = f"dismissed {gone['dismissed']}; {gone['remaining']} left"
    else:
        done, error = await attempt(lambda: changes.confirm(ctx, slug, ids, groups, who))
    if done is not None:
        notice = f"confirmed {len(done['confirmed'])}; {done['remaining']} left" + (
            f"; proposed version {done['proposal']['version_id'][:12]}" if done["proposal"] else ""
        )
        if done["skipped"]:
            notice += "; skipped " + "; ".join(
                f"{s['operation']} ({s['reason']})" for s in done["skipped"]
            )
    if request.headers.get("hx-request"):
        review = await run_in_threadpool(suggestion_groups, ctx, slug)
        view = _review_view(review, q, shown if shown in review["groups"] else "", page)
        return render(request, "review_list.html", slug=slug, **view, notice=notice, error=error)
    return back(request, f"/skills/{slug}/review", notice=notice or "", error=error or "")


APPROVALS_PAGE = 50  # waiting calls the operations page shows at once


@router.get("/operations", response_class=HTMLResponse)
def operations_page(request: Request, page: int = 1) -> Response:
    from skillpress.app.records.approval_requests import approvals_page
    from skillpress.app.records.overview import dead_letters, open_actions

    operator_of(request)
    ctx = state(request).ctx
    shown = approvals_page(ctx, page, APPROVALS_PAGE)
    return render(
        request,
        "operations.html",
        actions=open_actions(ctx),
        letters=dead_letters(ctx),
        approvals=shown.pending,
        waiting=shown.waiting,
        page=shown.page,
        pages=shown.pages,
        first=shown.first,
        decided=shown.decided,
    )


@router.post("/operations/approvals/{request_id}")
async def decide_form(
    request: Request,
    request_id: int,
    csrf: Annotated[str, Form()] = "",
    decision: Annotated[str, Form()] = "",
) -> Response:
    from skillpress.app.records.approval_requests import decide

    who = checked(request, csrf)
    ctx = state(request).ctx
    grant = decision == "grant"
    said = "granted (once, for exactly these values)" if grant else "denied"
    return await act(
        request,
        "/operations",
        lambda: decide(ctx, request_id, grant, who),
        lambda _: f"approval request #{request_id} {said}",
    )


@router.post("/operations/actions/{action_id}/resolve")
async def resolve_form(
    request: Request, action_id: int, csrf: Annotated[str, Form()] = ""
) -> Response:
    from skillpress.app.records.overview import resolve_action

    checked(request, csrf)
    ctx = state(request).ctx
    return await act(
        request,
        "/operations",
        lambda: resolve_action(ctx, action_id),
        lambda _: f"action item #{action_id} resolved",
    )


@router.post("/operations/dead-letters/replay")
async def replay_form(
    request: Request, csrf: Annotated[str, Form()] = "", letter: Annotated[str, Form()] = ""
) -> Response:
    from skillpress.app.operator.dispatch import replay_dead_letters

    checked(request, csrf)
    ctx = state(request).ctx
    ids = [int(letter)] if letter.isdigit() else None
    return await act(
        request,
        "/operations",
        lambda: replay_dead_letters(ctx, ids),
        lambda done: f"replayed {len(done)} message(s)",
    )
