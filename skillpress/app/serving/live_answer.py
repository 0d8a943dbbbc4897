"""The whole live set's answer (`GET /v1/live` with no filter), made once per change of the live
set and held: a follower's first catch-up of a 10,000-skill registry is 8.8 MB of JSON made from
10,000 records, and every follower asks for the same bytes after the same change. Held by the
tag it was made under (the live set's epoch and generation), so a process never answers bytes
older than the tag it sends, and a database it has not seen (another epoch) is never answered
from another's bytes."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from skillpress.app.base.context import AppContext
from skillpress.app.records.live import (
    live_pointer_dicts,
    live_pointers,
    live_set_tag,
    whole_live_set_tag,
)
from skillpress.platform.native_heap import trim

__all__ = [
    "COMPRESSED_FROM",
    "LOOKED_EVERY",
    "MAX_HELD",
    "LiveAnswer",
    "look_answer",
    "look_tag",
    "make_answer",
    "until_changed",
    "whole_live_answer",
]

COMPRESSED_FROM = 4096  # bytes: an answer this long or longer is kept gzip-compressed only
_GZIP = 16 + zlib.MAX_WBITS  # zlib's wbits for a gzip stream
_CHUNK = 1 << 20  # bytes of JSON at most in each piece a compressed answer is read back in
_FED = 1 << 16  # compressed bytes fed at a time
LOOKED_EVERY = 0.5  # seconds: how often a process reads the live set's row for its waiting looks
# looks a process holds open at once; one more is answered at once (304: it asks again, as a
# poll), so however many connections a token opens they hold no more than this
MAX_HELD = 1000


@dataclass(frozen=True)
class LiveAnswer:
    """One look's answer: its tag and its JSON, kept gzip-compressed when it is long (the whole
    answer of a 10,000-skill registry is 33.7 MB of JSON and 14 MB compressed: only the 14 MB
    are held, and a client that takes no gzip is sent the JSON as it is decompressed)."""

    tag: str
    data: bytes
    gzipped: bool

    def chunks(self) -> Iterator[bytes]:
        """The JSON, a piece at a time (never all of it at once when it is held compressed)."""
        if not self.gzipped:
            yield self.data
            return
        unpack = zlib.decompressobj(_GZIP)
        view = memoryview(self.data)
        for at in range(0, len(view), _FED):
            left: bytes | memoryview = view[at : at + _FED]
            while left:
                yield unpack.decompress(left, _CHUNK)
                left = unpack.unconsumed_tail
        if rest := unpack.flush():
            yield rest

    @property
    def body(self) -> bytes:
        """The JSON, whole."""
        return b"".join(self.chunks())


_held: list[LiveAnswer] = []  # the newest answer this process made (its tag names its database)
_making = threading.Lock()  # one made at a time: followers asking at once share it


def whole_live_answer(ctx: AppContext) -> LiveAnswer:
    """The whole live set's answer under its current tag: the one held when the live set has
    not moved since it was made, else made now (once, however many ask at the same moment)."""
    tag = whole_live_set_tag(ctx)
    held = _held[:1]
    if held and held[0].tag == tag:
        return held[0]
    with _making:
        tag = whole_live_set_tag(ctx)  # read before the pointers: the bytes are never older
        held = _held[:1]
        if held and held[0].tag == tag:
            return held[0]
        _held.clear()  # the old answer goes before the new one is made (one at a time, ever)
        made = make_answer(tag, live_pointers(ctx))
        if whole_live_set_tag(ctx) == tag:  # nothing moved while it was made: keep it
            _held[:] = [made]
        trim()  # what making it freed goes back to the system
        return made


def look_tag(ctx: AppContext, slugs: Sequence[str] | None) -> str:
    """A look's tag: the whole live set's (one row), or of the named skills' pointers."""
    return whole_live_set_tag(ctx) if slugs is None else live_set_tag(ctx, slugs)


def look_answer(ctx: AppContext, slugs: Sequence[str] | None, tag: str) -> LiveAnswer:
    """A look's answer: the whole live set's (held), or the named skills' under `tag` (read
    after it, so never older than it)."""
    if slugs is None:
        return whole_live_answer(ctx)
    return make_answer(tag, live_pointer_dicts(ctx, slugs))


def make_answer(tag: str, pointers: Iterable[object]) -> LiveAnswer:
    """An answer of `pointers` under `tag`: compact JSON, each pointer written as it is read and
    compressed as it is written once the answer is long (so neither the pointers nor the whole
    JSON are ever held at once; digests and hosts only, nothing secret to a compression oracle)."""
    plain: list[bytes] = [b"["]
    size = 1
    pack: zlib._Compress | None = None
    packed: list[bytes] = []
    for n, pointer in enumerate(pointers):
        piece = (b"," if n else b"") + json.dumps(pointer, separators=(",", ":")).encode()
        if pack is None:
            plain.append(piece)
            size += len(piece)
            if size >= COMPRESSED_FROM:
                pack = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
                packed.append(pack.compress(b"".join(plain)))
                plain.clear()
        else:
            packed.append(pack.compress(piece))
    if pack is None:
        return LiveAnswer(tag, b"".join(plain) + b"]", False)
    packed += [pack.compress(b"]"), pack.flush()]
    return LiveAnswer(tag, b"".join(packed), True)


class _Watch:
    """One process's watch on the live set's row for every look held open on it: one read per
    LOOKED_EVERY seconds while any look waits, and each waiting look woken only when it moved."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self.tag = ""  # "" until first read
        self.moved = asyncio.Event()  # set (and replaced) each time the tag moves
        self.waiting = 0
        self.task: asyncio.Task[None] | None = None

    def join(self) -> None:
        self.waiting += 1
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        while self.waiting:
            tag = await asyncio.to_thread(whole_live_set_tag, self.ctx)
            if tag != self.tag:
                self.tag, moved, self.moved = tag, self.moved, asyncio.Event()
                moved.set()
            await asyncio.sleep(LOOKED_EVERY)


_watches: dict[tuple[int, int], _Watch] = {}  # (id(records), id(loop)) → its watch


def _watch_of(ctx: AppContext) -> _Watch:
    key = (id(ctx.records), id(asyncio.get_running_loop()))
    watch = _watches.get(key)
    if watch is None or watch.ctx is not ctx:
        for old in [k for k, w in _watches.items() if not w.waiting]:
            del _watches[old]
        watch = _watches[key] = _Watch(ctx)
    return watch


async def until_changed(
    ctx: AppContext,
    slugs: Sequence[str] | None,
    seen: str,
    wait: float,
    stopping: asyncio.Event | None = None,
) -> None:
    """Return once a look's tag (of `slugs` only, when named) is no longer `seen`, after `wait`
    seconds at most, or as soon as the server is `stopping`: what looks held open cost is one
    read of one row per LOOKED_EVERY seconds for all of them together, and each look wakes only
    when the live set moved (then reads its own skills' rows when it named them)."""
    deadline = time.monotonic() + wait
    watch = _watch_of(ctx)
    if watch.waiting >= MAX_HELD:
        return
    watch.join()
    try:
        whole = seen if slugs is None else await asyncio.to_thread(whole_live_set_tag, ctx)
        while (left := deadline - time.monotonic()) > 0:
            if watch.tag and watch.tag != whole:
                whole = watch.tag
                if slugs is None:
                    return
                if await asyncio.to_thread(live_set_tag, ctx, slugs) != seen:
                    return
                continue
            if not await _woken(watch.moved, stopping, left):
                return  # the server is stopping, or the time is up
    finally:
        watch.waiting -= 1


async def _woken(moved: asyncio.Event, stopping: asyncio.Event | None, left: float) -> bool:
    """Wait for `moved` up to `left` seconds; False when `stopping` came first, or the time."""
    waits = {asyncio.ensure_future(moved.wait())}
    if stopping is not None:
        waits.add(asyncio.ensure_future(stopping.wait()))
    done, pending = await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return moved.is_set() and not (stopping is not None and stopping.is_set())
