"""Fetching a spec by URL: private addresses refused after resolution, no redirects, bounded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from skillpress.platform.fetcher import (
    FetchFailed,
    FetchLimits,
    FetchRefused,
    check_address,
    fetch_spec,
)
from tests.fake_api import FakeApi, Reply, Seen


@pytest.mark.parametrize(
    ("ip", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.10", "private"),
        ("172.16.5.4", "private"),
        ("169.254.10.10", "private"),
        ("fe80::1", "private"),
        ("0.0.0.0", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("224.0.0.1", "multicast"),
        ("100.64.1.1", "non-global"),  # shared address space (carrier NAT)
        ("2002:a00:1::", "private"),  # 6to4 of 10.0.0.1
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),  # Teredo, client 10.0.0.1
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
    ],
)
def test_internal_addresses_are_refused(ip: str, kind: str) -> None:
    with pytest.raises(FetchRefused) as refused:
        check_address(ip, allow_private=False)
    assert str(refused.value).startswith(f"{ip} ") and " is a " in str(refused.value)
    assert f" {kind} address" in str(refused.value)
    assert (
        "address; fetching from it is refused (set SKILLPRESS_FETCH_ALLOW_PRIVATE=true on a trusted network)"
        in str(refused.value)
    )
    if kind == "loopback":
        assert " loopback " in str(refused.value)


def test_metadata_addresses_are_refused_even_when_private_ones_are_allowed() -> None:
    for ip in ("169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254"):
        with pytest.raises(FetchRefused, match="cloud metadata address"):
            check_address(ip, allow_private=True)
    check_address("127.0.0.1", allow_private=True)
    check_address("93.184.216.34", allow_private=False)


class _Server:
    """A spec host: each route's answer (status, headers, body, delay) as the test sets it."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, dict[str, str], bytes, float]] = {}
        self.api = FakeApi(self._answer)
        self.base = self.api.url

    def _answer(self, request: Seen) -> Reply:
        status, headers, body, delay = self.routes.get(request.path, (404, {}, b"", 0.0))
        return Reply(status, body, headers, delay=delay)

    @property
    def methods(self) -> list[str]:
        return [r.method for r in self.api.seen]


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.api.close()


LIMITS = FetchLimits(max_bytes=1000, timeout=1.0, allow_private=True)


def test_a_spec_is_fetched_with_get(server: _Server) -> None:
    server.routes["/spec.yaml"] = (200, {}, b"openapi: 3.0.0\n", 0.0)
    assert fetch_spec(server.base + "/spec.yaml", LIMITS) == b"openapi: 3.0.0\n"
    assert server.methods == ["GET"]


def test_loopback_is_refused_by_default(server: _Server) -> None:
    server.routes["/spec.yaml"] = (200, {}, b"x", 0.0)
    with pytest.raises(FetchRefused, match=r"^127.0.0.1 is a loopback address"):
        fetch_spec(server.base + "/spec.yaml", FetchLimits(max_bytes=1000))
    with pytest.raises(
        FetchRefused, match=r"^::1 is a loopback address|^127.0.0.1 is a loopback address"
    ):
        fetch_spec(
            server.base.replace("127.0.0.1", "localhost") + "/spec.yaml",
            FetchLimits(max_bytes=1000),
        )
    assert server.methods == []


def test_redirects_are_refused_not_followed(server: _Server) -> None:
    server.routes["/old"] = (
        302,
        {"Location": "http://169.254.169.254/latest/meta-data/"},
        b"",
        0.0,
    )
    with pytest.raises(
        FetchRefused,
        match=r"answered 302 \(a redirect to http://169.254.169.254/latest/meta-data/\); redirects are not followed",
    ):
        fetch_spec(server.base + "/old", LIMITS)
    assert server.methods == ["GET"]


def test_size_and_time_are_capped(server: _Server) -> None:
    server.routes["/big"] = (200, {}, b"x" * 5000, 0.0)
    with pytest.raises(FetchRefused, match=r"is 5,000 bytes, over the 1,000-byte limit"):
        fetch_spec(server.base + "/big", LIMITS)
    server.routes["/slow"] = (200, {}, b"x", 3.0)
    with pytest.raises(FetchFailed, match=r"did not answer within 1 s"):
        fetch_spec(server.base + "/slow", LIMITS)


def test_client_errors_are_refused_and_server_errors_retryable(server: _Server) -> None:
    server.routes["/gone"] = (404, {}, b"", 0.0)
    server.routes["/down"] = (503, {}, b"", 0.0)
    with pytest.raises(FetchRefused, match=r"answered 404$"):
        fetch_spec(server.base + "/gone", LIMITS)
    with pytest.raises(FetchFailed, match=r"answered 503$"):
        fetch_spec(server.base + "/down", LIMITS)


def test_urls_that_are_not_plain_http_are_refused() -> None:
    with pytest.raises(FetchRefused, match="not an http"):
        fetch_spec("file:///etc/passwd", LIMITS)
    with pytest.raises(FetchRefused, match="carries credentials"):
        fetch_spec("https://user:pw@example.com/spec.yaml", LIMITS)
    with pytest.raises(FetchFailed, match="cannot resolve"):
        fetch_spec("https://no-such-host.invalid/spec.yaml", LIMITS)
