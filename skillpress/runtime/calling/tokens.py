"""OAuth 2 client credentials (RFC 6749 §4.4): the runtime fetches the bearer token itself.

The client id and secret come from environment variables the operator sets (never stored, never
shown); the token URL is the spec's, and it is held to the same guard as fetching a spec: https,
an address that is globally routable (checked after resolution and connected to as checked), no
redirects, a bounded answer. A token is kept in this process until it expires (or until the API
answers 401, once), one fetch at a time per client, and is never written anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from skillpress.errors import Retryable
from skillpress.format.addresses import address_refusal

__all__ = ["Client", "TokenFailed", "bearer_token", "discard_token", "forget_tokens"]

MAX_TOKEN_RESPONSE = 64 * 1024
_EARLY = 30.0  # seconds before its expiry a token is fetched again


class TokenFailed(RuntimeError, Retryable):
    """No token came from the token endpoint; the message says why, never with the secret."""

    problem = "token-failed"
    status = 502


@dataclass(frozen=True)
class Client:
    """A client's credentials for one token endpoint, and the scopes it asks for."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str, tuple[str, ...]]:
        digest = hashlib.sha256(self.client_secret.encode()).hexdigest()
        return (self.token_url, self.client_id, digest, self.scopes)

    def basic(self) -> str:
        """The Basic authorization the token request carries (RFC 6749 §2.3.1: each part
        form-encoded first)."""
        pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
        return "Basic " + base64.b64encode(pair.encode()).decode("ascii")

    def secret_forms(self) -> tuple[str, ...]:
        """Every form the secret may come back in (as it is, form-encoded, inside the Basic
        header or its base64 alone): what is taken out of any text that leaves the runtime."""
        basic = self.basic()
        plain = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        return tuple(
            f
            for f in (
                self.client_secret,
                quote(self.client_secret, safe=""),
                basic,
                basic.removeprefix("Basic "),
                plain,
            )
            if f
        )

    def scrub(self, text: str, *more: str) -> str:
        """`text` without the secret in any of its forms (nor any of `more`, a token)."""
        for form in sorted({*self.secret_forms(), *more}, key=len, reverse=True):
            if form and len(form) >= 4:
                text = text.replace(form, "<secret>")
        return text


_tokens: dict[tuple[str, str, str, tuple[str, ...]], tuple[str, float | None]] = {}
_locks: dict[tuple[str, str, str, tuple[str, ...]], threading.Lock] = {}
_guard = threading.Lock()


def forget_tokens() -> None:
    """Drop every token this process holds (a test's fresh start; a credential rotated)."""
    with _guard:
        _tokens.clear()


def discard_token(client: Client) -> None:
    """Drop the token held for `client` (the API refused it): the next call fetches a fresh one."""
    with _guard:
        _tokens.pop(client.key, None)


def bearer_token(
    client: Client,
    *,
    timeout: float = 20.0,
    allow_private: bool = False,
    fresh: bool = False,
) -> str:
    """The access token for `client`: the one held while it is valid, else one fetched (once,
    however many calls ask at the same moment), all of it, waiting for another caller's fetch
    included, within `timeout` seconds. `fresh` drops the held one first (the API answered 401
    to it). A token whose `expires_in` is zero or less is used for this call and not kept.
    TokenFailed when the endpoint gives none in time."""
    started = time.monotonic()
    key = client.key
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
        stale = _tokens.get(key) if fresh else None
    if timeout <= 0 or not lock.acquire(timeout=timeout):
        raise _refused(client.token_url, "did not answer within the call's timeout")
    try:
        with _guard:
            held = _tokens.get(key)
            if held is not None and held == stale:  # nobody fetched since the 401: drop it
                del _tokens[key]
                held = None
        now = time.monotonic()
        if held is not None and (held[1] is None or held[1] > now):
            return held[0]
        left = timeout - (now - started)
        token, lifetime = _fetch(client, left, allow_private)
        if lifetime is not None and lifetime <= 0:
            return token  # already expired, as the endpoint says: good for this call only
        expiry = None if lifetime is None else now + max(lifetime - _EARLY, lifetime / 2)
        with _guard:
            _tokens[key] = (token, expiry)
        return token
    finally:
        lock.release()


def _refused(url: str, why: str) -> TokenFailed:
    return TokenFailed(f"the token endpoint {url} {why}")


def _pinned(url: str, allow_private: bool) -> tuple[str, str, str]:
    """(the URL with the checked address in place of the host, the Host header, the TLS name)."""
    parts = urlsplit(url)
    if parts.scheme != "https" and not (allow_private and parts.scheme == "http"):
        raise _refused(url, "is not https: a client secret is only ever sent over TLS")
    host = parts.hostname
    if not host:
        raise _refused(url, "has no host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise _refused(url, f"cannot be resolved ({exc.strerror})") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for ip in addresses:
        refusal = address_refusal(ip, allow_private)
        if refusal is not None:
            kind, named = refusal
            raise _refused(
                url,
                f"resolves to {named}, a {kind} address: no client secret is sent there"
                " (set SKILLPRESS_FETCH_ALLOW_PRIVATE=true on a trusted network)",
            )
    ip = addresses[0]
    netloc = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return target, parts.netloc.rsplit("@", 1)[-1], host


def _fetch(client: Client, timeout: float, allow_private: bool) -> tuple[str, float | None]:
    """One token request, the whole exchange (connect, headers, body) within `timeout`: a token
    endpoint that drips its answer a byte a second is cut at the deadline."""
    url = client.token_url
    if timeout <= 0:
        raise _refused(url, "did not answer within the call's timeout")
    target, host_header, tls_name = _pinned(url, allow_private)
    form = {"grant_type": "client_credentials"}
    if client.scopes:
        form["scope"] = " ".join(client.scopes)
    headers = {
        "Host": host_header,
        "Authorization": client.basic(),
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
        "User-Agent": "skillpress",
    }
    try:
        status, location, body = asyncio.run(
            asyncio.wait_for(_exchange(target, headers, form, tls_name, timeout), timeout)
        )
    except (TimeoutError, _Timeout):
        raise _refused(url, "did not answer within the call's timeout") from None
    except _Unreachable as exc:
        raise _refused(url, f"could not be reached ({exc})") from None
    if 300 <= status < 400:
        raise _refused(
            url, f"answered {status} (a redirect to {client.scrub(location)}): not followed"
        )
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        answer = None
    if not isinstance(answer, dict):
        raise _refused(url, f"answered {status} without a JSON object")
    token = answer.get("access_token")
    if status >= 400:
        # whatever field of the answer carries them, the secret and any token stay out
        more = (token,) if isinstance(token, str) else ()
        error = client.scrub(str(answer.get("error") or "no error code"), *more)[:100]
        said = client.scrub(str(answer.get("error_description") or ""), *more)[:300]
        raise _refused(
            url,
            f"refused the client credentials: {status} {error}" + (f" ({said})" if said else ""),
        )
    if not isinstance(token, str) or not token.strip():
        raise _refused(url, "answered without an access_token")
    kind = answer.get("token_type")
    if isinstance(kind, str) and kind.lower() != "bearer":
        raise _refused(
            url, f"gave a {client.scrub(kind, token)[:40]!r} token; only bearer tokens are sent"
        )
    lifetime = answer.get("expires_in")
    if isinstance(lifetime, str) and re.fullmatch(r"-?[0-9]{1,12}", lifetime.strip()):
        lifetime = int(lifetime)
    if isinstance(lifetime, bool) or not isinstance(lifetime, int | float):
        lifetime = None  # not said: kept until the API refuses it
    elif lifetime != lifetime or lifetime in (float("inf"), float("-inf")):
        lifetime = 0  # not a number: not kept
    return token.strip(), None if lifetime is None else float(lifetime)


class _Timeout(Exception):
    pass


class _Unreachable(Exception):
    pass


async def _exchange(
    target: str, headers: dict[str, str], form: dict[str, str], tls_name: str, timeout: float
) -> tuple[int, str, bytes]:
    import httpx

    try:
        async with (
            httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout) as http,
            http.stream(
                "POST",
                target,
                headers=headers,
                content=urlencode(form).encode(),
                extensions={"sni_hostname": tls_name},
            ) as response,
        ):
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_TOKEN_RESPONSE:
                    raise TokenFailed(
                        f"the token endpoint answered more than {MAX_TOKEN_RESPONSE:,} bytes"
                    )
            return response.status_code, response.headers.get("location", "?"), body
    except httpx.TimeoutException:
        raise _Timeout() from None
    except httpx.HTTPError as exc:
        raise _Unreachable(type(exc).__name__) from None
