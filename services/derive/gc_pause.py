"""Derivation with the cyclic garbage collector paused.

A large API's derivation allocates millions of small objects that live until the package is
built, and makes no reference cycles worth collecting, so every full collection the allocations
trigger walks the whole heap for nothing (a fifth of Microsoft Graph's derivation; in a forked
child it also touches, and so copies, every page it shares with its parent). Reference counting
still frees everything as usual; the collector resumes when the outermost derivation ends, in
whichever thread that is.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_resume = False


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
            if _depth == 0 and _resume:
                gc.enable()
