"""Using the second core where derivation splits: a map computed by this process and a forked child
together (the shorter forms of long operation ids while the caller extracts operations; the
operation files while the caller lays out the body).

Rendering one operation's file depends on that operation alone, so for a large API a child
process (forked: it already holds the operations, nothing is sent to it) starts on them at once
while the caller goes on with its own work, and the caller joins in when it asks for the
results. The items are cut into chunks, and each process claims the next chunk by reading its
number from a pipe both share (a read of a few bytes from a pipe is atomic), so the two finish
together however the machine shares its cores or whichever end of the document the heavy
operations sit. The results are the plain map's, in order, whoever computed them; a child that
fails for any reason is replaced by computing what it did not hand back here. Forking is only
safe in a single-threaded process, so callers ask for it (`DeriveOptions.processes`) only from a
command line, never from a worker thread. (Declaring tools is not split: most of its work is a
cache every later tool reuses, which a child would only build again.)
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Forked", "fork_map"]

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 300  # below this a fork costs more than it saves
_RECORD = 4  # bytes of a chunk number in the pipe
_MAX_CHUNKS = 1024  # the pipe holds them all before anyone reads (4 KB: any pipe can)


def _chunk_size(count: int) -> int:
    return max(8, -(-count // _MAX_CHUNKS))


def _claimed(fd: int) -> Iterator[int]:
    """Chunk numbers, claimed one at a time until the pipe is empty (its writer is closed)."""
    while True:
        record = os.read(fd, _RECORD)
        if len(record) < _RECORD:
            return
        yield int.from_bytes(record, "little")


@dataclass
class Forked(Generic[T, R]):
    """A map over `items`, being computed by a child too (`pid`); `results()` joins in, waits
    for the child and gives every result in order."""

    func: Callable[[T], R]
    items: Sequence[T]
    pid: int | None = None
    results_fd: int | None = None
    claims_fd: int | None = None
    size: int = field(default=0)

    def _chunk(self, n: int) -> list[R]:
        func = self.func
        return [func(x) for x in self.items[n * self.size : (n + 1) * self.size]]

    def results(self) -> list[R]:
        if self.pid is None or self.results_fd is None or self.claims_fd is None:
            return [self.func(x) for x in self.items]
        done: dict[int, list[R]] = {}
        try:
            for n in _claimed(self.claims_fd):
                done[n] = self._chunk(n)
        finally:
            os.close(self.claims_fd)
            self.claims_fd = None
        done.update(self._child_results())
        chunks = -(-len(self.items) // self.size)
        out: list[R] = []
        for n in range(chunks):
            out.extend(done[n] if n in done else self._chunk(n))
        return out

    def _child_results(self) -> dict[int, list[R]]:
        assert self.pid is not None and self.results_fd is not None
        with os.fdopen(self.results_fd, "rb") as pipe:
            data = pipe.read()
        self.results_fd = None
        _, status = os.waitpid(self.pid, 0)
        if status == 0 and data:
            try:
                out = pickle.loads(data)
                if isinstance(out, dict):
                    return out
            except Exception:  # noqa: BLE001 (a broken child: compute its chunks here)
                pass
        return {}


def fork_map(func: Callable[[T], R], items: Sequence[T], processes: int) -> Forked[T, R]:
    """Start `func` over `items` in a forked child when `processes` > 1 and there are enough
    items to pay for it; the caller computes the rest (or all) when it asks for `results()`."""
    if processes < 2 or len(items) < MIN_ITEMS or not hasattr(os, "fork"):
        return Forked(func, items)
    size = _chunk_size(len(items))
    claims_read, claims_write = os.pipe()
    chunks = -(-len(items) // size)
    os.write(claims_write, b"".join(n.to_bytes(_RECORD, "little") for n in range(chunks)))
    os.close(claims_write)  # an empty pipe now reads as its end: nothing left to claim
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: claim and compute, hand the results back, leave without cleanup
        code = 1
        try:
            os.close(read)
            forked = Forked(func, items, size=size)
            done = {n: forked._chunk(n) for n in _claimed(claims_read)}
            data = pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Forked(func, items, pid, read, claims_read, size)
