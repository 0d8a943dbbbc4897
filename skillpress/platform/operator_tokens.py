"""The token file: `<home>/operator-tokens` (mode 0600), one token a line,
`NAME ROLE sha256:DIGEST CREATED`. Only a digest of each secret is stored (the secret is printed
once, when it is made), so a process that can read the file cannot use what it reads.

Two roles: an `operator` decides gated calls, publishes, annotates and mints tokens; a `runtime`
(an agent's process: a follower, an MCP server, a host) reads live versions, asks for approvals,
waits for them and calls. A file written by an earlier release (`NAME SECRET`, the secret in
plain text) is read as operators and written back hashed at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from skillpress.errors import Refused

__all__ = [
    "OPERATOR",
    "Check",
    "ROLES",
    "RUNTIME",
    "TOKEN_NAME",
    "TokenEntry",
    "TokenRefused",
    "add_token",
    "digest",
    "find_token",
    "one_at_a_time",
    "read_tokens",
    "replace_private",
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


def replace_private(path: Path, text: str) -> None:
    """A private file (0600) replaced whole: a reader sees the old one or the new one, never
    half of one."""
    fresh = path.with_name(f".{path.name}.{os.getpid()}.new")
    write_private(fresh, text)
    os.replace(fresh, path)


def _write(path: Path, tokens: dict[str, TokenEntry]) -> None:
    text = _HEADER + "".join(f"{t.name} {t.role} {t.digest} {t.created}\n" for t in tokens.values())
    replace_private(path, text)


@contextmanager
def one_at_a_time(path: Path) -> Iterator[None]:
    """Changes to a file of the home one after another, across processes and threads (a lock
    file beside it): each reads the file, changes it and writes it back whole inside."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# a rule a change is held to, asked with the tokens as they are when the change is made
Check = Callable[[dict[str, TokenEntry]], None]


def _change(
    path: Path, check: Check | None, change: Callable[[dict[str, TokenEntry]], None]
) -> None:
    """Read the file, hold the change to `check` (which refuses by raising), apply it and write
    the file back, all while no other change to it runs: a token added while another was
    revoked brought the revoked one back, and two operators revoking each other at once left a
    home with none (whose next token anyone may make)."""
    with one_at_a_time(path):
        tokens = read_tokens(path)
        if check is not None:
            check(tokens)
        change(tokens)
        _write(path, tokens)


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


def add_token(path: Path, name: str, role: str = OPERATOR, check: Check | None = None) -> str:
    """A new secret for `name` with `role`, its digest added to the token file (once `check`,
    asked with the tokens as they are then, allows it); returns the secret (the only time it
    is seen)."""
    if not TOKEN_NAME.match(name):
        raise TokenRefused(f"token name {name!r}: lowercase letters, digits, '.', '_' and '-'")
    if role not in ROLES:
        raise TokenRefused(f"role {role!r}: one of {', '.join(ROLES)}")
    secret = secrets.token_urlsafe(32)

    def add(tokens: dict[str, TokenEntry]) -> None:
        if name in tokens:
            raise TokenRefused(f"{name!r} already has a token in {path}")
        made = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        tokens[name] = TokenEntry(name, role, digest(secret), made)

    _change(path, check, add)
    return secret


def revoke_token(path: Path, name: str, check: Check | None = None) -> None:
    """Take `name`'s token out of the file (TokenRefused when it has none), once `check` allows
    it."""

    def revoke(tokens: dict[str, TokenEntry]) -> None:
        if name not in tokens:
            known = ", ".join(sorted(tokens)) or "none"
            raise TokenRefused(f"no token is named {name!r} in {path} (there are: {known})")
        del tokens[name]

    _change(path, check, revoke)
