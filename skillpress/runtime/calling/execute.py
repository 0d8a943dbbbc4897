"""Send a prepared request with httpx: the operator's credential attached, no redirects, bounded.

The credential comes from an environment variable the operator names, never from the model's
arguments; only the variable's *name* is ever stored or printed, and no error ever echoes it.

The whole exchange is bounded, headers included (a server that drips one header line a second
is cut at the deadline), and so is the body, counted as it is decompressed (a gzip bomb stops at
the limit, not after inflating). A call that is safe to repeat (a read, or a write carrying an
identity's Idempotency-Key) is tried again on 429, 502, 503 and 504 (after `Retry-After`, up to
a bound) and on a connection that failed; a plain write never is, and its result says why.
The credential is `credential`, the answer `results`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import ssl
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from skillpress.errors import Refused
from skillpress.format.credentials import (
    default_credential_env,
    skillpress_own,
)
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.redaction import scrub_bytes, scrub_text, secret_forms
from skillpress.runtime.calling.request import ExecutionFailed, PreparedRequest
from skillpress.runtime.calling.results import CallResult, retry_delay
from skillpress.runtime.calling.tokens import Client, discard_token

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CallLimits",
    "default_env_var",
    "repeatable",
    "send",
]

USER_AGENT = "skillpress"


default_env_var = default_credential_env  # `<SLUG>_API_KEY`: the runtime's name for it


@dataclass(frozen=True)
class CallLimits:
    """A call's bounds: the whole exchange's time, the body's bytes (as decompressed), and how
    often and how long a call safe to repeat is tried again."""

    timeout: float = 30.0
    max_response_bytes: int = 4 * 1024 * 1024
    retries: int = 2  # tries after the first, for a call that is safe to repeat
    max_wait: float = 30.0  # seconds waited in all between tries (Retry-After counted whole)


RETRY_STATUSES = (429, 502, 503, 504)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class _Inflater:
    """A body's bytes as they are decompressed, never more than asked for at once: a small
    compressed chunk cannot become a large one in memory."""

    def __init__(self, encoding: str | None) -> None:
        coding = (encoding or "").strip().lower()
        self.z = (
            zlib.decompressobj(16 + zlib.MAX_WBITS)
            if coding in ("gzip", "x-gzip")
            else zlib.decompressobj()
            if coding == "deflate"
            else None
        )

    def feed(self, data: bytes, room: int) -> bytes:
        """At most `room` bytes of what `data` decompresses to (the rest waits in `tail`)."""
        if self.z is None:
            return data[:room]
        try:
            return self.z.decompress(data, max(room, 1))
        except zlib.error as exc:
            raise ExecutionFailed(f"the response's body does not decompress ({exc})") from None

    def tail(self) -> bytes:
        """What the last `feed` left undecompressed."""
        return self.z.unconsumed_tail if self.z is not None else b""

    def flush(self) -> bytes:
        try:
            return self.z.flush() if self.z is not None else b""
        except zlib.error as exc:
            raise ExecutionFailed(f"the response's body does not decompress ({exc})") from None


class _SkillsOwn(Mapping[str, str]):
    """The environment as a call's credentials read it: never one of skillpress's own variables
    (a companion header's `<SLUG>_<NAME>` can spell one): reading one is refused, naming it."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        if skillpress_own(name):
            raise Refused(
                f"a skill's credential is never read from ${name}: it is one of skillpress's own"
                " variables; name the skill's own where the runtime is configured (--auth-env)"
            )
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def _redacted(text: str, secrets: tuple[str, ...]) -> str:
    """An error's text with every form of every secret the call used taken out (a header value
    an HTTP library quotes back, say)."""
    return scrub_text(text, secret_forms(secrets), "<credential>")


def _scrubbed(result: CallResult, secrets: tuple[str, ...]) -> CallResult:
    """What came back, with every form of every secret the call used taken out (an API that
    quotes the request's headers, a body that repeats the token, percent-encoded, base64, its
    scheme left off): data for the agent, never the credential itself."""
    forms = secret_forms(secrets)
    if not forms:
        return result
    result.body = scrub_bytes(result.body, forms)
    result.headers = {k: scrub_text(v, forms) for k, v in result.headers.items()}
    return result


def repeatable(request: PreparedRequest) -> bool:
    """Whether sending `request` again cannot do anything twice: a read, or a write carrying an
    Idempotency-Key (from an identity, or the contract's `idempotency_key`)."""
    return request.method in SAFE_METHODS or any(
        k.lower() == "idempotency-key" for k, _ in request.headers
    )


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every call: building one reads the whole CA bundle (about 15 ms, two
    thirds of a call's own time), and a context is safe to share between calls and threads."""
    import httpx

    return httpx.create_ssl_context()


async def _exchange(
    request: PreparedRequest,
    headers: dict[str, str],
    limits: CallLimits,
    transport: httpx.AsyncBaseTransport | None,
) -> CallResult:
    import httpx

    started = time.monotonic()
    timeout = httpx.Timeout(limits.timeout, connect=min(10.0, limits.timeout))
    async with httpx.AsyncClient(
        follow_redirects=False,
        trust_env=False,
        timeout=timeout,
        transport=transport,
        verify=_tls(),
    ) as client:
        # no Accept unless the call sends one: absent is "anything" (RFC 9110), while httpx's
        # own `*/*` is a value an operation's declared Accept parameter may not allow; and only
        # encodings this module inflates within its bound
        client.headers.pop("accept", None)
        client.headers["accept-encoding"] = "gzip, deflate"
        async with client.stream(
            request.method, request.url, headers=headers, content=request.body
        ) as response:
            inflate = _Inflater(response.headers.get("content-encoding"))
            chunks: list[bytes] = []
            size = 0
            truncated = False
            async for raw in response.aiter_raw():
                pending = raw
                while pending and not truncated:
                    room = limits.max_response_bytes - size
                    data = inflate.feed(pending, room + 1)
                    pending = inflate.tail()
                    truncated = len(data) > room
                    chunks.append(data[:room])
                    size += min(len(data), room)
                if truncated:
                    break
            if not truncated:
                rest = inflate.flush()
                truncated = len(rest) > limits.max_response_bytes - size
                chunks.append(rest[: limits.max_response_bytes - size])
            response_headers = {k.lower(): v for k, v in response.headers.items()}
            response_headers.pop("content-encoding", None)  # the body here is decoded
            return CallResult(
                status=response.status_code,
                headers=response_headers,
                body=b"".join(chunks),
                truncated=truncated,
                elapsed=round(time.monotonic() - started, 3),
            )


def _once(
    request: PreparedRequest,
    headers: dict[str, str],
    limits: CallLimits,
    transport: httpx.AsyncBaseTransport | None,
    secrets: tuple[str, ...],
    budget: float,
) -> CallResult:
    """One exchange, the whole of it (connect, headers, body) within `budget` seconds (what is
    left of the call's `limits.timeout`)."""
    import httpx

    bounded_limits = replace(limits, timeout=max(budget, 0.001))

    async def bounded() -> CallResult:
        return await asyncio.wait_for(
            _exchange(request, headers, bounded_limits, transport), bounded_limits.timeout
        )

    try:
        return asyncio.run(bounded())
    except (TimeoutError, httpx.TimeoutException) as exc:
        sent = not isinstance(exc, httpx.ConnectTimeout)
        raise ExecutionFailed(
            f"{request.operation}: no answer within {limits.timeout:g} s", sent=sent
        ) from None
    except httpx.HTTPError as exc:
        sent = not isinstance(exc, httpx.ConnectError)
        said = _redacted(f"{exc.__class__.__name__}: {exc}", secrets)
        raise ExecutionFailed(f"{request.operation}: request failed: {said}", sent=sent) from None


def _tries(n: int) -> str:
    return f"{n} tr{'y' if n == 1 else 'ies'}"


def send(
    request: PreparedRequest,
    *,
    credential: Credential | None = None,
    environ: Mapping[str, str] | None = None,
    limits: CallLimits = CallLimits(),
    transport: httpx.AsyncBaseTransport | None = None,
    sleep: Any = time.sleep,
) -> CallResult:
    """Send `request`; the whole call (a token fetched for it, every try and every pause
    between them) within `limits.timeout`, and each body (decompressed) within
    `limits.max_response_bytes`. A call safe to repeat (a read, or a write with an
    Idempotency-Key) is tried again on 429/502/503/504 and on a failed connection, as
    `limits.retries` and `limits.max_wait` allow; a plain write is sent once, even when the API
    refused the token fetched for it. ExecutionFailed, saying how many tries it made, when no
    answer came. What comes back never carries the credential (`_scrubbed`)."""
    # size: the whole call's loop (token, tries, pauses, 401, redaction) under one deadline
    deadline = time.monotonic() + limits.timeout
    env = _SkillsOwn(os.environ if environ is None else environ)
    headers = {"User-Agent": USER_AGENT, **dict(request.headers)}
    secrets: tuple[str, ...] = ()
    client: Client | None = None
    missing: str | None = None
    values: dict[int, str] = {}
    if credential is not None:
        value = credential.header_value(env)
        if value is None:
            client = credential.client(env)
            value = credential.token(client, deadline) if client is not None else None
        if value is not None:
            values[0] = value
            secrets = (value, (env.get(credential.env_var) or "").strip())
            if client is not None:
                secrets += client.secret_forms()
        for i, slot in enumerate(credential.auth.also, 1):
            found = credential.header_value(env, slot)
            if found is not None:
                values[i] = found
                secrets += (found, (env.get(credential.slot_env(slot)) or "").strip())
        unset = ([] if value is not None else [credential.where().split(" and ")[0]]) + [
            f"${v}" for v in credential.unset_companions(env)
        ]
        if unset:
            names = ", ".join(
                s.header for i, s in enumerate(credential.auth.slots) if i not in values
            )
            missing = f"{' and '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set: sent without {names}"
        headers, url = credential.attach(headers, request.url, values)
        if url != request.url:
            request = replace(request, url=url)
    safe = repeatable(request)
    why_not = (
        f"a {request.method} without an Idempotency-Key is never sent twice: it might be done twice"
    )
    tries, waited = 0, 0.0
    attempts: list[dict[str, Any]] = []
    while True:
        tries += 1
        try:
            result = _once(
                request, headers, limits, transport, secrets, deadline - time.monotonic()
            )
        except ExecutionFailed as exc:
            said = f"{exc} ({_tries(tries)})"
            if not safe or tries > limits.retries:
                if not safe and tries == 1:
                    raise ExecutionFailed(
                        f"{said} (not tried again: {why_not})", exc.sent
                    ) from None
                raise ExecutionFailed(said, exc.sent) from None
            pause = _backoff(tries)
            if waited + pause > limits.max_wait or time.monotonic() + pause >= deadline:
                raise ExecutionFailed(said, exc.sent) from None
            attempts.append({"error": str(exc)[:200], "then_waited": round(pause, 3)})
            sleep(pause)
            waited += pause
            continue
        result = _scrubbed(result, secrets)
        result.tries, result.waited, result.attempts = tries, waited, attempts
        result.credential_missing = missing
        if result.status == 401 and client is not None and credential is not None:
            # the token fetched was refused (revoked, expired early): it is dropped, so the next
            # call fetches a fresh one; the request is sent again with it only when sending it
            # twice cannot do anything twice
            discard_token(client)
            if not safe:
                result.not_retried = (
                    "the API refused the token fetched for this call (401); a fresh one is"
                    f" fetched for the next: call again ({why_not})"
                )
                attempts.append({"status": 401})
                return result
            value = credential.token(client, deadline, fresh=True)
            values[0] = value
            headers, _ = credential.attach(headers, request.url, {0: value})
            secrets += (value,)
            client = None
            attempts.append({"status": 401, "then": "a fresh token"})
            continue
        if result.status not in RETRY_STATUSES:
            attempts.append({"status": result.status})
            return result
        asked = retry_delay(result.headers)
        pause = asked if asked is not None else _backoff(tries)
        if not safe:
            result.not_retried = why_not
            result.retry_at = _at(pause) if asked is not None else None
            attempts.append({"status": result.status})
            return result
        if (
            tries > limits.retries
            or waited + pause > limits.max_wait
            or time.monotonic() + pause >= deadline
        ):
            result.retry_at = _at(pause)  # past the bound: when the agent may try again
            attempts.append({"status": result.status})
            return result
        attempts.append({"status": result.status, "then_waited": round(pause, 3)})
        sleep(pause)
        waited += pause


def _backoff(tries: int) -> float:
    """Exponential backoff with full jitter: up to 0.5 s, 1 s, 2 s… after the first, second… try."""
    return random.uniform(0.1, 0.5 * 2 ** (tries - 1))


def _at(seconds: float) -> str:
    when = datetime.now(UTC).timestamp() + seconds
    return (
        datetime.fromtimestamp(when, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    )
