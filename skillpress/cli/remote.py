"""Commands through the API of a server running on this home (`skillpress.platform.local_api`):
a request costs milliseconds, opening the records costs the import of their whole stack.

Only a refused connection falls back to working locally (nothing can have been done yet); a
refusal from the API is the command's refusal (exit 2), a failure inside it exit 1."""

from __future__ import annotations

import functools
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

from skillpress.cli.common import fail
from skillpress.platform.local_api import LocalApi, read_link

__all__ = ["Remote", "Unreachable", "remote", "through_api"]

T = TypeVar("T")


class Unreachable(Exception):
    """The server did not take the connection: work locally instead."""


class Remote:
    def __init__(self, link: LocalApi) -> None:
        self.link = link

    def get(self, path: str, view: type[T], **query: str) -> T:
        """The API's answer to GET `path`, validated into `view`: the read model the local
        path returns (`app/base/views.py`), so `--json` is the same either way."""
        return self._read(self.request("GET", path, query=query), view, path)

    def post(self, path: str, body: dict[str, Any], view: type[T], wait: float = 0.0) -> T:
        """The API's answer to POST `path`, validated into `view` (as `get`)."""
        return self._read(self.request("POST", path, body, wait=wait), view, path)

    def _read(self, data: bytes, view: type[T], path: str) -> T:
        try:
            read: T = _adapter(cast(Any, view)).validate_json(data)
            return read
        except ValidationError as exc:
            fail(
                f"the running server at {self.link.url} answered {path} in a shape this command"
                f" does not read (a different skillpress version?): {exc.errors()[0]['msg']}",
                1,
            )

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        query: dict[str, str] | None = None,
        wait: float = 0.0,
    ) -> bytes:
        quoted = urllib.parse.quote(path, safe="/")
        url = f"{self.link.url}/v1{quoted}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.link.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30 + wait) as resp:
                return bytes(resp.read())
        except urllib.error.HTTPError as exc:
            fail(_problem(exc), 2 if exc.code < 500 else 1)
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, ConnectionRefusedError):
                raise Unreachable() from None
            fail(f"the running server at {self.link.url} did not answer: {exc.reason}", 1)
        except TimeoutError:
            fail(f"the running server at {self.link.url} did not answer in time", 1)


@functools.cache
def _adapter(view: Any) -> TypeAdapter[Any]:
    """One adapter per view (building one costs a schema walk); `list[X]` hashes as itself."""
    return TypeAdapter(view)


def _problem(exc: urllib.error.HTTPError) -> str:
    """The refusal's own words: a problem document's detail (RFC 9457), else the status."""
    try:
        problem = json.loads(exc.read())
        detail = problem.get("detail") if isinstance(problem, dict) else None
        if isinstance(detail, str) and detail:
            return detail
        if isinstance(detail, list):  # a request the API's schema refused
            return "; ".join(str(d.get("msg", d)) for d in detail if isinstance(d, dict))
    except (ValueError, OSError):
        pass
    return f"the server answered {exc.code} {exc.reason}"


def through_api(call: Callable[[Remote], T], by: str = "cli") -> T | None:
    """`call` made through a running server's API, or None when there is none to take it (the
    command then works locally)."""
    api = remote(by)
    if api is None:
        return None
    try:
        return call(api)
    except Unreachable:
        return None


def remote(by: str = "cli") -> Remote | None:
    """The API of a server on this home and storage, when there is one and changes made through
    it are recorded under `by` (a command given another name works locally)."""
    link = read_link()
    if link is None or link.operator != by:
        return None
    return Remote(link)
