"""The console's pages as the server renders them, and its refusals as pages: a browser that
posted a console form and was refused (a stale CSRF token, a body over the cap, a field the
server could not read) gets a page in words with a way back to its form, never raw JSON."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.templating import Jinja2Templates
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.types import Scope

from skillpress.api.headers import csp_nonce

__all__ = ["back_to", "error_page", "is_console", "templates"]

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")


def _as_text(value: object) -> str:
    """A bound value as the text it is: a string itself, anything else its JSON (never escaped
    to \\u sequences: the page escapes it as HTML)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _when(at: str | None) -> str:
    return at[:19].replace("T", " ") + " UTC" if at else ""


templates.env.filters["as_text"] = _as_text
templates.env.filters["when"] = _when

_TITLES = {
    400: "That request could not be read",
    403: "Not allowed",
    404: "Not found",
    405: "Not a way this page is used",
    409: "Already decided",
    413: "Too large",
    422: "Refused",
    500: "Something broke on our side",
    503: "The pipeline did not answer",
}


def is_console(scope: Scope) -> bool:
    """A request of the console's (a page or one of its forms), not of the API or a static file."""
    path = str(scope.get("path", ""))
    return not (path.startswith("/v1/") or path == "/v1" or path.startswith("/static/"))


def back_to(path: str) -> str:
    """The page whose form made a request to `path` (the Referer is never sent: no-referrer)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["skills", "import"]:
        return "/skills/import"
    if len(parts) >= 2 and parts[0] == "skills":
        return f"/skills/{parts[1]}" + ("/review" if parts[2:3] == ["review"] else "")
    if parts[:1] == ["operations"]:
        return "/operations"
    return "/skills"


def error_page(scope: Scope, status: int, detail: str) -> HTMLResponse:
    """The refusal as a page: what happened in words, a button back to the form (what was typed
    in it is kept by the browser's history), and a link to the page it came from."""
    request = Request(scope)
    return templates.TemplateResponse(
        request,
        "error.html",
        {
            "status": status,
            "heading": _TITLES.get(status, "Error"),
            "detail": detail,
            "back": back_to(request.url.path),
            "csp_nonce": csp_nonce(scope),
            "operator": None,
            "csrf": "",
        },
        status_code=status,
    )
