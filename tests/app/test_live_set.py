"""#61.1: what a follower's look costs grows with what changed, not with the registry. The whole
live set's tag is one row that moves in the same transaction as any live pointer (publishes at
once, on SQLite and PostgreSQL, each move it: none is lost), its answer is made once per change
and is exactly the pointers' JSON, and a look held open ends when the live set moves."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.records.live import live_pointer_dicts, whole_live_set_tag
from skillpress.app.records.versions import pointer_of
from skillpress.app.serving import live_answer
from skillpress.app.stages.publish import publish_version
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import LiveSet, Skill, Version
from skillpress.schemas.subjects import EVENTS
from tests.app import bus
from tests.trust.harness import STORES, race, settings_for

PETSTORE = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
RACERS = 6


def _proposed(ctx: AppContext, slug: str) -> str:
    """`slug` submitted (the petstore spec), its proposed version's id."""
    blob = ctx.blobs.put(PETSTORE.read_bytes())
    event = SpecSubmitted(submission=f"s-{slug}", skill=slug, blob=blob, created_by="t")
    return [b for s, b in bus.run(ctx, EVENTS.spec_submitted, event)][-1]["version_id"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    ctx = open_app(settings_for(request, tmp_path / "home"))
    yield ctx
    ctx.close()


def test_every_publish_at_once_moves_the_live_sets_tag(store: AppContext) -> None:
    """Six skills published at the same moment: the one row moved six times (an increment lost
    to a race would leave a follower's tag standing on a live set that changed), and the tag a
    look reads is that row's."""
    versions = {f"pets-{i}": _proposed(store, f"pets-{i}") for i in range(RACERS)}
    before = whole_live_set_tag(store)
    slugs = sorted(versions)
    outcomes = race(
        RACERS, lambda i: publish_version(store, slugs[i], versions[slugs[i]], False, "ops")
    )
    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes
    with store.records.session() as s:
        row = s.get(LiveSet, 1)
        assert row is not None
        generation, epoch = row.generation, row.epoch
    assert before == f"{epoch}.0"
    assert (generation, whole_live_set_tag(store)) == (RACERS, f"{epoch}.{RACERS}")
    # publishing what is live again moves nothing (a follower's look would find nothing new)
    publish_version(store, slugs[0], versions[slugs[0]], False, "ops")
    assert whole_live_set_tag(store) == f"{epoch}.{RACERS}"


def test_the_whole_answer_is_the_pointers_made_once_per_change(
    ctx: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its JSON is exactly every live pointer's (as `LiveVersion` dumps it); a second look at
    the same live set is answered from what the first made, and a publish makes it again."""
    first = _proposed(ctx, "pets")
    publish_version(ctx, "pets", first, False, "ops")
    with ctx.records.session() as s:
        pairs = s.exec(select(Skill, Version).where(Skill.live_version_id == Version.id)).all()
        expected = [pointer_of(k, v).model_dump(mode="json") for k, v in pairs]
    assert live_pointer_dicts(ctx) == expected and len(expected) == 1
    made: list[int] = []
    real = live_answer.live_pointers

    def counted(*args: Any) -> Any:
        made.append(1)
        return real(*args)

    monkeypatch.setattr(live_answer, "live_pointers", counted)
    one, two = live_answer.whole_live_answer(ctx), live_answer.whole_live_answer(ctx)
    assert one is two and json.loads(one.body) == expected and len(made) == 1
    second = _proposed(ctx, "dogs")
    publish_version(ctx, "dogs", second, False, "ops")
    three = live_answer.whole_live_answer(ctx)
    assert len(made) == 2 and three.tag != one.tag
    assert [p["skill"] for p in json.loads(three.body)] == ["dogs", "pets"]


def test_a_long_answer_is_held_compressed_only_and_read_back_exactly() -> None:
    """#61.3: the whole answer of a 10,000-skill registry is 33.7 MB of JSON; made pointer by
    pointer into gzip, only the compressed bytes are held (14 MB there), and the JSON read back
    from them, a piece at a time, is exactly the pointers' compact JSON. A short one is plain."""
    pointers = [
        {
            "skill": f"api-{n:05}",
            "version": f"{n:064x}",
            "files": {f"f{k}.md": f"{k * n:064x}" for k in range(20)},
        }
        for n in range(6000)
    ]
    made = live_answer.make_answer("t", iter(pointers))
    whole = json.dumps(pointers, separators=(",", ":")).encode()
    pieces = list(made.chunks())
    assert made.gzipped and len(made.data) < len(whole) / 3
    assert b"".join(pieces) == whole == made.body and len(pieces) > 3
    assert max(len(p) for p in pieces) < len(whole) / 3  # never the whole JSON at once
    short = live_answer.make_answer("t", iter(pointers[:1]))
    assert (
        not short.gzipped and short.data == json.dumps(pointers[:1], separators=(",", ":")).encode()
    )
    assert live_answer.make_answer("t", iter([])).data == b"[]"


def test_a_look_held_open_ends_when_the_live_set_moves(ctx: AppContext) -> None:
    """A look waiting on the whole set, and one on a named skill, end as soon as it moves (a
    publish of another skill does not end the named one's); one that nothing answers ends when
    its time is up, and one on a stopping server at once."""
    first = _proposed(ctx, "pets")
    other = _proposed(ctx, "dogs")
    seen = live_answer.look_tag(ctx, None)
    pets = live_answer.look_tag(ctx, ["pets"])

    async def scene() -> list[str]:
        loop = asyncio.get_running_loop()
        whole = asyncio.ensure_future(live_answer.until_changed(ctx, None, seen, 60))
        named = asyncio.ensure_future(live_answer.until_changed(ctx, ["pets"], pets, 60))
        ended: list[str] = []
        whole.add_done_callback(lambda _: ended.append("whole"))
        named.add_done_callback(lambda _: ended.append("named"))
        await asyncio.sleep(0.2)
        await loop.run_in_executor(None, publish_version, ctx, "dogs", other, False, "ops")
        await asyncio.wait_for(whole, 30)  # a hang guard: it ends within a second
        assert not named.done()
        await loop.run_in_executor(None, publish_version, ctx, "pets", first, False, "ops")
        await asyncio.wait_for(named, 30)
        # nothing moves: it ends when its time is up; on a stopping server, at once
        now = live_answer.look_tag(ctx, None)
        await asyncio.wait_for(live_answer.until_changed(ctx, None, now, 0.3), 30)
        stopping = asyncio.Event()
        stopping.set()
        await asyncio.wait_for(live_answer.until_changed(ctx, None, now, 600, stopping), 5)
        return ended

    assert asyncio.run(scene()) == ["whole", "named"]


def test_looks_held_open_are_bounded_and_one_more_is_answered_at_once(
    ctx: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many looks a token opens, a process holds at most MAX_HELD of them open; one
    more is answered at once (a 304: it asks again, as a poll)."""
    monkeypatch.setattr(live_answer, "MAX_HELD", 2)
    seen = live_answer.look_tag(ctx, None)

    async def scene() -> list[bool]:
        held = [asyncio.ensure_future(live_answer.until_changed(ctx, None, seen, 60)) for _ in "ab"]
        await asyncio.sleep(0.2)
        await asyncio.wait_for(live_answer.until_changed(ctx, None, seen, 60), 5)  # the third
        done = [h.done() for h in held]
        for h in held:
            h.cancel()
        return done

    assert asyncio.run(scene()) == [False, False]
