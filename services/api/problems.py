"""Errors as RFC 9457 problem details: a person can act on the message, and a refusal is never a 500."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from services.errors import NotFound, Permanent, Retryable
from services.platform.logging import get_logger

__all__ = ["PROBLEM", "install", "problem"]

PROBLEM = "application/problem+json"
_TITLES = {
    400: "Bad request",
    401: "Sign in first",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Too large",
    422: "Refused",
    503: "Pipeline unavailable",
}


def problem(status: int, detail: str, kind: str | None = None, **extra: Any) -> JSONResponse:
    body = {
        "type": f"urn:skillpress:problem:{kind or _TITLES.get(status, 'error').lower().replace(' ', '-')}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        **extra,
    }
    headers = {"WWW-Authenticate": 'Bearer realm="skillpress"'} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def install(app: FastAPI) -> None:
    """Map the application layer's error kinds (and FastAPI's own) to problems, once."""
    log = get_logger("api")

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> JSONResponse:
        return problem(404, str(exc))

    @app.exception_handler(Permanent)
    async def refused(request: Request, exc: Permanent) -> JSONResponse:
        return problem(422, str(exc), re.sub(r"(?<!^)(?=[A-Z])", "-", type(exc).__name__).lower())

    @app.exception_handler(Retryable)
    async def unavailable(request: Request, exc: Retryable) -> JSONResponse:
        return problem(503, str(exc))

    @app.exception_handler(HTTPException)
    async def http(request: Request, exc: HTTPException) -> JSONResponse:
        return problem(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return problem(422, f"{where}: {first.get('msg', 'invalid')}", "invalid-request")

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("api.crashed", path=request.url.path)
        return problem(500, f"an unexpected {type(exc).__name__}; the server log has the detail")
