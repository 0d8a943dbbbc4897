"""Operator tokens on disk: `<home>/operator-tokens` (mode 0600), one `NAME SECRET` per line.
The secrets are an operator's own; nothing else about them is ever stored."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from skillpress.services.errors import Refused

__all__ = [
    "TOKEN_NAME",
    "TokenRefused",
    "add_token",
    "read_tokens",
    "revoke_token",
    "write_private",
]

TOKEN_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class TokenRefused(Refused):
    """No operator token can be used as asked; the message says what to do."""

    problem = "token-refused"


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def read_tokens(path: Path) -> dict[str, str]:
    tokens: dict[str, str] = {}
    if not path.exists():
        return tokens
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or not TOKEN_NAME.match(parts[0]):
            raise TokenRefused(f"{path}:{n}: a line is `NAME SECRET` (a name like ops-alice)")
        tokens[parts[0]] = parts[1]
    return tokens


def add_token(path: Path, name: str) -> str:
    """A new secret for operator `name`, appended to the token file; returns the secret."""
    if not TOKEN_NAME.match(name):
        raise TokenRefused(f"token name {name!r}: lowercase letters, digits, '.', '_' and '-'")
    tokens = read_tokens(path)
    if name in tokens:
        raise TokenRefused(f"an operator named {name!r} already has a token in {path}")
    secret = secrets.token_urlsafe(32)
    tokens[name] = secret
    write_private(path, "".join(f"{n} {s}\n" for n, s in tokens.items()))
    return secret


def revoke_token(path: Path, name: str) -> None:
    """Take operator `name`'s token out of the file (TokenRefused when it has none)."""
    tokens = read_tokens(path)
    if name not in tokens:
        known = ", ".join(sorted(tokens)) or "none"
        raise TokenRefused(f"no operator named {name!r} has a token in {path} (there are: {known})")
    del tokens[name]
    write_private(path, "".join(f"{n} {s}\n" for n, s in tokens.items()))
