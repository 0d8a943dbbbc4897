"""The operators who may use the API and console: their named tokens (the secret is printed
once and kept only in the token file, mode 0600), listed by name, revoked by name."""

from __future__ import annotations

import hmac
from pathlib import Path

from skillpress.services.errors import Refused
from skillpress.services.platform.operator_tokens import add_token, read_tokens, revoke_token
from skillpress.services.platform.settings import Settings

__all__ = [
    "OPERATOR_TOKEN_ENV",
    "add_operator",
    "operator_for",
    "operator_names",
    "revoke_operator",
    "tokens_file",
]

# where a person gives the command line their operator token (never an agent's runtime)
OPERATOR_TOKEN_ENV = "SKILLPRESS_OPERATOR_TOKEN"


def tokens_file(settings: Settings) -> Path:
    return settings.operator_tokens_file or settings.home / "operator-tokens"


def add_operator(settings: Settings, name: str) -> str:
    """A new token for operator `name` (TokenRefused for a bad or taken name): its secret."""
    return add_token(tokens_file(settings), name)


def operator_names(settings: Settings) -> list[str]:
    """The operators with a token, by name (never their secrets)."""
    return sorted(read_tokens(tokens_file(settings)))


def revoke_operator(settings: Settings, name: str) -> None:
    """Take `name`'s token out: a running server refuses it from its next request on."""
    revoke_token(tokens_file(settings), name)


def operator_for(settings: Settings, secret: str | None) -> str:
    """The operator whose token `secret` is (compared in constant time); Refused without one: a
    decision on a gated call is an operator's, and recorded under their name."""
    if not secret or not secret.strip():
        raise Refused(
            f"deciding a gated call needs an operator's token: set {OPERATOR_TOKEN_ENV} to yours"
            " (skillpress token add NAME makes one); an agent's runtime is never given it"
        )
    given = secret.strip().encode()
    found = None
    for name, token in read_tokens(tokens_file(settings)).items():
        if hmac.compare_digest(given, token.encode()):
            found = name
    if found is None:
        raise Refused(f"{OPERATOR_TOKEN_ENV} holds no operator's token (skillpress token list)")
    return found
