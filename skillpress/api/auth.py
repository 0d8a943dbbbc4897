"""Who gets in: named tokens with a role (`created_by` is the name), signed session cookies for
the console, CSRF tokens for its forms. Tokens live in `<home>/operator-tokens` (mode 0600), only
their digests (`platform.operator_tokens`); the first start on a home with no operator makes one
and prints it, once. An operator's token opens everything; a runtime's reads live versions and
asks for and waits on approvals, nothing more; only an operator signs in to the console."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from skillpress.platform.operator_tokens import (
    OPERATOR,
    TokenEntry,
    TokenRefused,
    add_token,
    digest,
    find_token,
    one_at_a_time,
    read_tokens,
    replace_private,
    write_private,
)

__all__ = [
    "LOCAL",
    "SESSION_COOKIE",
    "Operators",
    "TokenRefused",
    "add_token",
    "is_loopback",
    "load_operators",
]

SESSION_COOKIE = "skillpress_session"
# the role of the token a server writes into `<home>/api.json` for command lines on its home: it
# does what a command line there does without an operator's token (reads, imports, annotates,
# publishes), and never what needs one (deciding a gated call, making or revoking a token), so a
# process that can read the home gains no operator's power from it
LOCAL = "local"
SESSION_SECONDS = 12 * 3600


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


@dataclass
class Operators:
    """The operators who may sign in, and the key sessions and CSRF tokens are signed with.
    With `path`, the token file is read again whenever it changes, so a token revoked there
    (`skillpress token revoke NAME`) stops working, and its sessions, from the next request on."""

    own: dict[
        str, str
    ]  # tokens of this run's own (the command line's link, role LOCAL), never in the file
    key: bytes
    generated: str | None = None  # the first operator's token, made on this start (printed once)
    path: Path | None = None
    # sessions signed out before they expired, `SID EXPIRES` per line (mode 0600): every
    # server on the same home refuses them from the next request on
    signed_out_path: Path | None = None
    _file: dict[str, TokenEntry] = field(default_factory=dict)
    _stamp: tuple[int, int] | None = None
    _signed_out: dict[str, int] = field(default_factory=dict)
    _out_stamp: tuple[int, int] | None = None

    @property
    def tokens(self) -> dict[str, TokenEntry]:
        """Every token by name: the file's as it is now, and this run's own (LOCAL)."""
        if self.path is not None:
            try:
                info = self.path.stat()
                stamp = (info.st_mtime_ns, info.st_size)
            except FileNotFoundError:
                stamp = (0, 0)
            if stamp != self._stamp:
                self._file = read_tokens(self.path) if stamp != (0, 0) else {}
                self._stamp = stamp
        own = {n: TokenEntry(n, LOCAL, digest(s), "-") for n, s in self.own.items()}
        return {**self._file, **own}

    def caller(self, secret: str) -> TokenEntry | None:
        """The token `secret` is (its name and role; compared in constant time), or None."""
        return find_token(self.tokens, secret)

    def who(self, secret: str) -> str | None:
        """The operator whose token this is, or None (a runtime's token is no operator's)."""
        found = self.caller(secret)
        return found.name if found is not None and found.role == OPERATOR else None

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
        entry = self.tokens.get(name)
        if not expires.isdigit() or int(expires) < (now or time.time()) or entry is None:
            return None
        if entry.role != OPERATOR:
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
            found = _read_signed_out(self.signed_out_path)
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
        live = {s: e for s, e in self._signed_out.items() if e >= moment}
        self._signed_out = live | {sid: int(expires)}
        path = self.signed_out_path
        if path is None:
            return
        # read again and written whole inside the lock: two servers signing out at once each
        # wrote the list it had read, and the first one's session worked again elsewhere
        with one_at_a_time(path):
            held = _read_signed_out(path) if path.exists() else {}
            kept = {s: e for s, e in held.items() if e >= moment} | {sid: int(expires)}
            replace_private(path, "".join(f"{s} {e}\n" for s, e in sorted(kept.items())))

    def csrf(self, cookie: str) -> str:
        return self.sign(f"csrf:{cookie}")

    def csrf_ok(self, cookie: str | None, given: str | None) -> bool:
        return bool(cookie and given) and hmac.compare_digest(self.csrf(cookie or ""), given or "")


def _read_signed_out(path: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in path.read_text().splitlines():
        sid, _, expires = line.partition(" ")
        if sid and expires.isdigit():
            found[sid] = int(expires)
    return found


def load_operators(home: Path, tokens_file: Path | None, host: str) -> Operators:
    """The operators of this server. On loopback on a home with no operator, one named
    `operator` is made (its digest kept, mode 0600) and its token reported, this once; on any
    other address an operator's token must already exist."""
    path = tokens_file or home / "operator-tokens"
    tokens = read_tokens(path)
    generated = None
    if not any(t.role == OPERATOR for t in tokens.values()):
        if not is_loopback(host):
            raise TokenRefused(
                f"refusing to listen on {host} with no operator token: create one first"
                f" (skillpress token add NAME), or listen on 127.0.0.1"
            )

        def first(now: dict[str, TokenEntry]) -> None:  # asked as it is added
            if any(t.role == OPERATOR for t in now.values()):
                raise TokenRefused(f"{path} has an operator already")

        name = "operator" if "operator" not in tokens else "operator-1"
        try:
            generated = add_token(path, name, OPERATOR, first)
        except TokenRefused:  # another process made the first at this moment: theirs stands
            generated = None
    key_path = home / "session-key"
    if not key_path.exists():
        write_private(key_path, secrets.token_hex(32))
    return Operators(
        {}, key_path.read_text().strip().encode(), generated, path, home / "signed-out"
    )
