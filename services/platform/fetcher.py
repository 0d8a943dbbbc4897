"""Fetch a spec by URL: GET only, no redirects, size and time caps, and no private addresses.

The host is resolved first and every address it resolves to is checked: loopback, private,
link-local (cloud metadata lives there), multicast, reserved and unspecified addresses are
refused unless the operator allows them. The request then goes to the checked address itself
(with the original Host header and TLS server name), so a second DNS answer cannot swap in an
internal address between the check and the connection.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from services.errors import Permanent, Retryable

__all__ = ["FetchFailed", "FetchRefused", "FetchLimits", "fetch_spec", "check_address"]

_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("fd00:ec2::254"),
    ipaddress.ip_address("100.100.100.200"),
}


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


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo's client, NAT64's well-known
    prefix), or None: a private address must not pass the guard inside a public-looking one."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr.teredo is not None:
        return addr.teredo[1]
    if addr in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def check_address(ip: str, allow_private: bool) -> None:
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_ipv4(addr)
        if inner is not None:
            try:
                check_address(str(inner), allow_private)
            except FetchRefused as exc:
                raise FetchRefused(
                    str(exc).replace(f"{inner} is", f"{ip} (carrying {inner}) is", 1)
                ) from None
            if addr.ipv4_mapped is not None:
                return
    if addr in _METADATA:
        raise FetchRefused(f"{ip} is a cloud metadata address; specs are never fetched from it")
    if allow_private:
        return
    kinds = [
        ("loopback", addr.is_loopback),
        ("private", addr.is_private),
        ("link-local", addr.is_link_local),
        ("multicast", addr.is_multicast),
        ("reserved", addr.is_reserved),
        ("unspecified", addr.is_unspecified),
        # shared address space (100.64.0.0/10, carrier NAT) and anything else not routed on the
        # internet: only a globally routable address is fetched from
        ("non-global", not addr.is_global),
    ]
    for kind, hit in kinds:
        if hit:
            raise FetchRefused(
                f"{ip} is a {kind} address; fetching from it is refused (set SKILLPRESS_FETCH_ALLOW_PRIVATE=true on a trusted network)"
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
