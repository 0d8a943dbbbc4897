"""An answer as a call gives it back: its status, the headers an agent is shown, its body as a
value (JSON within a depth, else text; a binary one described), bounded whole for the agent."""

from __future__ import annotations

import base64
import email.utils
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from skillpress.runtime.calling.fit import AGENT_BUDGET, close_json, describe_body, fit_json

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
