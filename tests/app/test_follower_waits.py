"""#57.5: `follow --api` exited when serve restarted (`/v1/live: 503 this server is stopping`).
A follower is a long-running process: a server that does not answer (503 while it stops) is
waited out with backoff and a line each try, and following goes on once it answers; a refusal
of the follower itself (a revoked token, 401) ends it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import structlog

from skillpress.app.serving.api_follower import ApiFollower, follow_api
from skillpress.app.serving.followers import FollowRefused
from tests.fake_api import FakeApi, Reply, Seen


def test_a_server_that_restarts_is_waited_out(tmp_path: Path) -> None:
    stopping = Reply(503, {"detail": "this server is stopping"})
    api = FakeApi(lambda r: stopping if len(api.seen) <= 2 else Reply(200, []))
    follower = ApiFollower(api.url, "runtime-token")

    async def following() -> None:
        stop = asyncio.Event()

        async def until_asked_twice_after() -> None:
            while len(api.seen) < 4:  # it asked again after the restart, and again after that
                await asyncio.sleep(0.05)
            stop.set()

        await asyncio.wait_for(
            asyncio.gather(
                follow_api(follower, tmp_path / "out", None, "skill", {}, stop, print, 0.05),
                until_asked_twice_after(),
            ),
            60,  # a hang guard
        )

    with structlog.testing.capture_logs() as said:
        try:
            asyncio.run(following())
        finally:
            follower.close()
            api.close()
    assert [r.path for r in api.seen][:4] == ["/v1/live"] * 4
    waits = [e for e in said if e["event"] == "follow.waiting_for_the_api"]
    assert [w["retry_in"] for w in waits] == [1.0, 2.0], waits
    assert "503 this server is stopping" in waits[0]["error"]
    assert any(e["event"] == "follow.answering_again" for e in said)


def test_a_refused_follower_stops(tmp_path: Path) -> None:
    api = FakeApi(lambda r: Reply(401, {"detail": "the token is revoked"}))
    follower = ApiFollower(api.url, "revoked")
    try:
        with pytest.raises(FollowRefused, match="401 the token is revoked"):
            asyncio.run(
                follow_api(
                    follower, tmp_path / "out", None, "skill", {}, asyncio.Event(), print, 0.05
                )
            )
    finally:
        follower.close()
        api.close()


def test_an_idle_follower_asks_only_whether_anything_changed(tmp_path: Path) -> None:
    """#61.1 (part): each look after the first sends the ETag of the last one it kept, and a
    304 is nothing new (no pointer read, no folder checked); the skills it follows are named
    in the look (?skill=)."""
    tag = '"live-set-1"'

    def live(request: Seen) -> Reply:
        if request.header("If-None-Match") == tag:
            return Reply(304, b"", {"ETag": tag})
        return Reply(200, [], {"ETag": tag})

    api = FakeApi(live)
    follower = ApiFollower(api.url, "runtime-token")

    async def following() -> None:
        stop = asyncio.Event()

        async def until_four_looks() -> None:
            while len(api.seen) < 4:
                await asyncio.sleep(0.02)
            stop.set()

        await asyncio.wait_for(
            asyncio.gather(
                follow_api(follower, tmp_path / "out", {"pets"}, "skill", {}, stop, print, 0.02),
                until_four_looks(),
            ),
            60,  # a hang guard
        )

    try:
        asyncio.run(following())
    finally:
        follower.close()
        api.close()
    looks = api.seen[:4]
    # the first look asks for everything at once; the next are held open by the API until
    # something changes (20 s at most; a server that does not hold them answers at once)
    assert [r.path for r in looks] == ["/v1/live?skill=pets"] + [
        "/v1/live?skill=pets&wait=20.0"
    ] * 3
    assert looks[0].header("If-None-Match") is None
    assert [r.header("If-None-Match") for r in looks[1:]] == [tag] * 3
