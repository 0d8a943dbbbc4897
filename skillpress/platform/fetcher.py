"""Fetch a spec by URL: GET only, no redirects, size and time caps, and no private addresses.

The host is resolved first and every address it resolves to is checked: loopback, private,
link-local (cloud metadata lives there), multicast, reserved and unspecified addresses are
refused unless the operator allows them. The request then goes to the checked address itself
(with the original Host header and TLS server name), so a second DNS answer cannot swap in an
internal address between the check and the connection.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from skillpress.errors import Permanent, Retryable
from skillpress.format.addresses import address_refusal

__all__ = ["FetchFailed", "FetchRefused", "FetchLimits", "fetch_spec", "check_address"]


class FetchRefused(Permanent):
    """The URL or its answer is not acceptable; retrying will not change that."""

    problem = "fetch-refused"


class FetchFailed(Retryable):
    """The fetch did not complete (network, timeout, a 5xx): worth retrying."""


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int
    timeout: float = 20.0
    allow_private: bool = False


def check_address(ip: str, allow_private: bool) -> None:
    """FetchRefused when `ip` is an address specs are never fetched from."""
    refusal = address_refusal(ip, allow_private)
    if refusal is None:
        return
    kind, named = refusal
    if kind == "cloud metadata":
        raise FetchRefused(f"{named} is a cloud metadata address; specs are never fetched from it")
    raise FetchRefused(
        f"{named} is a {kind} address; fetching from it is refused (set SKILLPRESS_FETCH_ALLOW_PRIVATE=true on a trusted network)"
    )


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchFailed(f"cannot resolve {host}: {exc.strerror}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def fetch_spec(
    url: str, limits: FetchLimits, transport: httpx.BaseTransport | None = None
) -> bytes:
    """The document at `url`, or FetchRefused / FetchFailed saying why not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchRefused(f"{url!r} is not an http(s) URL")
    if parts.username or parts.password:
        raise FetchRefused("the URL carries credentials; skillpress never stores credentials")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = _resolve(host, port)
    for ip in addresses:
        check_address(ip, limits.allow_private)
    ip = addresses[0]
    netloc = f"[{ip}]" if ":" in ip else ip
    target = urlunsplit((parts.scheme, f"{netloc}:{port}", parts.path or "/", parts.query, ""))
    headers = {
        "Host": parts.netloc.rsplit("@", 1)[-1],
        "Accept": "application/json, application/yaml, text/yaml, */*;q=0.5",
        "User-Agent": "skillpress-fetch",
    }
    deadline = time.monotonic() + limits.timeout
    try:
        with (
            httpx.Client(
                follow_redirects=False, trust_env=False, timeout=limits.timeout, transport=transport
            ) as client,
            client.stream(
                "GET", target, headers=headers, extensions={"sni_hostname": host}
            ) as response,
        ):
            if 300 <= response.status_code < 400:
                raise FetchRefused(
                    f"{url} answered {response.status_code} (a redirect to {response.headers.get('location', '?')}); redirects are not followed: give the final URL"
                )
            if response.status_code >= 500:
                raise FetchFailed(f"{url} answered {response.status_code}")
            if response.status_code >= 400:
                raise FetchRefused(f"{url} answered {response.status_code}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > limits.max_bytes:
                raise FetchRefused(
                    f"{url} is {int(declared):,} bytes, over the {limits.max_bytes:,}-byte limit"
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > limits.max_bytes:
                    raise FetchRefused(f"{url} is over the {limits.max_bytes:,}-byte limit")
                if time.monotonic() > deadline:
                    raise FetchFailed(f"{url} took longer than {limits.timeout:g} s")
                chunks.append(chunk)
            return b"".join(chunks)
    except httpx.TimeoutException:
        raise FetchFailed(f"{url} did not answer within {limits.timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise FetchFailed(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None
