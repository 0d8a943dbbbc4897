"""The checked-in AsyncAPI document is what the models say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillpress.schemas.asyncapi import asyncapi_document
from skillpress.schemas.events import MESSAGES
from skillpress.schemas.subjects import ALL_SUBJECTS


def test_asyncapi_json_is_in_sync_with_the_models() -> None:
    checked_in = json.loads(
        (Path(__file__).parents[1] / "skillpress" / "schemas" / "asyncapi.json").read_text()
    )
    assert checked_in == json.loads(json.dumps(asyncapi_document())), (
        "run `just asyncapi` and commit schemas/asyncapi.json"
    )


def test_every_subject_of_the_catalogue_has_a_message_model_and_no_model_is_off_it() -> None:
    assert set(ALL_SUBJECTS) == set(MESSAGES)
    assert all(s.startswith("skillpress.") for s in ALL_SUBJECTS)


def test_openapi_json_is_in_sync_with_the_api() -> None:
    from skillpress.api.app import api_document

    checked_in = json.loads(
        (Path(__file__).parents[1] / "skillpress" / "schemas" / "openapi.json").read_text()
    )
    assert checked_in == json.loads(json.dumps(api_document())), (
        "run `just openapi` and commit schemas/openapi.json"
    )


def _success(op: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    code = next(c for c in sorted(op["responses"]) if c.startswith("2"))
    return code, op["responses"][code]


def test_every_api_operation_says_what_it_returns_and_its_problems() -> None:
    """A named schema for each JSON answer (a list of named items for a list), a media type
    with a schema for each file, problem+json for each error; and the skill skillpress derives
    from its own API tells an agent what every operation returns."""
    doc = json.loads(
        (Path(__file__).parents[1] / "skillpress" / "schemas" / "openapi.json").read_text()
    )
    named = set(doc["components"]["schemas"])
    unnamed = []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            _, ok = _success(op)
            for media, body in (ok.get("content") or {}).items():
                schema = body.get("schema")
                ref = (schema or {}).get("$ref") or ((schema or {}).get("items") or {}).get("$ref")
                if media == "application/json" and path.endswith("/files"):
                    assert schema == {
                        "additionalProperties": {"type": "integer"},
                        "title": "Response List Version Files",
                        "type": "object",
                    }
                elif media == "application/json" and "/files/" not in path:
                    if not ref or ref.rsplit("/", 1)[-1] not in named:
                        unnamed.append(f"{method.upper()} {path}")
                elif media != "text/event-stream":
                    assert schema, f"{method.upper()} {path}: {media} without a schema"
            for code in ("401", "404", "409", "413", "422", "503"):
                problem = op["responses"][code]["content"]["application/problem+json"]
                assert problem["schema"] == {"$ref": "#/components/schemas/Problem"}
    assert unnamed == []
    from skillpress.derive import derive_package

    files = derive_package(
        (Path(__file__).parents[1] / "skillpress" / "schemas" / "openapi.json").read_bytes()
    ).files
    meta = json.loads(files["skill.json"])
    for entry in meta["operations"]:
        text = files[entry["file"]].decode()
        response = text.split("## Response", 1)[-1]
        assert "## Response" in text and "Returns " in response, entry["name"]
