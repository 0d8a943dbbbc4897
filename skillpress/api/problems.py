"""Errors as RFC 9457 problem details: a person can act on the message, and a refusal is never a 500."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from skillpress.api.pages import error_page, is_console
from skillpress.errors import Permanent, Retryable
from skillpress.platform.logging import get_logger

__all__ = ["PROBLEM", "PROBLEM_RESPONSES", "Problem", "install", "problem"]

PROBLEM = "application/problem+json"
# every kind a problem's `type` names (the URN's last part)
KINDS = (
    "bad-request",
    "unauthorized",
    "forbidden",
    "method-not-allowed",
    "error",
    "not-found",
    "unknown-operation",
    "refused",
    "spec-refused",
    "annotation-refused",
    "publish-refused",
    "package-invalid",
    "call-refused",
    "gate-closed",
    "grant-spent",
    "token-refused",
    "fetch-refused",
    "replicas-refused",
    "dead-lettered",
    "settings-refused",
    "contract-broken",
    "step-failed",
    "invalid-request",
    "conflict",
    "too-large",
    "unavailable",
    "call-failed",
    "blob-corrupt",
)
_TITLES = {
    400: "Bad request",
    401: "Sign in first",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Too large",
    422: "Refused",
    500: "Server error",
    502: "The API did not answer",
    503: "Pipeline unavailable",
}


class Problem(BaseModel):
    """An RFC 9457 problem: `type` is a stable URN (`urn:skillpress:problem:<kind>`, fixed per
    kind of error, never a class name), `detail` says what to do."""

    type: str = Field(
        examples=["urn:skillpress:problem:spec-refused"],
        description="urn:skillpress:problem: then one of: " + ", ".join(KINDS),
    )
    title: str
    status: int
    detail: str


def _described(status: int, what: str) -> dict[str, Any]:
    return {"model": Problem, "description": what, "content": {PROBLEM: {}}}


# what every operation of /v1 may answer besides its own success (FastAPI's own 422 replaced)
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: _described(401, "no operator token, or a wrong one (sign in first)"),
    404: _described(404, "the skill, version, annotation or request named is not there"),
    409: _described(409, "the request conflicts with what is recorded (a decided approval)"),
    413: _described(413, "the body is over SKILLPRESS_MAX_SPEC_BYTES"),
    422: _described(422, "refused: the request or what it names cannot be done as asked"),
    503: _described(503, "the pipeline (NATS, the records or the blob store) did not answer"),
}


# the kind of a problem raised by status alone (an HTTP error of the framework's or the console's)
_KIND_OF = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "too-large",
    422: "refused",
    500: "error",
    503: "unavailable",
}


RETRY_AFTER = "5"  # seconds a client waits before asking again after a 503


def problem(status: int, detail: str, kind: str | None = None, **extra: Any) -> JSONResponse:
    body = {
        "type": f"urn:skillpress:problem:{kind or _KIND_OF.get(status, 'error')}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        **extra,
    }
    headers = {"WWW-Authenticate": 'Bearer realm="skillpress"'} if status == 401 else None
    if status == 503:  # a dependency down for now (the records, the blobs, JetStream): ask again
        headers = {"Retry-After": RETRY_AFTER}
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _answer(request: Request, status: int, detail: str, kind: str | None = None) -> Response:
    """A problem for the API; for the console (a page or a form of it), the same refusal as a
    page with the way back to its form."""
    if is_console(request.scope):
        return error_page(request.scope, status, detail)
    return problem(status, detail, kind)


def install(app: FastAPI) -> None:
    """Map the application layer's error kinds (and FastAPI's own) to problems, once."""
    log = get_logger("api")

    @app.exception_handler(Permanent)
    async def refused(request: Request, exc: Permanent) -> Response:
        if exc.status >= 500:
            log.error("api.failed", path=request.url.path, problem=exc.problem, error=str(exc))
        return _answer(request, exc.status, str(exc), exc.problem)

    @app.exception_handler(Retryable)
    async def unavailable(request: Request, exc: Retryable) -> Response:
        return _answer(request, exc.status, str(exc), exc.problem)

    @app.exception_handler(HTTPException)
    async def http(request: Request, exc: HTTPException) -> Response:
        return _answer(request, exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        detail = f"{where}: {first.get('msg', 'invalid')}"
        return _answer(request, 422, detail, "invalid-request")

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("api.crashed", path=request.url.path)
        detail = f"an unexpected {type(exc).__name__}; the server log has the detail"
        return _answer(request, 500, detail)
