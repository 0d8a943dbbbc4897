"""The C heap of a long-lived process, kept level.

glibc keeps what a thread frees in that thread's own arena (up to eight per core) and gives a
heap's pages back to the system only from its top, so a worker deriving in several threads at
once, its large transient allocations (a spec's text, a derivation's pack) interleaved with the
blob cache's, grows by what no object holds any more. Two arenas, and the free pages handed back
once a worker's message is done (at most once a second), keep it level. Elsewhere than glibc
(musl, macOS) there is nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from functools import cache
from typing import Any

__all__ = ["bound_arenas", "trim"]

_M_ARENA_MAX = -8  # mallopt's parameter (malloc.h)
_ARENAS = 2
_EVERY = 1.0  # seconds between two trims at most

_lock = threading.Lock()
_last = 0.0


@cache
def _glibc() -> Any | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def bound_arenas() -> None:
    """At most two malloc arenas for the threads the process makes from now on."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, _ARENAS)


def trim() -> None:
    """Hand the heap's free pages back to the system (at most once a second)."""
    global _last
    libc = _glibc()
    if libc is None:
        return
    with _lock:
        now = time.monotonic()
        if now - _last < _EVERY:
            return
        _last = now
    libc.malloc_trim(0)
