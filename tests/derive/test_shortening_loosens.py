"""Shortening may loosen a schema, never make it unsatisfiable (#42.6): Adyen's `paymentMethod`
is a `oneOf` of 58 payment types; cut past the depth kept, each branch became a description
only, every value matched all 58, and `oneOf` refused every value, so `post_payments` could
never be called. A `oneOf` with a cut branch is written `anyOf` (the same bytes)."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from skillpress.format.expand import ExpandedSizes, expand_types

TYPES: dict[str, Any] = {
    "Card": {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"const": "scheme"}, "number": {"type": "string"}},
    },
    "Ideal": {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"const": "ideal"}, "issuer": {"type": "string"}},
    },
    "Node": {  # a type that contains itself: cut the second time it is met
        "type": "object",
        "properties": {"next": {"oneOf": [{"$ref": "#/types/Node"}, {"type": "null"}]}},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "paymentMethod": {"oneOf": [{"$ref": "#/types/Card"}, {"$ref": "#/types/Ideal"}]},
        "chain": {"$ref": "#/types/Node"},
    },
}
VALUE = {"paymentMethod": {"type": "scheme", "number": "4111"}, "chain": {"next": {"next": None}}}


def test_a_one_of_cut_past_the_depth_kept_takes_a_valid_value() -> None:
    full = expand_types(SCHEMA, TYPES)
    assert "oneOf" in full["properties"]["paymentMethod"]  # detailed: exact, as the spec says
    assert Draft202012Validator(full).is_valid(VALUE)
    for cut in (
        expand_types(SCHEMA, TYPES, max_depth=0, descriptions=False),
        ExpandedSizes(TYPES).reduced(0, False, 120).expand(SCHEMA),
    ):
        method = cut["properties"]["paymentMethod"]
        assert "oneOf" not in method and len(method["anyOf"]) == 2
        # each branch keeps its type and what it requires, so it still tells the two apart
        assert [b["required"] for b in method["anyOf"]] == [["type"], ["type"]]
        assert [b["properties"]["type"] for b in method["anyOf"]] == [
            {"const": "scheme"},
            {"const": "ideal"},
        ]
        assert Draft202012Validator(cut).is_valid(VALUE), cut


def test_a_one_of_cut_by_a_cycle_takes_a_valid_value() -> None:
    full = expand_types(SCHEMA, TYPES)
    inner = full["properties"]["chain"]["properties"]["next"]
    cut = {"type": "object", "description": "a Node (not detailed here: see the operation's file)"}
    assert inner == {"anyOf": [cut, {"type": "null"}]}
    assert Draft202012Validator(full).is_valid(VALUE)


def test_sizes_count_the_loosened_schema_exactly() -> None:
    sizes = ExpandedSizes(TYPES, renamed=False).reduced(0, False, 120)
    built = sizes.expand(SCHEMA)
    assert sizes.size(SCHEMA) == len(json.dumps(built, separators=(",", ":")).encode())


def test_a_type_cut_by_a_cycle_keeps_what_it_requires() -> None:
    """getsandbox's Sandbox holds its parent, a Sandbox, which requires `name`: met again, the
    type is cut but still requires it, so `{}` is refused where the API would refuse it."""
    types = {
        "Sandbox": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9-]*$"},
                "parent": {"$ref": "#/types/Sandbox"},
            },
            "required": ["name"],
        }
    }
    schema = {"type": "object", "properties": {"sandbox": {"$ref": "#/types/Sandbox"}}}
    for built in (expand_types(schema, types), ExpandedSizes(types).expand(schema)):
        parent = built["properties"]["sandbox"]["properties"]["parent"]
        assert parent["required"] == ["name"]
        assert parent["properties"] == {"name": {"type": "string", "pattern": "^[a-z0-9-]*$"}}
        validator = Draft202012Validator(built)
        assert not validator.is_valid({"sandbox": {"name": "a", "parent": {}}})
        assert validator.is_valid({"sandbox": {"name": "a", "parent": {"name": "b"}}})
