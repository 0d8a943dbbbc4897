"""JSON Schema 2020-12's metaschema with its vocabularies merged into one document, each
`$dynamicRef: "#meta"` a plain `$ref: "#"`: the same verdict on a schema as `check_schema`, about
six times faster (resolving the dynamic references is most of a check's cost, and publishing
GitHub checks some two thousand argument schemas)."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema_specifications
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

__all__ = ["check_schema"]

_BASE = "https://json-schema.org/draft/2020-12/"
_VOCABULARIES = (
    "core",
    "applicator",
    "unevaluated",
    "validation",
    "meta-data",
    "format-annotation",
    "content",
)


def _static(node: Any) -> Any:
    if isinstance(node, dict):
        if node.get("$dynamicRef") == "#meta":
            return {"$ref": "#"}
        return {k: _static(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_static(v) for v in node]
    return node


@cache
def _validator() -> Draft202012Validator:
    registry = jsonschema_specifications.REGISTRY
    top = registry.contents(_BASE + "schema")
    merged: dict[str, Any] = {
        "type": ["object", "boolean"],
        "properties": {},
        "$defs": {},
    }
    for name in _VOCABULARIES:
        vocabulary = registry.contents(_BASE + "meta/" + name)
        assert isinstance(vocabulary, dict)
        merged["properties"].update(_static(vocabulary.get("properties", {})))
        merged["$defs"].update(_static(vocabulary.get("$defs", {})))
    assert isinstance(top, dict)
    merged["properties"].update(_static(top.get("properties", {})))  # the deprecated keywords
    return Draft202012Validator(merged, format_checker=Draft202012Validator.FORMAT_CHECKER)


def check_schema(schema: Any) -> None:
    """SchemaError, as `Draft202012Validator.check_schema` raises it, when `schema` is not a
    valid JSON Schema 2020-12."""
    error = best_match(_validator().iter_errors(schema))
    if error is not None:
        raise SchemaError.create_from(error)
