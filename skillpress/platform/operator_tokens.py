"""The token file: `<home>/operator-tokens` (mode 0600), one token a line,
`NAME ROLE sha256:DIGEST CREATED`. Only a digest of each secret is stored (the secret is printed
once, when it is made), so a process that can read the file cannot use what it reads.

Two roles: an `operator` decides gated calls, publishes, annotates and mints tokens; a `runtime`
(an agent's process: a follower, an MCP server, a host) reads live versions, asks for approvals,
waits for them and calls. A file written by an earlier release (`NAME SECRET`, the secret in
plain text) is read as operators and written back hashed at once.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from skillpress.errors import Refused

__all__ = [
    "OPERATOR",
    "ROLES",
    "RUNTIME",
    "TOKEN_NAME",
    "TokenEntry",
    "TokenRefused",
    "add_token",
    "digest",
    "find_token",
    "read_tokens",
    "revoke_token",
    "write_private",
]

TOKEN_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
OPERATOR, RUNTIME = "operator", "runtime"
ROLES = (OPERATOR, RUNTIME)
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_HEADER = "# skillpress tokens: NAME ROLE sha256:DIGEST CREATED (the secrets are never stored)\n"


class TokenRefused(Refused):
    """No operator token can be used as asked; the message says what to do."""

    problem = "token-refused"


@dataclass(frozen=True)
class TokenEntry:
    """A token as the file keeps it: whose, its role, the digest of its secret, when it was made."""

    name: str
    role: str
    digest: str  # sha256:HEX of the secret
    created: str  # ISO 8601 (UTC), or "-" for a token an earlier release made

    def matches(self, secret: str) -> bool:
        """Whether `secret` is this token's (compared in constant time)."""
        return hmac.compare_digest(digest(secret), self.digest)


def digest(secret: str) -> str:
    """What the file keeps of a secret. The secrets are 256 random bits, so one SHA-256 is all
    a digest needs: nothing can be guessed from it."""
    return "sha256:" + hashlib.sha256(secret.strip().encode()).hexdigest()


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def _write(path: Path, tokens: dict[str, TokenEntry]) -> None:
    write_private(
        path,
        _HEADER + "".join(f"{t.name} {t.role} {t.digest} {t.created}\n" for t in tokens.values()),
    )


def read_tokens(path: Path) -> dict[str, TokenEntry]:
    """The tokens in the file, by name ({} when there is none). A plain-text secret an earlier
    release wrote is hashed and the file rewritten (when it can be)."""
    tokens: dict[str, TokenEntry] = {}
    if not path.exists():
        return tokens
    plain = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if not parts or not TOKEN_NAME.match(parts[0]):
            raise TokenRefused(f"{path}:{n}: a line is `NAME ROLE sha256:DIGEST CREATED`")
        if len(parts) == 2:  # NAME SECRET, as an earlier release kept it
            plain = True
            tokens[parts[0]] = TokenEntry(parts[0], OPERATOR, digest(parts[1]), "-")
            continue
        if len(parts) != 4 or parts[1] not in ROLES or not _DIGEST.match(parts[2]):
            raise TokenRefused(f"{path}:{n}: a line is `NAME ROLE sha256:DIGEST CREATED`")
        tokens[parts[0]] = TokenEntry(*parts)
    if plain:
        try:
            _write(path, tokens)
        except OSError:
            pass  # read-only here: kept as it is, compared by digest all the same
    return tokens


def find_token(tokens: dict[str, TokenEntry], secret: str) -> TokenEntry | None:
    """The token `secret` is, or None (every digest compared, in constant time each)."""
    found = None
    for entry in tokens.values():
        if entry.matches(secret):
            found = entry
    return found


def add_token(path: Path, name: str, role: str = OPERATOR) -> str:
    """A new secret for `name` with `role`, its digest appended to the token file; returns the
    secret (the only time it is seen)."""
    if not TOKEN_NAME.match(name):
        raise TokenRefused(f"token name {name!r}: lowercase letters, digits, '.', '_' and '-'")
    if role not in ROLES:
        raise TokenRefused(f"role {role!r}: one of {', '.join(ROLES)}")
    tokens = read_tokens(path)
    if name in tokens:
        raise TokenRefused(f"{name!r} already has a token in {path}")
    secret = secrets.token_urlsafe(32)
    made = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    tokens[name] = TokenEntry(name, role, digest(secret), made)
    _write(path, tokens)
    return secret


def revoke_token(path: Path, name: str) -> None:
    """Take `name`'s token out of the file (TokenRefused when it has none)."""
    tokens = read_tokens(path)
    if name not in tokens:
        known = ", ".join(sorted(tokens)) or "none"
        raise TokenRefused(f"no token is named {name!r} in {path} (there are: {known})")
    del tokens[name]
    _write(path, tokens)
