"""Send a prepared request with httpx: the operator's credential attached, no redirects, bounded.

The credential comes from an environment variable the operator names, never from the model's
arguments; only the variable's *name* is ever stored or printed, and no error ever echoes it.

The whole exchange is bounded, headers included (a server that drips one header line a second
is cut at the deadline), and so is the body, counted as it is decompressed (a gzip bomb stops at
the limit, not after inflating). A call that is safe to repeat (a read, or a write carrying an
identity's Idempotency-Key) is tried again on 429, 502, 503 and 504 (after `Retry-After`, up to
a bound) and on a connection that failed; a plain write never is, and its result says why.
"""
# size: one exchange and its bounds, retries, redaction and the result an agent gets

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import json
import os
import random
import re
import ssl
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from skillpress.errors import Refused, Retryable
from skillpress.format.credentials import (
    credential_env_refusal,
    default_credential_env,
    skillpress_own,
)
from skillpress.runtime.calling.fit import AGENT_BUDGET, close_json, describe_body, fit_json
from skillpress.runtime.calling.redaction import scrub_bytes, scrub_text, secret_forms
from skillpress.runtime.calling.request import PreparedRequest
from skillpress.runtime.calling.tokens import Client, TokenFailed, bearer_token, discard_token
from skillpress.runtime.package.model import AuthHeader

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CallLimits",
    "CallResult",
    "Credential",
    "ExecutionFailed",
    "credential_env",
    "default_env_var",
    "repeatable",
    "send",
]

USER_AGENT = "skillpress"


default_env_var = default_credential_env  # `<SLUG>_API_KEY`: the runtime's name for it


def credential_env(slug: str, auth: AuthHeader | None, given: str | None = None) -> str:
    """The variable a skill's credential is read from: the one a caller names (its runtime's own
    configuration: any variable but skillpress's own settings; Refused otherwise), else the one
    the skill records (chosen when it was imported; the loader holds it to `<SLUG>_…`), else
    `<SLUG>_API_KEY`."""
    if given and (why := credential_env_refusal(given)) is not None:
        raise Refused(f"the credential variable named for {slug}: {why}")
    return given or (auth.env if auth is not None else None) or default_credential_env(slug)


class ExecutionFailed(RuntimeError, Retryable):
    """The request was sent (or tried) and no complete answer came back; `sent` says whether it
    may have reached the server (a connection refused never did)."""

    problem = "call-failed"
    status = 502

    def __init__(self, message: str, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent


@dataclass(frozen=True)
class Credential:
    """Where the credential comes from: the header it goes in and the variable that holds it;
    for a skill whose scheme has an OAuth 2 client-credentials flow, also the two variables
    holding a client id and secret the token is fetched with when that variable is not set."""

    auth: AuthHeader
    env_var: str
    allow_private_token_url: bool = False  # SKILLPRESS_FETCH_ALLOW_PRIVATE, for the token URL

    def client_vars(self) -> tuple[str, str]:
        """`<SLUG>_CLIENT_ID` and `<SLUG>_CLIENT_SECRET` (from `<SLUG>_API_KEY`, or after the
        variable named instead)."""
        base = self.env_var.removesuffix("_API_KEY")
        return f"{base}_CLIENT_ID", f"{base}_CLIENT_SECRET"

    def client(self, environ: Mapping[str, str]) -> Client | None:
        """The client credentials set in the environment, when the skill can use them."""
        if not self.auth.token_url:
            return None
        id_var, secret_var = self.client_vars()
        client_id = (environ.get(id_var) or "").strip()
        secret = (environ.get(secret_var) or "").strip()
        if not client_id or not secret:
            return None
        return Client(self.auth.token_url, client_id, secret, self.auth.scopes)

    def present(self, environ: Mapping[str, str]) -> bool:
        """Whether every credential can be attached: each variable (the first one's, or a client
        id and secret)."""
        first = bool((environ.get(self.env_var) or "").strip()) or self.client(environ) is not None
        return first and not self.unset_companions(environ)

    def where(self) -> str:
        """The variables the credentials are read from, for a message."""
        said = f"${self.env_var}"
        if self.auth.token_url:
            id_var, secret_var = self.client_vars()
            said += f" (or ${id_var} and ${secret_var})"
        return " and ".join([said, *(f"${self.slot_env(c)}" for c in self.auth.also)])

    def slot_env(self, slot: AuthHeader) -> str:
        """The variable a credential is read from: the first one's `env_var`; one sent beside it,
        its own (recorded at derive), else `<BASE>_<NAME>`."""
        if slot is self.auth:
            return self.env_var
        if slot.env:
            return slot.env
        base = self.env_var.removesuffix("_API_KEY")
        return f"{base}_{''.join(c if c.isalnum() else '_' for c in slot.header).upper()}"

    def unset_companions(self, environ: Mapping[str, str]) -> list[str]:
        """The variables of credentials sent beside the first one that are not set."""
        return [
            self.slot_env(c)
            for c in self.auth.also
            if not (environ.get(self.slot_env(c)) or "").strip()
        ]

    def header_value(
        self, environ: Mapping[str, str], slot: AuthHeader | None = None
    ) -> str | None:
        """A credential's value from its variable (the first one's by default): surrounding
        whitespace (a line end read from a file or `.env`) stripped; a bearer token prefixed;
        basic credentials `user:password` (or a key alone, as the user name with no password, as
        Stripe takes it) encoded as RFC 7617 says."""
        slot = slot or self.auth
        raw = (environ.get(self.slot_env(slot)) or "").strip()
        if not raw:
            return None
        if slot.kind == "bearer" and not raw.lower().startswith("bearer "):
            return f"Bearer {raw}"
        if slot.kind == "basic" and not raw.lower().startswith("basic "):
            pair = raw if ":" in raw else f"{raw}:"
            return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        return raw

    def attach(
        self, headers: dict[str, str], url: str, values: Mapping[int, str]
    ) -> tuple[dict[str, str], str]:
        """`headers` and `url` with each credential that has a value (by its slot's position) where
        the spec puts it: a header, the query, or a cookie."""
        out, target = dict(headers), url
        for i, slot in enumerate(self.auth.slots):
            value = values.get(i)
            if value is None:
                continue
            if slot.where == "query":
                joiner = "&" if urlsplit(target).query else ("" if target.endswith("?") else "?")
                target += joiner + urlencode({slot.header: value})
            elif slot.where == "cookie":
                cookie = f"{slot.header}={quote(value, safe='')}"
                out["Cookie"] = f"{out['Cookie']}; {cookie}" if out.get("Cookie") else cookie
            else:
                out[slot.header] = value
        return out, target

    def placeholder(self) -> dict[str, str]:
        """What a dry run shows in the headers instead of a header credential's value (a query
        or cookie credential is shown where it goes, `show`)."""
        out: dict[str, str] = {}
        for slot in self.auth.slots:
            if slot.where != "header":
                continue
            said = f"<from ${self.slot_env(slot)}>"
            if slot is self.auth and self.auth.token_url:
                id_var, secret_var = self.client_vars()
                said = (
                    f"<from ${self.env_var}, or a token fetched with ${id_var} and ${secret_var}>"
                )
            out[slot.header] = said
        return out

    def show(self, shown: dict[str, Any]) -> dict[str, Any]:
        """A request as a dry run prints it (`PreparedRequest.as_dict`) with every credential as
        the variable it comes from, where it goes: never its value."""
        out = {**shown, "headers": {**shown["headers"], **self.placeholder()}}
        for slot in self.auth.slots:
            said = f"<from ${self.slot_env(slot)}>"
            if slot.where == "query":
                url = str(out["url"])
                out["url"] = url + ("&" if urlsplit(url).query else "?") + f"{slot.header}={said}"
            elif slot.where == "cookie":
                old = out["headers"].get("Cookie")
                out["headers"]["Cookie"] = (
                    f"{old}; {slot.header}={said}" if old else f"{slot.header}={said}"
                )
        return out

    def token(self, client: Client, deadline: float, fresh: bool = False) -> str:
        """`Bearer <token>` fetched with `client` by `deadline` (a `time.monotonic()` moment: the
        call's own, so a token endpoint that drips its answer cannot hold the call past it);
        ExecutionFailed, never sent, when none comes."""
        try:
            token = bearer_token(
                client,
                timeout=min(deadline - time.monotonic(), 20.0),
                allow_private=self.allow_private_token_url,
                fresh=fresh,
            )
        except TokenFailed as exc:
            raise ExecutionFailed(str(exc), sent=False) from None
        return f"Bearer {token}"


@dataclass(frozen=True)
class CallLimits:
    """A call's bounds: the whole exchange's time, the body's bytes (as decompressed), and how
    often and how long a call safe to repeat is tried again."""

    timeout: float = 30.0
    max_response_bytes: int = 4 * 1024 * 1024
    retries: int = 2  # tries after the first, for a call that is safe to repeat
    max_wait: float = 30.0  # seconds waited in all between tries (Retry-After counted whole)


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
# an answer's headers an agent is given at most, and the characters of each: what an API sends
# there counts against the agent's budget like its body
AGENT_HEADER_COUNT = 24
AGENT_HEADER_CHARS = 512
RETRY_STATUSES = (429, 502, 503, 504)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


_DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII digits only: `²` is a digit to str.isdigit
_LONGEST_WAIT = 366 * 24 * 3600.0  # a Retry-After past a year is no instruction anyone keeps


def _number(text: str) -> int | None:
    return int(text) if _DIGITS.fullmatch(text) else None


def rate_limit(
    headers: Mapping[str, str], ignored: list[str] | None = None
) -> dict[str, Any] | None:
    """The rate limit an answer states, compact: `limit`, `remaining`, `reset` (seconds, as the
    API says it), from the IETF RateLimit fields, the X-RateLimit family or Retry-After; None
    when it states none. A value that is not a number is left out (and said in `ignored`)."""
    found: dict[str, Any] = {}
    combined = headers.get("ratelimit")  # RateLimit: limit=100, remaining=50, reset=5
    if combined:
        for part in re.split(r"[;,]", combined):
            key, _, value = part.strip().partition("=")
            number = _number(value.strip())
            if key in ("limit", "remaining", "reset") and number is not None:
                found[key] = number
    for key in ("limit", "remaining", "reset", "used"):
        for name in (f"ratelimit-{key}", f"x-ratelimit-{key}", f"x-rate-limit-{key}"):
            value = headers.get(name)
            if value is None or key in found:
                continue
            number = _number(value.strip().split(",")[0].split(";")[0].strip())
            if number is not None:
                found[key] = number
            elif ignored is not None:
                ignored.append(f"{name}: {_quoted(value)} is not a number")
    after = headers.get("retry-after")
    if after is not None:
        if retry_delay(headers) is not None:
            found["retry_after"] = after.strip()
        elif ignored is not None:
            ignored.append(f"retry-after: {_quoted(after)} is neither seconds nor a date")
    return found or None


def _quoted(value: str) -> str:
    return json.dumps(value[:40] + ("…" if len(value) > 40 else ""), ensure_ascii=False)


def retry_delay(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """What `Retry-After` asks for, in seconds (delta-seconds or an HTTP date), or None when it
    asks for nothing usable (not a number, not a date, more than a year)."""
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    number = _number(value)
    if number is not None:
        return float(number) if number <= _LONGEST_WAIT else None
    if len(value) > 64:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        wait = max(0.0, when.timestamp() - (time.time() if now is None else now))
    except (OverflowError, OSError, ValueError):
        return None
    return wait if wait <= _LONGEST_WAIT else None


@dataclass
class CallResult:
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    elapsed: float = 0.0
    tries: int = 1
    waited: float = 0.0  # seconds spent waiting between tries
    not_retried: str | None = None  # why an answer worth another try did not get one
    retry_at: str | None = None  # when to try again (UTC), where the bound was passed
    next: dict[str, Any] | None = None  # the next page: its arguments, or its page_url
    next_refused: str | None = None  # why a next page the answer named is not offered
    attempts: list[dict[str, Any]] = field(
        default_factory=list
    )  # each try: status or error, pause after
    credential_missing: str | None = None  # sent without the credential, and why
    ignored: list[str] = field(default_factory=list)  # answer headers that did not parse

    def binary(self) -> dict[str, Any] | None:
        """The body described (type, size) when it is not text (audio, an image, a zip), else
        None."""
        found = describe_body(self.body, self.headers.get("content-type", ""))
        return found if found is not None and found.get("binary") else None

    def body_value(self) -> Any:
        """The body as JSON when it is JSON (nested at most MAX_JSON_DEPTH deep), else as text."""
        text = self.body.decode("utf-8", "replace")
        if not self.truncated and "json" in self.headers.get("content-type", ""):
            parsed = parse_json(text)
            if parsed is not _NOT_JSON:
                return parsed
        return text

    def agent_headers(self) -> dict[str, str]:
        """The headers an agent acts on (what came back, where it went, the next page, the rate
        limit, a version to send back): never cookies or the transport's own; at most
        AGENT_HEADER_COUNT of them, each value at most AGENT_HEADER_CHARS (cut, and said so)."""
        out: dict[str, str] = {}
        for k, v in self.headers.items():
            if not (k in _AGENT_HEADERS or k.startswith(_AGENT_PREFIXES)):
                continue
            if len(out) == AGENT_HEADER_COUNT:
                out["x-skillpress-headers-left-out"] = "more headers than an agent is given"
                break
            long = len(v) > AGENT_HEADER_CHARS
            out[k] = v[:AGENT_HEADER_CHARS] + f"… ({len(v)} characters)" if long else v
        return out

    def as_dict(self, for_agent: bool = False) -> dict[str, Any]:
        """The result as JSON: status, headers (`for_agent`: only those an agent acts on), the
        body, and what an agent needs to act on it: how many tries it took, why it was not tried
        again, when to try again, the rate limit."""
        out: dict[str, Any] = {"status": self.status}
        if self.truncated:
            out["truncated"] = True
        out["headers"] = self.agent_headers() if for_agent else self.headers
        binary = self.binary()
        out["body"] = self.body_value() if binary is None else binary
        if binary is not None and not for_agent:  # its bytes exactly, for a program to take
            out["body_base64"] = base64.b64encode(self.body).decode("ascii")
        about = self._about()
        if for_agent:  # sized for a model: everything it is sent counted against its budget
            self._fit_body(out, about)
        return out | about

    def _fit_body(self, out: dict[str, Any], about: dict[str, Any]) -> None:
        """`out["body"]` cut to what is left of the agent's budget once everything else it is
        sent (the headers, the next page, what is said about the call) is counted: valid JSON
        that says what was left out."""
        described = describe_body(self.body, self.headers.get("content-type", ""))
        if described is not None:
            out["body"] = described
            return
        note: list[dict[str, Any]] = []
        value = out["body"]
        if self.truncated and "json" in self.headers.get("content-type", ""):
            value, note = closed_prefix(self.body)
        rest = {**out, **about, "body": None, "cut": [{"at": "$", "items_of": 0, "kept": 0}] * 4}
        spent = len(json.dumps(rest, ensure_ascii=False, separators=(",", ":")).encode())
        out["body"], cuts = fit_json(value, max(AGENT_BUDGET - spent, 1024))
        cuts = note + cuts
        if cuts:
            out["cut"] = cuts

    def _about(self) -> dict[str, Any]:
        """What the result says about the call besides its answer (a redirect not followed, its
        tries, the rate limit, the next page, …)."""
        out: dict[str, Any] = {}
        if self.status in (301, 302, 303, 307, 308):
            location = self.headers.get("location") or ""
            out["redirect_not_followed"] = location[:AGENT_HEADER_CHARS]
        if self.tries > 1:
            out["tries"], out["waited"] = self.tries, round(self.waited, 3)
        if self.not_retried:
            out["not_retried"] = self.not_retried
        if self.retry_at:
            out["retry_at"] = self.retry_at
        ignored = list(self.ignored)[:AGENT_HEADER_COUNT]
        limit = rate_limit(self.headers, ignored)
        if limit:
            out["rate_limit"] = limit
        if ignored:
            out["ignored_headers"] = ignored
        if self.credential_missing:
            out["credential_missing"] = self.credential_missing
        if self.next is not None:
            out["next"] = self.next
        if self.next_refused:
            out["next_refused"] = self.next_refused
        return out


MAX_JSON_DEPTH = 100  # an answer nested deeper is given as its text
_NOT_JSON = object()


def json_depth(value: Any) -> int:
    """How deeply `value` nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((v, depth) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_json(text: str) -> Any:
    """`text` as JSON, or `_NOT_JSON` when it is not, or nests past MAX_JSON_DEPTH (a hostile
    answer 10,000 levels deep is text, never a RecursionError)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON
    return value if json_depth(value) <= MAX_JSON_DEPTH else _NOT_JSON


def closed_prefix(body: bytes) -> tuple[Any, list[dict[str, Any]]]:
    """A JSON body cut by the read limit, as the value its complete start makes: the text up to
    the last element that ended, its open arrays and objects closed (the structure the agent's
    cut then works on), and a note of the cut; the text itself when no element ended."""
    text = body.decode("utf-8", "replace")
    closed = close_json(text)
    value = parse_json(closed) if closed is not None else _NOT_JSON
    note = [{"at": "$", "read_limit": len(body), "kept_whole_elements": value is not _NOT_JSON}]
    return (text if value is _NOT_JSON else value), note


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
