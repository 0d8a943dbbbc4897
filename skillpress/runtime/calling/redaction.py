"""Every form a secret a call used may come back in, and what comes back with each taken out.

A call's secrets are the credential it attached (an API key, a `Basic` pair, a bearer token the
runtime fetched), the variables they were read from and an OAuth client's secret. An API may
echo any of them in any encoding: as it is, without its scheme (`Bearer `, `Basic `), the user
and password inside a `Basic` value, JSON-escaped, percent-encoded in either case (or with `+`
for spaces), in base64 (standard, URL-safe, unpadded). Each form of each secret is taken out of
an answer's body and headers and out of an error's text: the one place what an agent is shown
is cleared of what the call carried.

Pure: strings and bytes in, strings and bytes out.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

__all__ = ["MIN_SECRET", "scrub_bytes", "scrub_text", "secret_forms"]

MIN_SECRET = 6  # a shorter value is not taken out of text (it would take words out too)
_SCHEMES = re.compile(r"^(?:bearer|basic|token|bot|apikey|key)\s+", re.I)


def _plain_forms(secret: str) -> set[str]:
    """The secret itself and what an encoder makes of it."""
    escaped = json.dumps(secret, ensure_ascii=True)[1:-1]
    out = {secret, escaped, escaped.replace("/", "\\/")}  # some encoders escape '/' too
    out.add(json.dumps(secret, ensure_ascii=False)[1:-1])
    for encoded in (quote(secret, safe=""), quote_plus(secret, safe="")):
        out.add(encoded)
        out.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded))
    raw = secret.encode()
    for b64 in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = b64.decode("ascii")
        out |= {text, text.rstrip("=")}
    out.add(repr(raw)[2:-1])  # as a Python bytes literal quotes it
    return out


def secret_forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Every form the given secrets may come back in, longest first (so a long form is taken
    out whole before a shorter one inside it), none shorter than MIN_SECRET."""
    found: set[str] = set()
    for secret in secrets:
        secret = (secret or "").strip()
        if len(secret) < MIN_SECRET:
            continue
        found |= _plain_forms(secret)
        bare = _SCHEMES.sub("", secret)
        if bare != secret and len(bare) >= MIN_SECRET:
            found |= _plain_forms(bare)
            if secret.lower().startswith("basic "):
                found |= _basic_parts(bare)
    return tuple(sorted((f for f in found if len(f) >= MIN_SECRET), key=len, reverse=True))


def _basic_parts(encoded: str) -> set[str]:
    """The `user:password` inside a Basic credential, and the password alone."""
    try:
        pair = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return set()
    out = _plain_forms(pair) if len(pair) >= MIN_SECRET else set()
    password = pair.partition(":")[2]
    if len(password) >= MIN_SECRET:
        out |= _plain_forms(password)
    return out


def scrub_text(text: str, forms: tuple[str, ...], mark: str = "[redacted]") -> str:
    """`text` with every form taken out (`forms` as `secret_forms` gives them)."""
    for form in forms:
        if form in text:
            text = text.replace(form, mark)
    return text


def scrub_bytes(data: bytes, forms: tuple[str, ...], mark: bytes = b"[redacted]") -> bytes:
    """`data` with every form taken out, as UTF-8 bytes."""
    for form in forms:
        encoded = form.encode()
        if encoded in data:
            data = data.replace(encoded, mark)
    return data
