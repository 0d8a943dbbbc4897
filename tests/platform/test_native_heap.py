"""A long-lived worker's C heap is handed back once a message is done (#61.3): what a large
transient allocation freed, with a little still held among it, returns to the system on `trim`;
without it glibc keeps it as the process's own."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from skillpress.platform import native_heap


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(native_heap._glibc() is None, reason="glibc's allocator only (musl, macOS)")
def test_what_a_thread_freed_goes_back_to_the_system_on_trim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(native_heap, "_last", 0.0)
    kept: list[bytes] = []

    def derive_like() -> None:  # 160 MB in 4 KB pieces, one in a hundred kept (as a cache keeps)
        pieces = [bytes(4096) + bytes([n % 256]) for n in range(40_000)]
        kept.extend(pieces[::100])

    thread = threading.Thread(target=derive_like)
    before = _rss_mb()
    thread.start()
    thread.join()
    held = _rss_mb()
    assert held - before > 80, (before, held)  # what glibc keeps once the thread freed it
    native_heap.trim()
    after = _rss_mb()
    assert held - after > 60, (before, held, after)
    assert len(kept) == 400
