"""Memory over time: an MCP server answering call after call keeps nothing per call. Bounded
(it stops by itself after a fixed number of calls): after a warm-up, the memory blocks the
interpreter holds grow by less than one per three calls over the last window, so it has levelled
off (a leak of 7 KB a call would be dozens of blocks a call). Measured: +43,307 blocks over the
first 250 calls, +266, +180, then -25 to +53 a window of 250."""

from __future__ import annotations

import gc
import sys
import tempfile
from pathlib import Path

import pytest

from tests.runtime.guesthouse import KEY, GuesthouseServer, example_skill

pytestmark = pytest.mark.integration  # a soak: a server answering thousands of calls

WARM, WINDOW = 600, 300  # caches (regexes, type checkers) fill over the first ~750 calls
ARGS = {
    "name": "check_availability",
    "arguments": {"room_id": "oak", "arrival": "2026-12-24", "departure": "2026-12-27"},
}


async def test_an_mcp_server_levels_off_over_many_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp import Client

    from skillpress.app.base.package_dir import read_package_dir
    from skillpress.mcp.server import build_mcp_server
    from skillpress.runtime.calling.credential import Credential
    from skillpress.runtime.package.skill import load_skill

    monkeypatch.setenv("HOLLOWBROOK_API_KEY", KEY)
    with GuesthouseServer() as server:
        folder = example_skill(Path(tempfile.mkdtemp()), server)
        files = read_package_dir(folder, hand_written=True)
        skill = load_skill(files, lazy=True)
        assert skill.auth is not None
        mcp = build_mcp_server(
            skill, files, credential=Credential(skill.auth, "HOLLOWBROOK_API_KEY")
        )
        async with Client(mcp) as client:

            async def calls(n: int) -> None:
                for _ in range(n):
                    answer = await client.call_tool("call_operation", ARGS)
                    assert not answer.is_error, answer.content
                    server.house.seen.clear()  # the test's server keeps what it saw

            await calls(WARM)
            gc.collect()
            start = sys.getallocatedblocks()
            await calls(WINDOW)
            gc.collect()
            middle = sys.getallocatedblocks()
            await calls(WINDOW)
            gc.collect()
            end = sys.getallocatedblocks()
    first, second = middle - start, end - middle
    # what the first window grew by is caches filling (regexes, type checkers); the second
    # window grows by a leak's worth (an object or more a call) only if something is kept
    assert second < WINDOW // 3, f"{second:,} more blocks after {WINDOW} calls (first {first:,})"
