"""Types as OpenAPI 3.1 and converted specs write them: a `type` that is a list of names, and
references that go round. Cutting a schema short reads every branch's type: Microsoft Graph's
(`["object", "null"]` branches) ended derive in a TypeError."""

from __future__ import annotations

import json

from skillpress.derive import derive_package
from skillpress.format.expand import cut_type, shallow_schema

TYPES = {
    "Entity": {"type": ["object", "null"], "properties": {"id": {"type": "string"}}},
    "Item": {
        "anyOf": [{"$ref": "#/types/Entity"}, {"type": ["object", "null"]}],
        "required": ["id"],
    },
    "Mixed": {"oneOf": [{"type": ["object", "null"]}, {"type": "string"}]},
    "Round": {"$ref": "#/types/Again"},
    "Again": {"$ref": "#/types/Round"},
}


def test_a_branch_whose_type_is_a_list_cuts_as_one_type() -> None:
    cut = cut_type("Item", TYPES)
    assert "anyOf" in cut and cut["description"].startswith("a Item")
    assert shallow_schema({"$ref": "#/types/Mixed"}, TYPES)["anyOf"][1] == {"type": "string"}
    assert shallow_schema({"$ref": "#/types/Round"}, TYPES) == {}  # round: nothing, no hang


def test_a_spec_of_nullable_branches_derives_and_loads() -> None:
    entity = {"type": ["object", "null"], "properties": {"id": {"type": "string"}}}
    deep: dict[str, object] = {"$ref": "#/components/schemas/L0"}
    schemas: dict[str, object] = {"Entity": entity}
    for i in range(12):  # deep enough that the tool's schema is cut past the depth kept
        schemas[f"L{i}"] = {
            "type": "object",
            "properties": {
                "next": {"$ref": f"#/components/schemas/L{i + 1}"},
                "pick": {
                    "anyOf": [{"$ref": "#/components/schemas/Entity"}, {"type": ["object", "null"]}]
                },
            },
        }
    schemas["L12"] = {"type": "object", "properties": {"end": {"type": "string"}}}
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "Nullable", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/things": {
                "post": {
                    "operationId": "makeThing",
                    "requestBody": {"content": {"application/json": {"schema": deep}}},
                    "responses": {"201": {"description": "made"}},
                }
            }
        },
        "components": {"schemas": schemas},
    }
    package = derive_package(json.dumps(spec).encode())
    from skillpress.runtime.package.skill import load_skill

    assert [t.operation for t in load_skill(package.files).tools] == ["make_thing"]
