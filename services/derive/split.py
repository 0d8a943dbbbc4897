"""Using the second core where derivation splits: a share of a map computed in a forked child.

Rendering one operation's file depends on that operation alone, so for a large API a child
process (forked: it already holds the operations, nothing is sent to it) renders the last share
while the caller goes on with its own work and the first share. The results are the plain map's,
in order; a child that fails for any reason is replaced by computing its share here. Forking is
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


@dataclass
class Forked(Generic[T, R]):
    """A share of a map being computed in a child; `results()` waits for it."""

    func: Callable[[T], R]
    items: Sequence[T]
    pid: int | None = None
    fd: int | None = None

    def results(self) -> list[R]:
        if self.pid is None or self.fd is None:
            return [self.func(x) for x in self.items]
        with os.fdopen(self.fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        if status == 0 and data:
            try:
                out = pickle.loads(data)
                if isinstance(out, list) and len(out) == len(self.items):
                    return out
            except Exception:  # noqa: BLE001 (a broken child: compute the share here)
                pass
        return [self.func(x) for x in self.items]


def fork_map(func: Callable[[T], R], items: Sequence[T], processes: int) -> Forked[T, R]:
    """Start `func` over `items` in a forked child when `processes` > 1 and there are enough
    items to pay for it; otherwise the returned share is computed when its results are asked for."""
    if processes < 2 or len(items) < MIN_ITEMS or not hasattr(os, "fork"):
        return Forked(func, items)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, hand the results back, leave without cleanup
        code = 1
        try:
            os.close(read)
            data = pickle.dumps([func(x) for x in items], protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Forked(func, items, pid, read)
