"""The checked-in AsyncAPI document is what the models say."""

from __future__ import annotations

import json
from pathlib import Path

from schemas.asyncapi import asyncapi_document
from schemas.events import MESSAGES
from schemas.subjects import ALL_SUBJECTS


def test_asyncapi_json_is_in_sync_with_the_models() -> None:
    checked_in = json.loads((Path(__file__).parents[1] / "schemas" / "asyncapi.json").read_text())
    assert checked_in == json.loads(json.dumps(asyncapi_document())), (
        "run `just asyncapi` and commit schemas/asyncapi.json"
    )


def test_every_message_subject_is_in_the_closed_catalogue() -> None:
    assert set(MESSAGES) <= set(ALL_SUBJECTS)
    assert all(s.startswith("skillpress.") for s in ALL_SUBJECTS)
