"""Send a prepared request with httpx: the operator's credential attached, no redirects, bounded.

The credential comes from an environment variable the operator names, never from the model's
arguments; only the variable's *name* is ever stored or printed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from services.errors import Retryable
from services.runtime.skill import AuthHeader
from services.runtime.translate import PreparedRequest

if TYPE_CHECKING:
    import httpx

__all__ = ["CallLimits", "CallResult", "Credential", "ExecutionFailed", "default_env_var", "send"]

USER_AGENT = "skillpress"


def default_env_var(slug: str) -> str:
    """The variable a skill's credential is read from unless another is named: `<SLUG>_API_KEY`."""
    return re.sub(r"[^A-Za-z0-9]+", "_", slug).strip("_").upper() + "_API_KEY"


class ExecutionFailed(RuntimeError, Retryable):
    """The request was sent (or tried) and no complete answer came back."""

    problem = "call-failed"
    status = 502


@dataclass(frozen=True)
class Credential:
    """Where the credential comes from: the header it goes in and the variable that holds it."""

    auth: AuthHeader
    env_var: str

    def header_value(self, environ: Mapping[str, str]) -> str | None:
        """The header's value from the variable: surrounding whitespace (a line end read from a
        file or `.env`) stripped; a bearer token prefixed; basic credentials `user:password` (or a
        key alone, as the user name with no password, as Stripe takes it) encoded as RFC 7617 says."""
        raw = (environ.get(self.env_var) or "").strip()
        if not raw:
            return None
        if self.auth.kind == "bearer" and not raw.lower().startswith("bearer "):
            return f"Bearer {raw}"
        if self.auth.kind == "basic" and not raw.lower().startswith("basic "):
            pair = raw if ":" in raw else f"{raw}:"
            return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        return raw

    def placeholder(self) -> dict[str, str]:
        """What a dry run shows instead of the value."""
        return {self.auth.header: f"<from ${self.env_var}>"}


@dataclass(frozen=True)
class CallLimits:
    timeout: float = 30.0
    max_response_bytes: int = 4 * 1024 * 1024


_AGENT_HEADERS = frozenset(
    {
        "content-type",
        "content-length",
        "location",
        "link",
        "etag",
        "last-modified",
        "retry-after",
        "request-id",
        "x-request-id",
    }
)
_AGENT_PREFIXES = ("ratelimit", "x-ratelimit", "x-rate-limit", "x-total", "x-next", "x-page")


@dataclass
class CallResult:
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    elapsed: float = 0.0

    def body_value(self) -> Any:
        """The body as JSON when it is JSON, else as text."""
        text = self.body.decode("utf-8", "replace")
        if not self.truncated and "json" in self.headers.get("content-type", ""):
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                pass
        return text

    def agent_headers(self) -> dict[str, str]:
        """The headers an agent acts on (what came back, where it went, the next page, the rate
        limit, a version to send back): never cookies or the transport's own."""
        return {
            k: v
            for k, v in self.headers.items()
            if k in _AGENT_HEADERS or k.startswith(_AGENT_PREFIXES)
        }

    def as_dict(self, for_agent: bool = False) -> dict[str, Any]:
        """The result as JSON: status, headers (`for_agent`: only those an agent acts on) and
        the body."""
        out: dict[str, Any] = {
            "status": self.status,
            "headers": self.agent_headers() if for_agent else self.headers,
            "body": self.body_value(),
        }
        if self.truncated:
            out["truncated"] = True
        if self.status in (301, 302, 303, 307, 308):
            out["redirect_not_followed"] = self.headers.get("location")
        return out


def send(
    request: PreparedRequest,
    *,
    credential: Credential | None = None,
    environ: Mapping[str, str] | None = None,
    limits: CallLimits = CallLimits(),
    transport: httpx.BaseTransport | None = None,
) -> CallResult:
    """Send `request`; the response is read up to `limits.max_response_bytes` and `limits.timeout` in all."""
    import httpx  # on the sending path only: a dry run or a refusal never pays for it

    env = os.environ if environ is None else environ
    headers = {"User-Agent": USER_AGENT, **dict(request.headers)}
    if credential is not None:
        value = credential.header_value(env)
        if value is not None:
            headers[credential.auth.header] = value
    deadline = time.monotonic() + limits.timeout
    timeout = httpx.Timeout(limits.timeout, connect=min(10.0, limits.timeout))
    started = time.monotonic()
    client = httpx.Client(
        follow_redirects=False, trust_env=False, timeout=timeout, transport=transport
    )
    # no Accept unless the call sends one: absent is "anything" (RFC 9110), while httpx's own
    # `*/*` is a value an operation's declared Accept parameter may not allow
    client.headers.pop("accept", None)
    try:
        with (
            client,
            client.stream(
                request.method, request.url, headers=headers, content=request.body
            ) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            truncated = False
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > limits.max_response_bytes:
                    keep = limits.max_response_bytes - (size - len(chunk))
                    chunks.append(chunk[:keep])
                    truncated = True
                    break
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise ExecutionFailed(
                        f"{request.operation}: the response took longer than {limits.timeout:g} s"
                    )
            return CallResult(
                status=response.status_code,
                headers={k.lower(): v for k, v in response.headers.items()},
                body=b"".join(chunks),
                truncated=truncated,
                elapsed=round(time.monotonic() - started, 3),
            )
    except httpx.TimeoutException:
        raise ExecutionFailed(
            f"{request.operation}: no answer within {limits.timeout:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise ExecutionFailed(
            f"{request.operation}: request failed: {exc.__class__.__name__}: {exc}"
        ) from None
