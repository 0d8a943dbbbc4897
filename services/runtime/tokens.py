"""OAuth 2 client credentials (RFC 6749 §4.4): the runtime fetches the bearer token itself.

The client id and secret come from environment variables the operator sets (never stored, never
shown); the token URL is the spec's, and it is held to the same guard as fetching a spec: https,
an address that is globally routable (checked after resolution and connected to as checked), no
redirects, a bounded answer. A token is kept in this process until it expires (or until the API
answers 401, once), one fetch at a time per client, and is never written anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from skillpress.services.derive.addresses import address_refusal
from skillpress.services.errors import Retryable

if TYPE_CHECKING:
    import httpx

__all__ = ["Client", "TokenFailed", "bearer_token", "forget_tokens"]

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


_tokens: dict[tuple[str, str, str, tuple[str, ...]], tuple[str, float | None]] = {}
_locks: dict[tuple[str, str, str, tuple[str, ...]], threading.Lock] = {}
_guard = threading.Lock()


def forget_tokens() -> None:
    """Drop every token this process holds (a test's fresh start; a credential rotated)."""
    with _guard:
        _tokens.clear()


def bearer_token(
    client: Client,
    *,
    timeout: float = 20.0,
    allow_private: bool = False,
    fresh: bool = False,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """The access token for `client`: the one held while it is valid, else one fetched (once,
    however many calls ask at the same moment). `fresh` drops the held one first (the API
    answered 401 to it). TokenFailed when the endpoint gives none."""
    key = client.key
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
        stale = _tokens.get(key) if fresh else None
    with lock:
        with _guard:
            held = _tokens.get(key)
            if held is not None and held == stale:  # nobody fetched since the 401: drop it
                del _tokens[key]
                held = None
        now = time.monotonic()
        if held is not None and (held[1] is None or held[1] > now):
            return held[0]
        token, lifetime = _fetch(client, timeout, allow_private, transport)
        expiry = None if lifetime is None else now + max(lifetime - _EARLY, lifetime / 2)
        with _guard:
            _tokens[key] = (token, expiry)
        return token


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


def _fetch(
    client: Client, timeout: float, allow_private: bool, transport: httpx.BaseTransport | None
) -> tuple[str, float | None]:
    import httpx

    url = client.token_url
    target, host_header, tls_name = _pinned(url, allow_private)
    pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
    form = {"grant_type": "client_credentials"}
    if client.scopes:
        form["scope"] = " ".join(client.scopes)
    headers = {
        "Host": host_header,
        "Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii"),
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
        "User-Agent": "skillpress",
    }
    try:
        with (
            httpx.Client(
                follow_redirects=False, trust_env=False, timeout=timeout, transport=transport
            ) as http,
            http.stream(
                "POST",
                target,
                headers=headers,
                content=urlencode(form).encode(),
                extensions={"sni_hostname": tls_name},
            ) as response,
        ):
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_TOKEN_RESPONSE:
                    raise _refused(url, f"answered more than {MAX_TOKEN_RESPONSE:,} bytes")
            status = response.status_code
            location = response.headers.get("location", "?")
    except httpx.TimeoutException:
        raise _refused(url, f"did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise _refused(url, f"could not be reached ({type(exc).__name__})") from None
    if 300 <= status < 400:
        raise _refused(url, f"answered {status} (a redirect to {location}): not followed")
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise _refused(url, f"answered {status} without a JSON object")
    if status >= 400:
        error = str(answer.get("error") or "no error code")[:100]
        said = str(answer.get("error_description") or "")[:300]
        said = said.replace(client.client_secret, "<secret>") if client.client_secret else said
        raise _refused(
            url,
            f"refused the client credentials: {status} {error}" + (f" ({said})" if said else ""),
        )
    token = answer.get("access_token")
    if not isinstance(token, str) or not token.strip():
        raise _refused(url, "answered without an access_token")
    kind = answer.get("token_type")
    if isinstance(kind, str) and kind.lower() != "bearer":
        raise _refused(url, f"gave a {kind!r} token; only bearer tokens are sent")
    lifetime = answer.get("expires_in")
    if isinstance(lifetime, str) and lifetime.isdigit():
        lifetime = int(lifetime)
    if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or lifetime <= 0:
        lifetime = None
    return token.strip(), None if lifetime is None else float(lifetime)
