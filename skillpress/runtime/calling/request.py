"""A request built and checked, not yet sent; the refusal of a call that will not be sent (what to
change), and the failure of one sent that got no complete answer; how a call reads a local file
it names."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillpress.errors import Refused, Retryable


class CallRefused(ValueError, Refused):
    """The call was not sent; the message says what to change."""

    problem = "call-refused"

    def __init__(self, operation: str, reason: str) -> None:
        self.operation = operation
        self.reason = reason
        super().__init__(f"{operation}: {reason}")


@dataclass(frozen=True)
class PreparedRequest:
    """One HTTP request, built and checked, not yet sent (no credential attached)."""

    operation: str
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    # how a body that is not text is shown (a multipart body's parts, a file's size): never sent
    shown: Any = None

    def as_dict(self, extra_headers: dict[str, str] | None = None) -> dict[str, Any]:
        headers = dict(self.headers) | (extra_headers or {})
        body: Any = None
        if self.shown is not None:
            body = self.shown
        elif self.body is not None:  # JSON as its value; a form as the text sent
            is_json = "json" in dict(self.headers).get("Content-Type", "application/json")
            body = json.loads(self.body) if is_json else self.body.decode("utf-8", "replace")
        return {"method": self.method, "url": self.url, "headers": headers, "body": body}


# reads a local file a call names: (its bytes, its file name), or raises CallRefused's reason as
# ValueError; None where no local file may be read (then only `content_base64` is taken)
FileReader = Callable[[str], tuple[bytes, str]]


class ExecutionFailed(RuntimeError, Retryable):
    """The request was sent (or tried) and no complete answer came back; `sent` says whether it
    may have reached the server (a connection refused never did)."""

    problem = "call-failed"
    status = 502

    def __init__(self, message: str, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent
