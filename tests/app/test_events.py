"""Events are followed as the catalogue's parsed models: a message on a subject is read into that
subject's model or not at all, and what a face says of it is read from the model's fields."""

from __future__ import annotations

import pytest

from skillpress.app.base.bus import Event, parse_event
from skillpress.app.operator.submissions import describe_event
from skillpress.schemas.events import MESSAGES, RevisionCategorized, VersionProposed
from skillpress.schemas.subjects import COMMANDS, EVENTS


def test_every_subject_of_the_catalogue_has_its_model() -> None:
    assert set(MESSAGES) == {*EVENTS.values(), *COMMANDS.values()}


def test_a_message_is_parsed_into_its_subjects_model_or_not_at_all() -> None:
    data = b'{"version_id": "v1", "skill": "s", "summary": {"added": 2}, "submission": "x"}'
    event = parse_event(EVENTS.version_proposed, data)
    assert event is not None and isinstance(event.message, VersionProposed)
    assert (event.submission, event.message.summary, event.message.created) == (
        "x",
        {"added": 2},
        True,
    )
    assert event.body["version_id"] == "v1" and event.body["created"] is True
    # a subject outside the catalogue, a body its model refuses, bytes that are not JSON
    assert parse_event("skillpress.something.else", data) is None
    assert parse_event(EVENTS.version_proposed, b'{"skill": "s"}') is None
    assert parse_event(EVENTS.version_proposed, b"not json") is None


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (
            Event(
                EVENTS.revision_categorized,
                RevisionCategorized(
                    revision_id="r", skill="s", source="tags", categories=3, tag_failure="none"
                ),
            ),
            ("3 categories from tags (tags failed: none)", "rendering…"),
        ),
        (
            Event(
                EVENTS.version_proposed,
                VersionProposed(version_id="abcdef0123456789", skill="s", created=False),
            ),
            (
                "proposed version abcdef012345 (identical to a version already stored): "
                "0 added, 0 removed, 0 changed",
                None,
            ),
        ),
    ],
    ids=["categorized", "unchanged-proposal"],
)
def test_a_stage_is_said_from_its_models_fields(event: Event, said: tuple[str, str | None]) -> None:
    assert describe_event(event) == said
