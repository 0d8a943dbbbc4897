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

from skillpress.services.platform.operator_tokens import (
    TokenRefused,
    add_token,
    read_tokens,
    write_private,
)

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
    # sessions signed out before they expired, `SID EXPIRES` per line (mode 0600): every
    # server on the same home refuses them from the next request on
    signed_out_path: Path | None = None
    _file: dict[str, str] = field(default_factory=dict)
    _stamp: tuple[int, int] | None = None
    _signed_out: dict[str, int] = field(default_factory=dict)
    _out_stamp: tuple[int, int] | None = None

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

    def sign(self, text: str) -> str:
        """`text`'s signature under this server's key (sessions, CSRF tokens, notices)."""
        return hmac.new(self.key, text.encode(), hashlib.sha256).hexdigest()

    def session(self, name: str, now: float | None = None) -> str:
        """A signed session cookie for `name`: `NAME:EXPIRES:SID:MAC`, the SID its own."""
        expires = int((now or time.time()) + SESSION_SECONDS)
        body = f"{name}:{expires}:{secrets.token_hex(12)}"
        return f"{body}:{self.sign(body)}"

    def session_operator(self, cookie: str | None, now: float | None = None) -> str | None:
        """The operator a session cookie is for, or None: forged, expired, signed out, or its
        operator's token revoked."""
        if not cookie or cookie.count(":") != 3:
            return None
        name, expires, sid, mac = cookie.split(":")
        if not hmac.compare_digest(mac, self.sign(f"{name}:{expires}:{sid}")):
            return None
        if not expires.isdigit() or int(expires) < (now or time.time()) or name not in self.tokens:
            return None
        if sid in self.signed_out():
            return None
        return name

    def signed_out(self) -> dict[str, int]:
        """Sessions signed out before they expired (SID → expiry), as the file now says."""
        if self.signed_out_path is None:
            return self._signed_out
        try:
            info = self.signed_out_path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            return self._signed_out
        if stamp != self._out_stamp:
            found: dict[str, int] = {}
            for line in self.signed_out_path.read_text().splitlines():
                sid, _, expires = line.partition(" ")
                if sid and expires.isdigit():
                    found[sid] = int(expires)
            self._signed_out, self._out_stamp = found | self._signed_out, stamp
        return self._signed_out

    def sign_out(self, cookie: str | None, now: float | None = None) -> None:
        """End a session here and now, on every server sharing the home (the file is rewritten
        without the sessions that have expired anyway)."""
        if self.session_operator(cookie, now) is None:
            return
        assert cookie is not None
        _, expires, sid, _ = cookie.split(":")
        moment = now or time.time()
        kept = {s: e for s, e in self.signed_out().items() if e >= moment}
        kept[sid] = int(expires)
        self._signed_out = kept
        if self.signed_out_path is not None:
            write_private(
                self.signed_out_path, "".join(f"{s} {e}\n" for s, e in sorted(kept.items()))
            )

    def csrf(self, cookie: str) -> str:
        return self.sign(f"csrf:{cookie}")

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
    return Operators(
        {}, key_path.read_text().strip().encode(), generated, path, home / "signed-out"
    )
