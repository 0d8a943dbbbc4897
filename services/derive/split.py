"""Using the second core where derivation splits: a share of a map computed in a forked child
(the shorter forms of long operation ids, all of them while the caller extracts operations; a
share of the operation files while the caller lays out the body and renders the rest).

Rendering one operation's file depends on that operation alone, so for a large API a child
process (forked: it already holds the operations, nothing is sent to it) computes a share while
the caller goes on with its own work and then the rest. The child's share is interleaved (three
in five, say) so that both halves cost about the same whichever end of the document the heavy
operations sit. (Declaring tools is not split: most of its work is a cache every later tool
reuses, which a child would only build again.) The results are the plain map's, in
order; a child that fails for any reason is replaced by computing its share here. Forking is
only safe in a single-threaded process, so callers ask for it (`DeriveOptions.processes`) only
from a command line, never from a worker thread.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Forked", "fork_map"]

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 300  # below this a fork costs more than it saves


def _child_takes(i: int, share: float) -> bool:
    """Whether item `i` is the child's: `share` of the items, spread evenly through them."""
    return int((i + 1) * share) > int(i * share)


@dataclass
class Forked(Generic[T, R]):
    """A map over `items`, a share of it perhaps being computed in a child; `results()` computes
    the rest here, waits for the child and gives every result in order."""

    func: Callable[[T], R]
    items: Sequence[T]
    share: float
    pid: int | None = None
    fd: int | None = None

    def results(self) -> list[R]:
        if self.pid is None or self.fd is None:
            return [self.func(x) for x in self.items]
        taken = [_child_takes(i, self.share) for i in range(len(self.items))]
        mine = [self.func(x) for x, t in zip(self.items, taken, strict=True) if not t]
        theirs = self._child_results(sum(taken))
        if theirs is None:
            theirs = [self.func(x) for x, t in zip(self.items, taken, strict=True) if t]
        own, other = iter(mine), iter(theirs)
        return [next(other) if t else next(own) for t in taken]

    def _child_results(self, count: int) -> list[R] | None:
        assert self.pid is not None and self.fd is not None
        with os.fdopen(self.fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        if status == 0 and data:
            try:
                out = pickle.loads(data)
                if isinstance(out, list) and len(out) == count:
                    return out
            except Exception:  # noqa: BLE001 (a broken child: compute the share here)
                pass
        return None


def fork_map(
    func: Callable[[T], R], items: Sequence[T], processes: int, share: float = 0.5
) -> Forked[T, R]:
    """Start `func` over a `share` of `items` in a forked child when `processes` > 1 and there
    are enough items to pay for it; the rest (or all) is computed when `results()` is asked for."""
    if processes < 2 or len(items) < MIN_ITEMS or not hasattr(os, "fork"):
        return Forked(func, items, share)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, hand the results back, leave without cleanup
        code = 1
        try:
            os.close(read)
            ours = [func(x) for i, x in enumerate(items) if _child_takes(i, share)]
            data = pickle.dumps(ours, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Forked(func, items, share, pid, read)
