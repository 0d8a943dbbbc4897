"""What every console page and form shares: the signed-in operator (or the way to sign in), a page
rendered with its nonce and flash, the CSRF check every form passes, and a refusal brought back
to the page it was made from, in words."""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape
from starlette.exceptions import HTTPException

from skillpress.api.auth import SESSION_COOKIE
from skillpress.api.deps import state
from skillpress.api.headers import csp_nonce
from skillpress.api.pages import templates
from skillpress.errors import Permanent, Retryable

__all__ = [
    "ANNOTATION_KINDS",
    "RISKS",
    "SignIn",
    "act",
    "attempt",
    "back",
    "checked",
    "install",
    "operator_of",
    "proposed",
    "read_flash",
    "render",
    "ticks",
]


def ticks(text: str) -> Markup:
    """Text whose `backticked` parts are code (the core's sentences are Markdown), escaped."""
    parts = str(escape(text)).split("`")
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


templates.env.filters["ticks"] = ticks

RISKS = ("high", "medium", "low")

ANNOTATION_KINDS = [  # what the annotation form offers, in its order
    ("note", "note (on the operation's file)"),
    ("approval", "approval gate"),
    ("identity", "identity (idempotency fields)"),
    ("prefer", "prefer another operation"),
    ("hidden", "hide the operation"),
    ("example", "example arguments (JSON)"),
    ("fixed", "fixed argument NAME=VALUE"),
    ("fixed_header", "fixed header NAME=VALUE"),
    ("style", "query style NAME=STYLE"),
    ("skill_note", "skill note (in the body)"),
    ("rename_category", "rename category OLD=NEW"),
    ("merge_categories", "merge categories A,B=NEW"),
    ("credential", "the skill's credential: its header or query parameter"),
]


class SignIn(Exception):
    def __init__(self, next_url: str) -> None:
        self.next_url = next_url


def operator_of(request: Request) -> tuple[str, str]:
    """(operator, session cookie), or off to the sign-in page."""
    cookie = request.cookies.get(SESSION_COOKIE) or ""
    name = state(request).operators.session_operator(cookie)
    if name is None:
        raise SignIn(str(request.url.path))
    return name, cookie


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    cookie = request.cookies.get(SESSION_COOKIE) or ""
    operators = state(request).operators
    who = operators.session_operator(cookie)
    flash = read_flash(request, operators)
    context.setdefault("notice", flash.get("notice"))
    context.setdefault("error", flash.get("error"))
    context.setdefault("max_bytes", state(request).ctx.settings.max_spec_bytes)
    response = templates.TemplateResponse(
        request,
        template,
        {
            "operator": who,
            "csrf": operators.csrf(cookie) if who else "",
            "csp_nonce": csp_nonce(request.scope),
            **context,
        },
        status_code=status,
    )
    if FLASH_COOKIE in request.cookies:
        response.delete_cookie(FLASH_COOKIE, path="/")
    return response


# what a form's redirect says it did (or why not), carried to the next page in a cookie this
# server signed: never in the address, so a link cannot put words in the console's mouth
FLASH_COOKIE = "skillpress_flash"


def read_flash(request: Request, operators: Any) -> dict[str, str]:
    raw = request.cookies.get(FLASH_COOKIE) or ""
    body, _, mac = raw.rpartition(".")
    if not body or not hmac.compare_digest(mac, operators.sign(f"flash:{body}")):
        return {}
    try:
        said = json.loads(base64.urlsafe_b64decode(body.encode()))
    except ValueError:
        return {}
    return (
        {k: str(v) for k, v in said.items() if k in ("notice", "error")}
        if isinstance(said, dict)
        else {}
    )


def back(request: Request, url: str, **params: str) -> RedirectResponse:
    """A 303 to `url`: `notice` and `error` go in a signed cookie for the next page, the other
    parameters (which file, which version) in its query."""
    said = {k: v for k, v in params.items() if k in ("notice", "error") and v}
    query = urlencode({k: v for k, v in params.items() if k not in said and v})
    response = RedirectResponse(f"{url}?{query}" if query else url, status_code=303)
    if said:
        body = base64.urlsafe_b64encode(json.dumps(said).encode()[:3000]).decode()
        operators = state(request).operators
        response.set_cookie(
            FLASH_COOKIE,
            f"{body}.{operators.sign(f'flash:{body}')}",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
            max_age=60,
        )
    return response


def checked(request: Request, csrf: str) -> str:
    who, cookie = operator_of(request)
    if not state(request).operators.csrf_ok(cookie, csrf):
        raise HTTPException(403, "this form's CSRF token is missing or stale: reload the page")
    return who


async def attempt(work: Callable[[], Any]) -> tuple[Any, str | None]:
    """(what the use-case returned, None), or (None, why it was refused) in words."""
    try:
        return await run_in_threadpool(work), None
    except Permanent as exc:  # NotFound among them
        return None, str(exc)
    except Retryable as exc:
        return None, f"{exc} (the pipeline did not answer; try again)"


async def act(
    request: Request, to: str, work: Callable[[], Any], said: Callable[[Any], str], **query: str
) -> RedirectResponse:
    """A form's change (the operator already checked): the use-case run, then back to `to`
    saying what it did, or why not."""
    done, error = await attempt(work)
    if error:
        return back(request, to, error=error, **query)
    return back(request, to, notice=said(done), **query)


def proposed(done: dict[str, Any]) -> str:
    return f"proposed version {done['proposal']['version_id'][:12]}"


def install(app: Any) -> None:
    """A console page asked for without a session goes to the sign-in page, then back."""

    async def to_sign_in(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SignIn)
        return RedirectResponse(f"/sign-in?{urlencode({'next': exc.next_url})}", status_code=303)

    app.add_exception_handler(SignIn, to_sign_in)
