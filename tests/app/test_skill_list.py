"""#61.2: the skills page at a time, found by a part of their slug or title, with the counts a
person reads first over all of them (at 663 skills the console's list was 130 KB and
`GET /v1/skills` 102 KB, one row per skill; about 2 MB at 10,000)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from skillpress.app.base.context import AppContext
from skillpress.app.records.overview import skills_overview
from skillpress.app.records.skill_list import skills_page, skills_totals
from skillpress.schemas.records import ActionItem, Skill, Version

NOW = datetime(2026, 12, 6, tzinfo=UTC)


def _registry(ctx: AppContext, count: int) -> None:
    """`count` skills, each with a live version; every third has a proposal waiting after it,
    every fifth an open action item; and one skill with no version at all (nothing yet)."""
    with ctx.records.session() as s:
        for i in range(count):
            title = "Billing API" if i % 7 == 0 else f"Service {i}"
            s.add(Skill(id=f"s{i:05d}", slug=f"api-{i:05d}", title=title, created_at=NOW))
        s.add(Skill(id="empty", slug="aaa-empty", title="", created_at=NOW))
    with ctx.records.session() as s:
        for i in range(count):
            sid = f"s{i:05d}"
            s.add(_version(f"v{i:05d}", sid, "published", NOW))
            if i % 3 == 0:
                s.add(_version(f"p{i:05d}", sid, "proposed", NOW + timedelta(minutes=1)))
            if i % 5 == 0:
                s.add(ActionItem(skill_id=sid, kind="k", message="m", created_at=NOW))
    with ctx.records.session() as s:
        for i in range(count):
            skill = s.get(Skill, f"s{i:05d}")
            assert skill is not None
            skill.live_version_id = f"v{i:05d}"
            s.add(skill)


def _version(vid: str, skill_id: str, status: str, at: datetime) -> Version:
    return Version(
        id=vid,
        skill_id=skill_id,
        content_hash=vid,
        renderer="r",
        files_json="{}",
        status=status,
        created_at=at,
    )


def test_the_skills_come_a_page_at_a_time_and_every_one_is_reached(ctx: AppContext) -> None:
    _registry(ctx, 250)
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page, after = skills_page(ctx, after, limit=100)
        pages += 1
        seen += [s["slug"] for s in page]
        assert len(page) <= 100
        if after is None:
            break
    assert pages == 3 and seen == [f"api-{i:05d}" for i in range(250)]  # in order, none twice
    assert seen == [s["slug"] for s in skills_overview(ctx)]  # the same skills as the whole list
    first = skills_page(ctx, None, limit=100)[0]
    assert first[0] == {
        "slug": "api-00000",
        "title": "Billing API",
        "live_version_id": "v00000",
        "proposals": 1,
        "open_actions": 1,
        "detached": False,
    }
    assert (first[1]["proposals"], first[1]["open_actions"]) == (0, 0)
    assert skills_totals(ctx) == {"skills": 250, "proposals": 84, "open_actions": 50}


def test_a_skill_is_found_by_a_part_of_its_slug_or_title_in_any_case(ctx: AppContext) -> None:
    _registry(ctx, 30)
    billing, after = skills_page(ctx, None, limit=100, query="billing")
    assert [s["slug"] for s in billing] == [f"api-{i:05d}" for i in range(0, 30, 7)]
    assert after is None
    assert [s["slug"] for s in skills_page(ctx, None, query="API-0001")[0]] == [
        f"api-{i:05d}" for i in range(10, 20)
    ]
    # a search's wildcards are characters: `%` and `_` find only themselves
    assert skills_page(ctx, None, query="%")[0] == []
    assert skills_page(ctx, None, query="_")[0] == []
