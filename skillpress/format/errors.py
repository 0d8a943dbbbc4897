"""Errors the derivation core raises. Each carries a one-line reason a person can act on."""

from skillpress.errors import Permanent


class SpecRefused(ValueError, Permanent):
    """The document cannot be derived; `reason` says why and what to do about it.

    Raised for untrusted input that breaks a bound (size, nesting, aliases), for input that is
    not an OpenAPI document, and for documents that reference things we will not fetch.
    A refusal is permanent for the same bytes: retrying cannot help.
    """

    problem = "spec-refused"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class SchemaTooLarge(Exception):
    """An expanded tool schema passed its byte budget (internal: the operation stays prose)."""
