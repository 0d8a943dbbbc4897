"""The approvals of a skillpress HTTP API, as a runtime reaches them with its own token: ask for
a gated call (`POST /v1/approvals`), and take the decision the call waits on
(`POST /v1/approvals/{id}/consume`). A runtime's token can do these and decide nothing, so an
agent's process that holds it cannot approve its own calls; the approval store lives with
`skillpress serve`, where the agent's user cannot write."""

from __future__ import annotations

from typing import Any

import httpx

from skillpress.errors import NotFound, Refused, Unavailable

__all__ = ["ApprovalsApi", "ApprovalsRefused", "ApprovalsUnavailable"]


class ApprovalsUnavailable(Unavailable):
    """The approvals API did not answer: the call is not sent, and can be tried again."""


class ApprovalsRefused(Refused):
    """The approvals API refused the request; `kind` is its problem's kind (`grant-spent`: a
    grant another call used first)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class ApprovalsApi:
    """A client of one API's approvals, with a runtime's (or an operator's) token."""

    def __init__(self, url: str, token: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "skillpress"},
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
        )

    def _answer(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise ApprovalsUnavailable(
                f"cannot reach the approvals API at {self.url} ({type(exc).__name__}): the call"
                " was not sent"
            ) from None
        try:
            found = response.json()
        except ValueError:
            found = None
        detail = found.get("detail") if isinstance(found, dict) else None
        kind = str(found.get("type", "")).rsplit(":", 1)[-1] if isinstance(found, dict) else ""
        said = f"the approvals API at {self.url} answered {response.status_code}" + (
            f": {detail}" if isinstance(detail, str) else ""
        )
        if response.status_code == 404:
            raise NotFound(said)
        if response.status_code in (401, 403, 409, 422):
            raise ApprovalsRefused(said, kind)
        if response.status_code >= 400 or not isinstance(found, dict):
            raise ApprovalsUnavailable(said + " (the call was not sent)")
        return found

    def settle(
        self,
        skill: str,
        operation: str,
        arguments: dict[str, Any],
        page_url: str | None,
        requested_by: str,
    ) -> dict[str, Any]:
        """The request for this exact call as it stands, the server having evaluated the live
        gate on `arguments` (`used`: a grant was waiting and this call used it; `auto`: under its
        gate's threshold; `pending`: wait on it)."""
        body = {
            "skill": skill,
            "operation": operation,
            "arguments": arguments,
            "page_url": page_url,
            "requested_by": requested_by[:128],
        }
        return self._answer("POST", "/v1/approvals", body)

    def consume(self, request_id: int) -> dict[str, Any]:
        """The decision the call waiting on `request_id` gets (a grant used up: `used`; one
        another call used first: ApprovalsRefused of kind `grant-spent`)."""
        return self._answer("POST", f"/v1/approvals/{int(request_id)}/consume")

    def close(self) -> None:
        self._http.close()
