"""What every route is given: the application context, the operator making the request, and
the spec a form carries (an upload, a paste or a URL) read within the size cap."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from skillpress.api.auth import LOCAL, SESSION_COOKIE, Operators
from skillpress.app.base.context import AppContext
from skillpress.errors import Refused
from skillpress.platform.operator_tokens import OPERATOR

__all__ = [
    "Caller",
    "Ctx",
    "Decider",
    "Operator",
    "Reader",
    "SpecInput",
    "current_caller",
    "current_decider",
    "current_operator",
    "read_spec_input",
    "state",
]

_BLOB = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class ServerState:
    ctx: AppContext
    operators: Operators
    nc: Any = None  # the shared NATS connection (nats.aio.client.Client) once started
    keeps_nats: bool = False  # started with a NATS URL: readiness asks its connection too
    # (proposal, live) → the gates publishing it drops: the console's publish check, once
    drops_seen: dict[tuple[str, str | None], tuple[tuple[str, bool], ...]] = field(
        default_factory=dict
    )


def state(request: Request) -> ServerState:
    found: ServerState = request.app.state.skillpress
    return found


def _ctx(request: Request) -> AppContext:
    return state(request).ctx


@dataclass(frozen=True)
class Caller:
    """Who a request is from: a token's name and role (`operator`, `runtime`, or `local`: a
    command line's link on the server's home)."""

    name: str
    role: str

    @property
    def operator(self) -> bool:
        """Whether it does an operator's work (an operator, or a command line on the home)."""
        return self.role in (OPERATOR, LOCAL)

    @property
    def decides(self) -> bool:
        """Whether it may decide a gated call or make a token: a person's operator token only."""
        return self.role == OPERATOR


def current_caller(request: Request) -> Caller:
    """Who is asking: an operator or a runtime by `Authorization: Bearer TOKEN`, or an
    operator by the console's session cookie (a change then needs the CSRF token in
    `X-CSRF-Token` or the form's `csrf` field, checked by the route that reads the form)."""
    operators = state(request).operators
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        found = operators.caller(header[7:].strip())
        if found is None:
            raise HTTPException(401, "that token is not known here")
        return Caller(found.name, found.role)
    return Caller(_session_operator(request), OPERATOR)


def current_operator(request: Request) -> str:
    """The operator's name (as `current_caller` finds it): a runtime's token is refused (403),
    since deciding, publishing, annotating and minting are an operator's."""
    caller = current_caller(request)
    if not caller.operator:
        raise HTTPException(
            403,
            f"{caller.name}'s token is a {caller.role}'s: it reads live versions and asks for"
            " approvals; this is an operator's to do",
        )
    return caller.name


def current_decider(request: Request) -> str:
    """The operator's name, for what only a person's operator token does (deciding a gated call,
    making a token): the token a server gives command lines on its home is refused (403) as a
    runtime's is, so reading the home hands no process that power."""
    caller = current_caller(request)
    if not caller.decides:
        raise HTTPException(
            403,
            f"{caller.name}'s token is a {caller.role}'s: deciding a gated call and making a token"
            " need a person's operator token",
        )
    return caller.name


def _session_operator(request: Request) -> str:
    operators = state(request).operators
    cookie = request.cookies.get(SESSION_COOKIE)
    name = operators.session_operator(cookie)
    if name is None:
        raise HTTPException(
            401, "sign in: send `Authorization: Bearer TOKEN` (the token skillpress serve printed)"
        )
    if request.method not in ("GET", "HEAD") and not operators.csrf_ok(
        cookie, request.headers.get("x-csrf-token")
    ):
        raise HTTPException(403, "a change from the console needs its CSRF token")
    return name


Ctx = Annotated[AppContext, Depends(_ctx)]
Operator = Annotated[str, Depends(current_operator)]
Decider = Annotated[str, Depends(current_decider)]  # an operator's own token, nothing less
Reader = Annotated[Caller, Depends(current_caller)]  # an operator or a runtime


@dataclass(frozen=True)
class SpecInput:
    data: bytes | None
    url: str | None


async def read_spec_input(
    ctx: AppContext, file: UploadFile | None, spec: str | None, url: str | None, blob: str | None
) -> SpecInput:
    """Exactly one of an upload, pasted text, a URL (fetched later through the fetch guard) or a
    blob an earlier preview stored; Refused otherwise, and for more bytes than the cap."""
    given = [
        n
        for n, v in (
            ("file", file is not None and bool(file.filename)),
            ("spec", bool(spec and spec.strip())),
            ("url", bool(url and url.strip())),
            ("blob", bool(blob)),
        )
        if v
    ]
    if len(given) != 1:
        raise Refused(
            "give exactly one spec: a file upload (`file`), pasted text (`spec`) or a URL (`url`)"
            + (f"; got {', '.join(given)}" if given else "")
        )
    cap = ctx.settings.max_spec_bytes
    if given[0] == "file":
        assert file is not None
        data = await file.read(cap + 1)
    elif given[0] == "spec":
        data = (spec or "").encode()
    elif given[0] == "blob":
        if not _BLOB.match(blob or ""):
            raise Refused("blob is the sha256 a preview returned")
        from skillpress.platform.blobs import BlobNotFound

        try:
            data = ctx.blobs.get(blob or "")
        except BlobNotFound:
            raise Refused("that preview's spec is no longer stored: upload it again") from None
    else:
        u = (url or "").strip()
        if not u.startswith(("http://", "https://")):
            raise Refused(f"{u!r} is not an http(s) URL")
        return SpecInput(None, u)
    if len(data) > cap:
        raise HTTPException(413, f"the spec is over the {cap:,}-byte limit")
    return SpecInput(data, None)
