"""Who gets in: operator tokens (named; `created_by` is the name), signed session cookies for the
console, CSRF tokens for its forms. Tokens live in `<home>/operator-tokens` (mode 0600), one
`NAME SECRET` per line; the embedded default generates one on first start."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from services.errors import Refused

__all__ = [
    "SESSION_COOKIE",
    "Operators",
    "TokenRefused",
    "add_token",
    "is_loopback",
    "load_operators",
]

SESSION_COOKIE = "skillpress_session"
SESSION_SECONDS = 12 * 3600
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class TokenRefused(Refused):
    """No operator token can be used as asked; the message says what to do."""


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def _read_tokens(path: Path) -> dict[str, str]:
    tokens: dict[str, str] = {}
    if not path.exists():
        return tokens
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or not _NAME.match(parts[0]):
            raise TokenRefused(f"{path}:{n}: a line is `NAME SECRET` (a name like ops-alice)")
        tokens[parts[0]] = parts[1]
    return tokens


def add_token(path: Path, name: str) -> str:
    """A new secret for operator `name`, appended to the token file; returns the secret."""
    if not _NAME.match(name):
        raise TokenRefused(f"token name {name!r}: lowercase letters, digits, '.', '_' and '-'")
    tokens = _read_tokens(path)
    if name in tokens:
        raise TokenRefused(f"an operator named {name!r} already has a token in {path}")
    secret = secrets.token_urlsafe(32)
    tokens[name] = secret
    _write_private(path, "".join(f"{n} {s}\n" for n, s in tokens.items()))
    return secret


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


@dataclass
class Operators:
    """The operators who may sign in, and the key sessions and CSRF tokens are signed with."""

    tokens: dict[str, str]
    key: bytes
    generated: str | None = None  # a token made on this start (printed as a sign-in URL)

    def who(self, secret: str) -> str | None:
        """The operator whose token this is (compared in constant time), or None."""
        found = None
        given = secret.encode()
        for name, token in self.tokens.items():
            if hmac.compare_digest(given, token.encode()):
                found = name
        return found

    def _sign(self, text: str) -> str:
        return hmac.new(self.key, text.encode(), hashlib.sha256).hexdigest()

    def session(self, name: str, now: float | None = None) -> str:
        expires = int((now or time.time()) + SESSION_SECONDS)
        body = f"{name}:{expires}"
        return f"{body}:{self._sign(body)}"

    def session_operator(self, cookie: str | None, now: float | None = None) -> str | None:
        if not cookie or cookie.count(":") != 2:
            return None
        name, expires, mac = cookie.split(":")
        if not hmac.compare_digest(mac, self._sign(f"{name}:{expires}")):
            return None
        if not expires.isdigit() or int(expires) < (now or time.time()) or name not in self.tokens:
            return None
        return name

    def csrf(self, cookie: str) -> str:
        return self._sign(f"csrf:{cookie}")

    def csrf_ok(self, cookie: str | None, given: str | None) -> bool:
        return bool(cookie and given) and hmac.compare_digest(self.csrf(cookie or ""), given or "")


def load_operators(home: Path, tokens_file: Path | None, host: str) -> Operators:
    """The operators of this server. On loopback with no token anywhere, one named `operator` is
    generated (mode 0600) and reported; on any other address a token must already exist."""
    path = tokens_file or home / "operator-tokens"
    tokens = _read_tokens(path)
    generated = None
    if not tokens:
        if not is_loopback(host):
            raise TokenRefused(
                f"refusing to listen on {host} with no operator token: create one first"
                f" (skillpress token add NAME), or listen on 127.0.0.1"
            )
        generated = add_token(path, "operator")
        tokens = _read_tokens(path)
    key_path = home / "session-key"
    if not key_path.exists():
        _write_private(key_path, secrets.token_hex(32))
    return Operators(tokens, key_path.read_text().strip().encode(), generated)
