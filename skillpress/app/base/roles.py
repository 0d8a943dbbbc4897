"""Who may do what: named tokens (the secret printed once, only its digest kept in the token
file, mode 0600) with one of two roles. An `operator` decides gated calls, publishes, annotates
and mints or revokes tokens; a `runtime` reads live versions, asks for approvals, waits for them
and calls. Once any operator exists, making or revoking a token needs an operator's token: an
agent that can run the command line cannot make itself one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillpress.errors import Refused
from skillpress.platform.operator_tokens import (
    OPERATOR,
    RUNTIME,
    TokenEntry,
    TokenRefused,
    add_token,
    find_token,
    read_tokens,
    revoke_token,
)
from skillpress.platform.settings import Settings

__all__ = [
    "OPERATOR",
    "OPERATOR_TOKEN_ENV",
    "RUNTIME",
    "RUNTIME_TOKEN_ENV",
    "TokenView",
    "add_operator",
    "add_token_as",
    "mint_token",
    "operator_for",
    "operator_names",
    "revoke_as",
    "revoke_operator",
    "token_list",
    "tokens_file",
]

# where a person gives the command line their operator token (never an agent's runtime)
OPERATOR_TOKEN_ENV = "SKILLPRESS_OPERATOR_TOKEN"
# where a runtime (a follower, an MCP server, a host) is given its own token for the API
RUNTIME_TOKEN_ENV = "SKILLPRESS_RUNTIME_TOKEN"


@dataclass(frozen=True)
class TokenView:
    """A token as it is listed: never its secret."""

    name: str
    role: str
    created: str


def tokens_file(settings: Settings) -> Path:
    return settings.operator_tokens_file or settings.home / "operator-tokens"


def _operators(tokens: dict[str, TokenEntry]) -> list[str]:
    return sorted(n for n, t in tokens.items() if t.role == OPERATOR)


def _operator_named(tokens: dict[str, TokenEntry], secret: str | None, doing: str) -> str:
    """The operator `secret` is the token of; Refused (naming what it was for) otherwise."""
    if not secret or not secret.strip():
        raise Refused(
            f"{doing} needs an operator's token: set {OPERATOR_TOKEN_ENV} to yours"
            " (an agent's runtime is never given one)"
        )
    found = find_token(tokens, secret)
    if found is None:
        raise Refused(f"{OPERATOR_TOKEN_ENV} holds no token known here")
    if found.role != OPERATOR:
        raise Refused(
            f"{OPERATOR_TOKEN_ENV} holds {found.name}'s {found.role} token: {doing} needs an"
            " operator's token"
        )
    return found.name


def add_token_as(settings: Settings, name: str, role: str, by: str | None) -> str:
    """A new token for `name` with `role` (its secret, the only time it is seen). The first
    operator of a home is made without one (the bootstrap; `up` and `serve` make it on a new
    home); after that only an operator (`by`: their token) makes tokens."""

    def allowed(tokens: dict[str, TokenEntry]) -> None:  # asked as the token is added
        if _operators(tokens):
            _operator_named(tokens, by, "making a token")
        elif role != OPERATOR:
            raise TokenRefused(
                "the first token of a home is an operator's: make one, then runtime tokens with it"
            )

    return add_token(tokens_file(settings), name, role, allowed)


def mint_token(settings: Settings, name: str, role: str) -> str:
    """A new token for `name` with `role`, made for an operator the face has already
    authenticated (the API's operator dependency): its secret, the only time it is seen."""
    return add_token(tokens_file(settings), name, role)


def add_operator(settings: Settings, name: str) -> str:
    """The bootstrap operator of a home with no operator yet (`up` and `serve` on a new home):
    TokenRefused when one exists already (then an operator makes tokens, `add_token_as`)."""
    path = tokens_file(settings)

    def first(tokens: dict[str, TokenEntry]) -> None:  # asked as the token is added
        if _operators(tokens):
            raise TokenRefused(f"{path} has an operator already: an operator makes the next token")

    return add_token(path, name, OPERATOR, first)


def token_list(settings: Settings) -> list[TokenView]:
    """Every token by name, with its role and when it was made (never a secret)."""
    tokens = read_tokens(tokens_file(settings))
    return [TokenView(t.name, t.role, t.created) for _, t in sorted(tokens.items())]


def operator_names(settings: Settings) -> list[str]:
    """The operators with a token, by name."""
    return _operators(read_tokens(tokens_file(settings)))


def revoke_as(settings: Settings, name: str, by: str | None) -> None:
    """Take `name`'s token out (an operator's decision, `by` their token): a running server
    refuses it from its next request on. The last operator's token is not revoked: a home
    without one would let anyone make the next."""

    def allowed(tokens: dict[str, TokenEntry]) -> None:  # asked as the token is taken out
        _operator_named(tokens, by, "revoking a token")
        if name in tokens and _operators(tokens) == [name]:
            raise TokenRefused(
                f"{name} is the last operator: make another operator's token first, then revoke it"
            )

    revoke_token(tokens_file(settings), name, allowed)


def revoke_operator(settings: Settings, name: str) -> None:
    """Take `name`'s token out without asking whose decision it is (a test's, or a setup
    script's on a home it owns)."""
    revoke_token(tokens_file(settings), name)


def operator_for(settings: Settings, secret: str | None) -> str:
    """The operator whose token `secret` is (compared in constant time by digest); Refused
    without one, or for a runtime's: a decision on a gated call is an operator's, and recorded
    under their name."""
    return _operator_named(read_tokens(tokens_file(settings)), secret, "deciding a gated call")
