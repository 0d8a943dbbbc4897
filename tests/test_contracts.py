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


def test_every_subject_of_the_catalogue_has_a_message_model_and_no_model_is_off_it() -> None:
    assert set(ALL_SUBJECTS) == set(MESSAGES)
    assert all(s.startswith("skillpress.") for s in ALL_SUBJECTS)


def test_openapi_json_is_in_sync_with_the_api() -> None:
    from services.api.app import api_document

    checked_in = json.loads((Path(__file__).parents[1] / "schemas" / "openapi.json").read_text())
    assert checked_in == json.loads(json.dumps(api_document())), (
        "run `just openapi` and commit schemas/openapi.json"
    )
