"""The pipeline end to end on real nats-server, PostgreSQL and S3 (SeaweedFS)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from sqlmodel import select

from skillpress.app.base.context import AppContext
from skillpress.platform.blobs import S3BlobStore
from skillpress.platform.broker import live_subject
from skillpress.platform.settings import Settings
from skillpress.runtime.package.skill import load_skill
from skillpress.schemas.events import (
    PublishVersion,
    RevisionCategorized,
    RevisionParsed,
    RevisionStored,
    SpecSubmitted,
)
from skillpress.schemas.records import (
    DeadLetter,
    Publication,
    Skill,
    SourceRevision,
    Suggestion,
    Version,
)
from skillpress.schemas.subjects import COMMANDS, EVENTS
from skillpress.workers import categorize, fetch, guess_approvals, parse, publish, render
from tests.workers.conftest import SPECS, submit, watching, workers

pytestmark = pytest.mark.integration  # starts real servers


def _snapshot(ctx: AppContext) -> dict[str, Any]:
    """Every record, as comparable data."""
    out: dict[str, Any] = {}
    with ctx.records.session() as s:
        for model in (Skill, SourceRevision, Version, Publication, Suggestion, DeadLetter):
            rows = s.exec(select(model)).all()
            out[model.__name__] = sorted(
                json.dumps(r.model_dump(mode="json"), sort_keys=True) for r in rows
            )
    return out


async def test_submit_propose_publish_and_a_plain_subscriber_loads_every_file(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    spec = (SPECS / "oai-petstore-expanded.yaml").read_bytes()
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        published: list[dict[str, Any]] = []

        async def on_published(
            msg: Any,
        ) -> None:  # a downstream runtime: plain nats-py, no skillpress code
            published.append(json.loads(msg.data))

        await nc.subscribe(EVENTS.version_published, cb=on_published)
        blob = ctx.blobs.put(spec)
        await submit(
            nc,
            SpecSubmitted(submission="sub-1", skill="petstore", blob=blob, created_by="test"),
            "submitted:sub-1",
        )
        proposed = await watcher.wait_for(EVENTS.version_proposed, submission="sub-1")
        assert proposed["created"] is True and proposed["summary"] == {
            "added": 4,
            "removed": 0,
            "changed": 0,
            "files_changed": 8,
        }
        with ctx.records.session() as s:
            skill = s.exec(select(Skill).where(Skill.slug == "petstore")).one()
            assert skill.live_version_id is None, "nothing is live before a person publishes"
            assert s.get(Version, proposed["version_id"]).status == "proposed"  # type: ignore[union-attr]
        await submit(
            nc,
            PublishVersion(
                skill="petstore", version_id=proposed["version_id"][:8], requested_by="test"
            ),
        )
        await watcher.wait_for(EVENTS.version_published, version_id=proposed["version_id"])
    assert len(published) == 1
    event = published[0]
    assert event["hosts"] == ["petstore.swagger.io"] and event["skill"] == "petstore"
    endpoint = settings.s3_endpoint
    assert endpoint
    reader = S3BlobStore(endpoint, *_creds(settings), bucket=settings.s3_bucket)
    files = {path: reader.get(key) for path, key in event["files"].items()}
    assert sorted(files) == [
        "add_pet.md",
        "body.md",
        "delete_pet.md",
        "find_pet_by_id.md",
        "find_pets.md",
        "index.json",
        "skill.json",
        "types.json",
    ]
    assert all(hashlib.sha256(data).hexdigest() == event["files"][p] for p, data in files.items())
    skill_loaded = load_skill(files)
    assert sorted(t.name for t in skill_loaded.tools) == [
        "petstore_add_pet",
        "petstore_delete_pet",
        "petstore_find_pet_by_id",
        "petstore_find_pets",
    ]
    with ctx.records.session() as s:
        skill = s.exec(select(Skill).where(Skill.slug == "petstore")).one()
        assert skill.live_version_id == proposed["version_id"]
        assert [p.version_id for p in s.exec(select(Publication)).all()] == [proposed["version_id"]]
        kinds = sorted((g.operation, g.kind, g.group) for g in s.exec(select(Suggestion)).all())
    assert kinds == [
        ("add_pet", "approval", "changes"),
        ("add_pet", "identity", "changes"),
        ("delete_pet", "approval", "deletes"),
    ]  # reads are not proposed for approval: nothing in their answers looks secret


def _creds(settings: Settings) -> tuple[str, str]:
    import os

    return os.environ[settings.s3_access_key_env], os.environ[settings.s3_secret_key_env]


async def test_identical_bytes_make_nothing_new_and_rerunning_any_handler_changes_nothing(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    spec = (SPECS / "twilio-insights-v2.json").read_bytes()
    blob = ctx.blobs.put(spec)
    first = SpecSubmitted(submission="a", skill="insights", blob=blob, created_by="test")
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await submit(nc, first, "submitted:a")
        proposed = await watcher.wait_for(EVENTS.version_proposed, submission="a")
        await submit(
            nc,
            PublishVersion(
                skill="insights", version_id=proposed["version_id"], requested_by="test"
            ),
        )
        await watcher.wait_for(EVENTS.version_published)
        before = _snapshot(ctx)
        await submit(
            nc,
            SpecSubmitted(submission="b", skill="insights", blob=blob, created_by="test"),
            "submitted:b",
        )
        unchanged = await watcher.wait_for(EVENTS.revision_unchanged, submission="b")
        assert unchanged["revision_id"] == proposed["revision_id"]
    assert _snapshot(ctx) == before
    assert len(before["SourceRevision"]) == 1 and len(before["Version"]) == 1
    # Every handler re-run on the message it already handled: the same events, the same records.
    rid = proposed["revision_id"]
    rerun = [
        fetch.fetch(ctx, first),
        parse.parse(
            ctx, RevisionStored(revision_id=rid, skill="insights", spec_sha256=blob, submission="a")
        ),
        categorize.categorize(
            ctx, RevisionParsed(revision_id=rid, skill="insights", operations=6, submission="a")
        ),
        guess_approvals.guess_approvals(
            ctx, RevisionParsed(revision_id=rid, skill="insights", operations=6, submission="a")
        ),
        render.render(
            ctx,
            RevisionCategorized(
                revision_id=rid, skill="insights", source="flat", categories=0, submission="a"
            ),
        ),
        publish.publish(
            ctx,
            PublishVersion(
                skill="insights", version_id=proposed["version_id"], requested_by="test"
            ),
        ),
    ]
    assert _snapshot(ctx) == before
    again = [[(o.subject, o.msg_id, o.payload.model_dump()) for o in outs] for outs in rerun]
    assert again[0][0][0] == EVENTS.revision_stored and again[0][0][1] == f"stored:{rid}:a"
    assert (
        again[4][0][2]["version_id"] == proposed["version_id"]
        and again[4][0][2]["created"] is False
    )
    assert [s for s, *_ in again[5]] == [live_subject("insights"), EVENTS.version_published]
    published_ids = {o.msg_id for o in rerun[5]}
    assert published_ids == {
        o.msg_id
        for o in publish.publish(
            ctx,
            PublishVersion(skill="insights", version_id=proposed["version_id"], requested_by="x"),
        )
    }


async def test_a_refused_spec_is_a_refused_revision_and_nothing_earlier_changes(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    good = ctx.blobs.put((SPECS / "oai-petstore.swagger2.yaml").read_bytes())
    bad = ctx.blobs.put((SPECS / "adyen-management-notification-v3.json").read_bytes())
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await submit(
            nc,
            SpecSubmitted(submission="good", skill="pets", blob=good, created_by="test"),
            "submitted:good",
        )
        proposed = await watcher.wait_for(EVENTS.version_proposed, submission="good")
        await submit(
            nc, PublishVersion(skill="pets", version_id=proposed["version_id"], requested_by="test")
        )
        await watcher.wait_for(EVENTS.version_published)
        before = _snapshot(ctx)
        await submit(
            nc,
            SpecSubmitted(submission="bad", skill="pets", blob=bad, created_by="test"),
            "submitted:bad",
        )
        rejected = await watcher.wait_for(EVENTS.revision_rejected, submission="bad")
        assert watcher.count(EVENTS.revision_parsed, submission="bad") == 0
    reason = "the document describes only webhooks (8), calls the API makes to you; it has no operations for an agent to call"
    assert rejected["reason"] == reason
    after = _snapshot(ctx)
    with ctx.records.session() as s:
        refused = s.get(SourceRevision, rejected["revision_id"])
        assert refused is not None and (refused.status, refused.refusal_reason) == (
            "refused",
            reason,
        )
        skill = s.exec(select(Skill).where(Skill.slug == "pets")).one()
        assert skill.live_version_id == proposed["version_id"]
    new_rows = sorted(set(after["SourceRevision"]) - set(before["SourceRevision"]))
    assert len(new_rows) == 1 and json.loads(new_rows[0])["status"] == "refused"
    assert {k: v for k, v in after.items() if k != "SourceRevision"} == {
        k: v for k, v in before.items() if k != "SourceRevision"
    }
    assert set(before["SourceRevision"]) <= set(after["SourceRevision"])


async def test_a_poison_message_and_a_permanent_failure_become_dead_letters(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await nc.jetstream().publish(EVENTS.spec_submitted, b'{"skill": 42}')
        await nc.jetstream().publish(
            COMMANDS.publish_version,
            PublishVersion(skill="nope", version_id="abcdef12", requested_by="t")
            .model_dump_json()
            .encode(),
        )
        for _ in range(100):
            with ctx.records.session() as s:
                letters = s.exec(select(DeadLetter)).all()
            if len(letters) >= 2:
                break
            import asyncio

            await asyncio.sleep(0.1)
    by_worker = {d.worker: d for d in letters}
    assert sorted(by_worker) == ["fetch", "publish"]
    assert by_worker["fetch"].error.startswith("malformed SpecSubmitted")
    assert by_worker["publish"].error == "NotFound: no skill 'nope'"
    assert json.loads(by_worker["publish"].payload)["version_id"] == "abcdef12"
