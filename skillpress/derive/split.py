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
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Child", "Forked", "fork_map", "in_child"]

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 300  # below this a fork costs more than it saves
_RECORD = 4  # bytes of a chunk number in the pipe
_MAX_CHUNKS = 1024  # the pipe holds them all before anyone reads (4 KB: any pipe can)


def _chunk_size(count: int) -> int:
    return max(8, -(-count // _MAX_CHUNKS))


def _chunks(count: int, size: int) -> int:
    return -(-count // size)


@dataclass
class Child:
    """A forked child at work (`in_child`); `join` waits for it."""

    pid: int
    fd: int  # the read end of what it hands back

    def join(self) -> tuple[bool, bytes]:
        """(whether it succeeded, what it handed back: its result, or its failure's words)."""
        with os.fdopen(self.fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        return status == 0, data


def in_child(work: Callable[[], bytes]) -> Child:
    """Fork; the child runs `work`, hands back the bytes it returns (or, when it fails, the
    failure's words) and leaves without cleanup. Only from a single-threaded process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            try:
                data = work()
                code = 0
            except BaseException as exc:  # noqa: BLE001 (said to the parent)
                data = str(exc).encode()[:4000]
            view = memoryview(data)
            while view:
                view = view[os.write(write, view) :]
        finally:
            os._exit(code)
    os.close(write)
    return Child(pid, read)


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
    child: Child | None = None
    claims_fd: int | None = None
    size: int = 0

    @property
    def pid(self) -> int | None:
        """The child's, while it works."""
        return self.child.pid if self.child is not None else None

    def _chunk(self, n: int) -> list[R]:
        func = self.func
        return [func(x) for x in self.items[n * self.size : (n + 1) * self.size]]

    def results(self) -> list[R]:
        if self.child is None or self.claims_fd is None:
            return [self.func(x) for x in self.items]
        done: dict[int, list[R]] = {}
        try:
            for n in _claimed(self.claims_fd):
                done[n] = self._chunk(n)
        finally:
            os.close(self.claims_fd)
            self.claims_fd = None
        done.update(self._child_results(self.child))
        self.child = None
        out: list[R] = []
        for n in range(_chunks(len(self.items), self.size)):
            out.extend(done[n] if n in done else self._chunk(n))
        return out

    @staticmethod
    def _child_results(child: Child) -> dict[int, list[R]]:
        succeeded, data = child.join()
        if succeeded and data:
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
    numbers = range(_chunks(len(items), size))
    os.write(claims_write, b"".join(n.to_bytes(_RECORD, "little") for n in numbers))
    os.close(claims_write)  # an empty pipe now reads as its end: nothing left to claim
    forked = Forked(func, items, claims_fd=claims_read, size=size)

    def claim_and_compute() -> bytes:  # (the child's work)
        done = {n: forked._chunk(n) for n in _claimed(claims_read)}
        return pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)

    forked.child = in_child(claim_and_compute)
    return forked
