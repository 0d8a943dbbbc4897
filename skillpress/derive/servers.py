"""Where an API lives: server URLs resolved to absolute base URLs, and their hosts."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

__all__ = [
    "server_from_list",
    "swagger2_server",
    "host_of",
    "join_url",
    "placeholder_host",
    "stand_in_server",
    "relative_server",
]

_VAR = re.compile(r"\{([^{}]+)\}")


def _substitute(url: str, variables: Any) -> str:
    variables = variables if isinstance(variables, dict) else {}

    def one(match: re.Match[str]) -> str:
        spec = variables.get(match.group(1))
        if isinstance(spec, dict):
            default = spec.get("default")
            if default is None and isinstance(spec.get("enum"), list) and spec["enum"]:
                default = spec["enum"][0]
            if default is not None:
                return str(default)
        return match.group(0)

    return _VAR.sub(one, url)


def placeholder_host(url: str) -> str | None:
    """The host of `url` when it is a stand-in for the operator's own (`your-domain.atlassian.net`,
    `kubernetes.local`), which no call should go to until the real one is given."""
    host = (urlsplit(url if "//" in url else "//" + url).hostname or "").lower()
    if host.endswith((".local", ".localdomain", ".invalid")) or any(
        label.startswith(("your", "my-", "my_")) for label in host.split(".")
    ):
        return host
    return None


def _absolute(url: str, base: str | None) -> str | None:
    """An absolute http(s) URL for `url`, resolved against `base` (RFC 3986) when relative; None
    when there is none, or its host is a placeholder."""
    if url.startswith("//"):  # scheme-relative (`//app.files.com/api/rest/v1`): an API is https
        url = "https:" + url
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc and "{" not in parts.netloc:
        return None if placeholder_host(url) else url.rstrip("/")
    if parts.scheme or not base:
        return None
    joined = urljoin(base, url)
    jp = urlsplit(joined)
    if jp.scheme in ("http", "https") and jp.netloc and "{" not in jp.netloc:
        return None if placeholder_host(joined) else joined.rstrip("/")
    return None


def server_from_list(servers: Any, base_url: str | None) -> tuple[str | None, str | None]:
    """(absolute base URL or None, the raw first server URL) from an OpenAPI 3 `servers` list."""
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return (base_url.rstrip("/") if base_url else None), None
    raw = servers[0].get("url")
    if not isinstance(raw, str) or not raw.strip():
        return (base_url.rstrip("/") if base_url else None), None
    url = _substitute(raw.strip(), servers[0].get("variables"))
    return _absolute(url, base_url), raw


def relative_server(servers: Any) -> bool:
    """Whether an OpenAPI 3 `servers` list's first URL is relative (`/api/v1`, `v2`), read after
    its variables are filled in: `{scheme}://developer.uspto.gov` names a host."""
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return False
    raw = servers[0].get("url")
    if not isinstance(raw, str) or not raw.strip():
        return False
    url = _substitute(raw.strip(), servers[0].get("variables"))
    return not re.match(r"^([A-Za-z][A-Za-z0-9+.-]*:|//)", url)


def override_server(servers: Any, given: str | None, own: str | None = None) -> str | None:
    """An operation's or path's `servers`, where the operator gave a base URL (`given`, in place
    of the document's own server, `own`): a relative server is resolved against it; an absolute
    one on the API's own host is rebased onto it (the operator says where the API lives: a
    proxy, a mock, another region); one on another host (GitHub's `uploads.github.com`) is
    kept, as it is when the base URL given is the document's own."""
    resolved, raw = server_from_list(servers, given or own)
    if not given or (raw and resolved and relative_server(servers)):
        return resolved  # a relative one against the base URL, given or the document's own
    theirs, _ = server_from_list(servers, None)
    if own and theirs and host_of(theirs) != host_of(own):
        return theirs  # another host: the operator's base URL is for the API's own
    if own and theirs and theirs.startswith(own.rstrip("/")):
        return given.rstrip("/") + theirs[len(own.rstrip("/")) :]
    root = _root_of(given, own)
    if root is not None and theirs:  # the own host at a shorter path (GHES's `/setup` beside
        return root + urlsplit(theirs).path.rstrip("/")  # `/api/v3`): there under the given
    return given.rstrip("/")


def stand_in_server(servers: Any, own_servers: Any) -> str | None:
    """An operation's or path's first server (its variables filled in) when its host is a
    placeholder (`placeholder_host`) that the document's own first server (`own_servers`, its
    `servers` list) does not share: a host of the operator's beside the API's, which no base URL
    given for the API names; None otherwise."""
    url = _first_server(servers)
    host = placeholder_host(url) if url and "//" in url else None
    if url is None or host is None:
        return None
    own = _first_server(own_servers)
    if own is not None and placeholder_host(own) == host:
        return None  # the document's own stand-in: the base URL given answers it
    return url.rstrip("/")


def _first_server(servers: Any) -> str | None:
    """The first URL of a `servers` list, its variables filled in."""
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return None
    raw = servers[0].get("url")
    if not isinstance(raw, str) or not raw.strip():
        return None
    return _substitute(raw.strip(), servers[0].get("variables"))


def _root_of(given: str, own: str | None) -> str | None:
    """Where the own server's host is under the base URL given: `given` without the path the
    own server adds (`https://ghe.corp/api/v3` for `{protocol}://{hostname}/api/v3` →
    `https://ghe.corp`); None when the given URL does not end in that path."""
    if not own:
        return None
    own_path = urlsplit(own).path.rstrip("/")
    given = given.rstrip("/")
    if not own_path or not given.endswith(own_path):
        return None
    return given[: -len(own_path)]


def swagger2_server(doc: dict[str, Any], base_url: str | None) -> tuple[str | None, str | None]:
    host = doc.get("host")
    base_path = doc.get("basePath") or ""
    if not isinstance(base_path, str):
        base_path = ""
    if not isinstance(host, str) or not host:
        if base_url:
            return _absolute(base_path or "/", base_url), None
        return None, base_path or None
    schemes: list[Any] = doc["schemes"] if isinstance(doc.get("schemes"), list) else []
    scheme = "https" if "https" in schemes or not schemes else str(schemes[0])
    raw = f"{scheme}://{host}{base_path}"
    return _absolute(raw, base_url), raw


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc.lower()


def join_url(base: str | None, path: str) -> str:
    if not base:
        return path
    return base.rstrip("/") + "/" + path.lstrip("/")
