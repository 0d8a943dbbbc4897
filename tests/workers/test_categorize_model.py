"""The categorize worker asks a model when tags fail, and records where the grouping came from."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from skillpress.app.base.context import open_app
from skillpress.app.records.versions import version_files
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.records import SourceRevision, Version
from skillpress.schemas.subjects import EVENTS
from tests.chat_server import ChatServer
from tests.workers.conftest import SPECS, submit, watching, workers

pytestmark = pytest.mark.integration  # starts real servers


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


@pytest.mark.parametrize(
    ("script", "source", "note"),
    [
        ([], "model", "tags failed (no_tags); the model grouped the operations (test-model)"),
        (
            ["slow", "slow"],
            "paths",
            "tags failed (no_tags); the model did not answer within 1 s; grouped offline by path",
        ),
    ],
)
async def test_failed_tags_go_to_the_model_and_the_source_is_recorded(
    settings: Settings, chat: ChatServer, script: list[str], source: str, note: str
) -> None:
    assert settings.nats_url
    chat.script = list(script)
    configured = settings.model_copy(
        update={"llm_base_url": chat.url, "llm_model": "test-model", "llm_timeout": 1.0}
    )
    ctx = open_app(configured)
    try:
        blob = ctx.blobs.put((SPECS / "discord.json").read_bytes())
        async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
            await submit(
                nc,
                SpecSubmitted(submission="d", skill="discord", blob=blob, created_by="test"),
                "submitted:d",
            )
            categorized = await watcher.wait_for(
                EVENTS.revision_categorized, timeout=60, submission="d"
            )
            proposed = await watcher.wait_for(EVENTS.version_proposed, timeout=60, submission="d")
        assert (categorized["source"], categorized["note"], categorized["tag_failure"]) == (
            source,
            note,
            "no_tags",
        )
        with ctx.records.session() as s:
            rev = s.get(SourceRevision, categorized["revision_id"])
            assert rev is not None and (rev.grouping_source, rev.grouping_note) == (source, note)
            version = s.get(Version, proposed["version_id"])
            assert version is not None
            files = version_files(ctx.blobs, version)
        assert json.loads(files["skill.json"])["categorization"]["source"] == source
        assert len(files["body.md"]) <= 8 * 1024
    finally:
        ctx.records.close()
