"""Which network addresses skillpress never connects to on someone else's say-so: a spec's URL,
an OAuth 2 token endpoint a spec names. Pure: it classifies an address already resolved.

Loopback, private, link-local (cloud metadata lives there), multicast, reserved, unspecified and
every other address that is not globally routable are refused unless the operator allows private
ones; a cloud metadata address always is, and so is a private address carried inside an IPv6 one
(mapped, 6to4, Teredo, NAT64's well-known prefix).
"""

from __future__ import annotations

import ipaddress

__all__ = ["address_refusal"]

_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("fd00:ec2::254"),
    ipaddress.ip_address("100.100.100.200"),
}


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


def address_refusal(ip: str, allow_private: bool) -> tuple[str, str] | None:
    """(what the address is: `cloud metadata`, `loopback`, `private`, …; the address as named in
    a message, with the IPv4 one it carries) when it must not be reached, else None."""
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_ipv4(addr)
        if inner is not None:
            carried = address_refusal(str(inner), allow_private)
            if carried is not None:
                return carried[0], f"{ip} (carrying {inner})"
            if addr.ipv4_mapped is not None:
                return None
    if addr in _METADATA:
        return "cloud metadata", ip
    if allow_private:
        return None
    kinds = [
        ("loopback", addr.is_loopback),
        ("private", addr.is_private),
        ("link-local", addr.is_link_local),
        ("multicast", addr.is_multicast),
        ("reserved", addr.is_reserved),
        ("unspecified", addr.is_unspecified),
        # shared address space (100.64.0.0/10, carrier NAT) and anything else not routed on the
        # internet: only a globally routable address is reached
        ("non-global", not addr.is_global),
    ]
    for kind, hit in kinds:
        if hit:
            return kind, ip
    return None
