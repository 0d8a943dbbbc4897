"""Derivation with the cyclic garbage collector paused.

A large API's derivation allocates millions of small objects that live until the package is
built, and makes no reference cycles worth collecting, so every full collection the allocations
trigger walks the whole heap for nothing (a fifth of Microsoft Graph's derivation; in a forked
child it also touches, and so copies, every page it shares with its parent). Reference counting
still frees everything as usual; the collector resumes when the outermost derivation ends, in
whichever thread that is.

The pause is process-wide, so in a worker deriving several APIs at once (`up`, six submissions
at a time) derivations overlap and the outermost one might never end: the cycles everything else
in the process makes (requests, sessions, messages) would pile up for as long as the overlap
lasts. A derivation that ends while others still run therefore collects once the pause has lasted
`LONGEST_PAUSE` seconds (one full collection then, at most one per that many seconds).

The same moment empties the caches a derivation fills (`cleared_after`: names, short texts,
string sizes, path segments, patterns), which pay within one large API and would otherwise keep
what every API a long-lived worker derived left in them (bounded, but tens of MB). Whatever else
fills them runs inside the same pause so that they empty after it too: a package's load and a
publish check (publishing 10,000 skills in `up` left them full: 85 MB of strings).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["LONGEST_PAUSE", "cleared_after", "gc_paused", "held_in_caches"]

LONGEST_PAUSE = 20.0  # seconds of overlapping derivations before one of them collects

_lock = threading.Lock()
_depth = 0
_resume = False
_since = 0.0  # when the pause began, or when it was last collected
_caches: list[Any] = []  # functools caches (cache_clear, cache_info)

C = TypeVar("C")


def cleared_after(cache: C) -> C:
    """`cache` (a functools cache) is emptied whenever no derivation (nor anything else that
    runs inside `gc_paused`: a package's load, a publish check) is running any more."""
    _caches.append(cache)
    return cache


def held_in_caches() -> int:
    """How many entries the caches `cleared_after` names hold now."""
    return sum(int(cache.cache_info().currsize) for cache in _caches)


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _resume, _since
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            _since = time.monotonic()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        collect = False
        with _lock:
            _depth -= 1
            if _depth == 0:
                for cache in _caches:
                    cache.cache_clear()
                if _resume:
                    gc.enable()
            elif _resume and time.monotonic() - _since > LONGEST_PAUSE:
                _since, collect = time.monotonic(), True
        if collect:  # others still derive: what piled up since is collected once
            gc.collect()
