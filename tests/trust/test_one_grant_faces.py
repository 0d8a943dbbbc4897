"""Invariant: a grant is consumed by exactly one request — attacked through the faces that run as
processes: N `skillpress call` processes waiting at once (SQLite and PostgreSQL), and an MCP
server over stdio and over streamable HTTP taking N identical calls at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.context import open_app
from skillpress.app.records import approval_requests as approvals
from skillpress.platform.settings import Settings
from tests.trust.harness import Guest, N, guesthouse
from tests.trust.test_one_grant_one_request import _booking, _mcp_attack

pytestmark = pytest.mark.integration  # the command line and MCP servers as processes

ROOT = Path(__file__).parents[2]


@pytest.fixture
def guest(tmp_path: Path) -> Iterator[Guest]:
    with guesthouse(tmp_path) as made:
        yield made


def _env(settings: Settings, guest: Guest) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SKILLPRESS_") or k == "SKILLPRESS_TEST_SERVERS"
    }
    env |= {"SKILLPRESS_HOME": str(settings.home), **guest.environ()}
    if settings.database_url:
        env["SKILLPRESS_DATABASE_URL"] = settings.database_url
    return env


def _wait_for(ctx: Any, status: str, seen: int = 1) -> int:
    """The id of the first request of `status` once there is one (a hang guard of 120 s)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rows = [r for r in approvals.list_requests(ctx, everything=True) if r["status"] == status]
        if len(rows) >= seen:
            return int(rows[0]["id"] or 0)
        time.sleep(0.1)
    raise AssertionError(f"no {status} request came")


def test_n_command_lines_waiting_at_once(settings: Settings, guest: Guest) -> None:
    booking = _booking(guest)
    argv = [
        sys.executable,
        "-m",
        "skillpress.cli.main",
        "call",
        str(guest.package),
        "cancel_booking",
        "--args",
        json.dumps({"booking_id": booking}),
        "--approval-timeout",
        "150",
    ]
    env = _env(settings, guest)
    open_app(settings).close()  # the home's records made once, before N processes open them
    procs = [
        subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(N)
    ]
    said: list[list[str]] = [[] for _ in procs]

    def read(i: int) -> None:
        stream = procs[i].stderr
        assert stream is not None
        for raw in stream:
            said[i].append(raw.decode(errors="replace"))

    readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(N)]
    for r in readers:
        r.start()
    ctx = open_app(settings)
    try:
        deadline = time.monotonic() + 120
        while sum(any("waiting for approval #1" in ln for ln in lines) for lines in said) < N:
            assert time.monotonic() < deadline, said
            time.sleep(0.1)
        approvals.decide(ctx, 1, True, "ops")
        again = _wait_for(ctx, "pending")  # the callers that did not get the grant ask anew
        time.sleep(1.0)  # every one of them polls at least once more
        approvals.decide(ctx, again, False, "ops")
        codes = [p.wait(120) for p in procs]
        rows = approvals.list_requests(ctx, everything=True)
    finally:
        ctx.close()
        for p in procs:
            if p.poll() is None:
                p.kill()
    for r in readers:
        r.join(10)
    assert sorted(codes) == [0] + [2] * (N - 1), (codes, said)  # sent once; denied: refused
    assert [r["status"] for r in rows] == ["used", "denied"], rows
    assert len(guest.deletes()) == 1, guest.deletes()


async def test_an_mcp_server_over_stdio(settings: Settings, guest: Guest) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillpress.cli.main", "mcp", str(guest.package)],
        cwd=str(ROOT),
        env=_env(settings, guest),
    )
    async with Client(params) as client:
        await _mcp_attack(settings, guest, client)


async def test_an_mcp_server_over_http(settings: Settings, guest: Guest) -> None:
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from skillpress.platform.local_processes import free_port

    port, token = free_port(), "the-test-token-of-this-mcp-server"
    env = _env(settings, guest) | {"SKILLPRESS_MCP_TOKEN": token}
    argv = [sys.executable, "-m", "skillpress.cli.main", "mcp", str(guest.package)]
    proc = subprocess.Popen(
        [*argv, "--transport", "http", "--port", str(port)],
        cwd=str(ROOT),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(streamable_http_client(url, http_client=authed)) as client:
            await _mcp_attack(settings, guest, client)
    finally:
        proc.terminate()
        proc.wait(10)
