"""Who gets in: operator tokens (named; `created_by` is the name), signed session cookies for the
console, CSRF tokens for its forms. Tokens live in `<home>/operator-tokens` (mode 0600), one
`NAME SECRET` per line; the embedded default generates one on first start."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from services.platform.operator_tokens import TokenRefused, add_token, read_tokens, write_private

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


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


@dataclass
class Operators:
    """The operators who may sign in, and the key sessions and CSRF tokens are signed with.
    With `path`, the token file is read again whenever it changes, so a token revoked there
    (`skillpress token revoke NAME`) stops working, and its sessions, from the next request on."""

    own: dict[str, str]  # tokens of this run's own (the command line's link), never in the file
    key: bytes
    generated: str | None = None  # a token made on this start (printed as a sign-in URL)
    path: Path | None = None
    _file: dict[str, str] = field(default_factory=dict)
    _stamp: tuple[int, int] | None = None

    @property
    def tokens(self) -> dict[str, str]:
        if self.path is not None:
            try:
                info = self.path.stat()
                stamp = (info.st_mtime_ns, info.st_size)
            except FileNotFoundError:
                stamp = (0, 0)
            if stamp != self._stamp:
                self._file = read_tokens(self.path) if stamp != (0, 0) else {}
                self._stamp = stamp
        return {**self._file, **self.own}

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
    tokens = read_tokens(path)
    generated = None
    if not tokens:
        if not is_loopback(host):
            raise TokenRefused(
                f"refusing to listen on {host} with no operator token: create one first"
                f" (skillpress token add NAME), or listen on 127.0.0.1"
            )
        generated = add_token(path, "operator")
        tokens = read_tokens(path)
    key_path = home / "session-key"
    if not key_path.exists():
        write_private(key_path, secrets.token_hex(32))
    return Operators({}, key_path.read_text().strip().encode(), generated, path)
