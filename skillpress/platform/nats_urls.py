"""NATS URLs as settings and the embedded server give them: one server, or a cluster's
comma-separated list, any of them carrying the user and password the embedded server generated
(standard library only: a command line reads them without importing the NATS client)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["as_user", "carries_credentials", "server_list", "shown_url"]


def server_list(url: str) -> list[str]:
    """The servers a NATS URL names: one, or a cluster's comma-separated (any node will do)."""
    return [u.strip() for u in url.split(",") if u.strip()]


def shown_url(url: str) -> str:
    """A NATS URL as it may be shown or logged: each server without the user and password it
    may carry (the embedded server's are generated into the URL its own processes use)."""
    out = []
    for server in server_list(url):
        parts = urlsplit(server if "://" in server else f"nats://{server}")
        host = parts.netloc.rpartition("@")[2]
        out.append(urlunsplit(parts._replace(netloc=host)))
    return ",".join(out)


def as_user(url: str, user: str, password: str) -> str:
    """Each server of a NATS URL with `user` and `password` (in place of any it carries)."""
    from urllib.parse import quote

    out = []
    for server in server_list(url):
        parts = urlsplit(server if "://" in server else f"nats://{server}")
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"
        out.append(urlunsplit(parts._replace(netloc=netloc)))
    return ",".join(out)


def carries_credentials(url: str) -> bool:
    return any("@" in urlsplit(s if "://" in s else f"nats://{s}").netloc for s in server_list(url))
