"""The merged 2020-12 metaschema (runtime/metaschema.py) gives check_schema's verdict: the same
schemas refused, the same accepted, over hand-made mistakes and every schema the corpus derives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from skillpress.runtime.package.metaschema import check_schema
from tests.conftest import corpus
from tests.derive.test_corpus import REFUSED
from tests.derived import derived

MISTAKES: list[Any] = [
    {"type": "strin"},
    {"minLength": -1},
    {"properties": []},
    {"required": "x"},
    {"items": {"type": 1}},
    {"pattern": "("},
    {"enum": {}},
    {"$ref": 1},
    {"prefixItems": []},
    {"properties": {"a": {"type": ["string", "nope"]}}},
    {"anyOf": []},
    {"dependentRequired": {"a": "b"}},
    {"patternProperties": {"(": {}}},
    {"additionalProperties": {"not": {"minimum": "one"}}},
    {"$defs": {"x": {"multipleOf": 0}}},
    {"if": {"const": 1}, "then": {"maxItems": 1.5}},
]
FINE: list[Any] = [
    True,
    {},
    {"type": ["string", "null"], "minLength": 1, "format": "date-time"},
    {"properties": {"a": {"$ref": "#/types/A"}}, "required": ["a"], "additionalProperties": False},
    {"prefixItems": [{"type": "integer"}], "items": False, "unevaluatedProperties": False},
]


def _verdict(check: Any, schema: Any) -> str | None:
    try:
        check(schema)
    except SchemaError as exc:
        return type(exc).__name__
    return None


@pytest.mark.parametrize("schema", MISTAKES + FINE, ids=lambda s: json.dumps(s)[:40])
def test_the_merged_metaschema_agrees_with_check_schema(schema: Any) -> None:
    expected = _verdict(Draft202012Validator.check_schema, schema)
    assert _verdict(check_schema, schema) == expected
    assert (expected is not None) == (schema in MISTAKES)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_it_agrees_on_every_type_a_real_spec_derives(spec: Path) -> None:
    types = json.loads(derived(spec).files["types.json"])
    for name, schema in list(types.items())[:400]:
        expected = _verdict(Draft202012Validator.check_schema, schema)
        assert _verdict(check_schema, schema) == expected, name
