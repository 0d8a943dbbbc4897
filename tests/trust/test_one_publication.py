"""Invariant: one publication per decision, one chain of live versions per skill
(`app/stages/publish.publish_version` moves the live pointer only by a conditional update from
the version it read as live: a publish that lost the race reads again).

Every face that publishes (the command line's `publish` and `publish --all-proposed`, `POST
/v1/.../publish` and `POST /v1/publications`, the console's button, a publish worker's replicas
taking redelivered commands) ends in that one function, so it is attacked there, with N callers
at once, on SQLite and PostgreSQL. An earlier release recorded as many publications of one
version as callers that raced, each naming the same previous version, and two versions
published at once both claimed to replace the same one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlmodel import col, select

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.stages.publish import Published, publish_version
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import Publication, Version
from skillpress.schemas.subjects import EVENTS
from tests.app import bus
from tests.conftest import SPECS
from tests.trust.harness import N, race

PETSTORE = SPECS / "oai-petstore-expanded.yaml"


def _proposed(ctx: AppContext, data: bytes, slug: str, submission: str) -> str:
    blob = ctx.blobs.put(data)
    submitted = SpecSubmitted(submission=submission, skill=slug, blob=blob, created_by="t")
    events = bus.run(ctx, EVENTS.spec_submitted, submitted)
    return str([body for subject, body in events if "version_id" in body][-1]["version_id"])


def _publications(ctx: AppContext) -> list[Publication]:
    with ctx.records.session() as s:
        return list(s.exec(select(Publication).order_by(col(Publication.id))).all())


def _outcomes(ctx: AppContext, versions: list[str]) -> list[Any]:
    return race(
        N, lambda i: publish_version(ctx, "pets", versions[i % len(versions)], False, f"op{i}")
    )


def test_one_version_published_by_many_at_once_is_one_publication(
    settings: Settings, tmp_path: Path
) -> None:
    ctx = open_app(settings)
    try:
        version = _proposed(ctx, PETSTORE.read_bytes(), "pets", "s1")
        outcomes = _outcomes(ctx, [version])
        assert all(isinstance(o, Published) for o in outcomes), outcomes
        pubs = _publications(ctx)
        assert [(p.version_id, p.previous_version_id) for p in pubs] == [(version, None)]
        assert {o.publication_id for o in outcomes} == {pubs[0].id}
        assert sorted(o.already_live for o in outcomes) == [False] + [True] * (N - 1)
    finally:
        ctx.close()


def test_two_versions_published_at_once_make_one_chain(settings: Settings) -> None:
    ctx = open_app(settings)
    try:
        first = _proposed(ctx, PETSTORE.read_bytes(), "pets", "s1")
        spec = json.loads(json.dumps(_yaml(PETSTORE)))
        spec["info"]["title"] = "Swagger Petstore, revised"
        second = _proposed(ctx, json.dumps(spec).encode(), "pets", "s2")
        assert first != second
        outcomes = _outcomes(ctx, [first, second])
        assert all(isinstance(o, Published) for o in outcomes), outcomes
        pubs = _publications(ctx)
        # each publication replaces the one before it, and the last one is what is live
        chain = [p.previous_version_id for p in pubs]
        assert chain == [None, *(p.version_id for p in pubs[:-1])], chain
        assert all(a.version_id != b.version_id for a, b in zip(pubs, pubs[1:], strict=False))
        with ctx.records.session() as s:
            from skillpress.platform.ids import derived_id
            from skillpress.schemas.records import Skill

            skill = s.get(Skill, derived_id("skill", "pets"))
            assert skill is not None and skill.live_version_id == pubs[-1].version_id
            statuses = {v.id: v.status for v in s.exec(select(Version)).all()}
        live = pubs[-1].version_id
        assert statuses[live] == "published"
        assert [status for v, status in statuses.items() if v != live] == ["superseded"]
    finally:
        ctx.close()


def _yaml(path: Path) -> Any:
    import yaml

    return yaml.safe_load(path.read_text())
