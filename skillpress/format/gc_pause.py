"""Derivation with the cyclic garbage collector paused.

A large API's derivation allocates millions of small objects that live until the package is
built, and makes no reference cycles worth collecting, so every full collection the allocations
trigger walks the whole heap for nothing (a fifth of Microsoft Graph's derivation; in a forked
child it also touches, and so copies, every page it shares with its parent). Reference counting
still frees everything as usual; the collector resumes when the outermost derivation ends, in
whichever thread that is.

The same moment empties the caches a derivation fills (`cleared_after`: names, short texts,
string sizes, path segments), which pay within one large API and would otherwise keep what every
API a long-lived worker derived left in them (bounded, but tens of MB).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["cleared_after", "gc_paused"]

_lock = threading.Lock()
_depth = 0
_resume = False
_caches: list[Callable[[], None]] = []

C = TypeVar("C")


def cleared_after(cache: C) -> C:
    """`cache` (a functools cache) is emptied whenever no derivation is running any more."""
    _caches.append(cache.cache_clear)  # type: ignore[attr-defined]
    return cache


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for clear in _caches:
                    clear()
                if _resume:
                    gc.enable()
