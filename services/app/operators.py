"""The operators who may use the API and console: their named tokens (the secret is printed
once and kept only in the token file, mode 0600), listed by name, revoked by name."""

from __future__ import annotations

from pathlib import Path

from services.platform.operator_tokens import add_token, read_tokens, revoke_token
from services.platform.settings import Settings

__all__ = ["add_operator", "operator_names", "revoke_operator", "tokens_file"]


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
