"""Content-derived ids: the same inputs always name the same record, which makes every handler
idempotent (a redelivered message finds what it made the first time)."""

from __future__ import annotations

import hashlib

__all__ = ["derived_id"]


def derived_id(*parts: str) -> str:
    """32 hex characters of sha256 over the parts (joined by a separator no part contains)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
