"""JSON Schema 2020-12's metaschema with its vocabularies merged into one document, each
`$dynamicRef: "#meta"` a plain `$ref: "#"`: the same verdict on a schema as `check_schema`, about
six times faster (resolving the dynamic references is most of a check's cost, and publishing
GitHub checks some two thousand argument schemas)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from functools import cache
from typing import Any

import jsonschema_specifications
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

__all__ = ["KEYWORDS", "check_schema", "keyword_refusal"]

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


# JSON Schema 2020-12's keywords (every vocabulary, the deprecated ones too); `x-…` extensions
# are also taken
KEYWORDS = frozenset(
    {
        "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
        "$comment", "$defs", "definitions", "dependencies", "$recursiveAnchor", "$recursiveRef",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
        "prefixItems", "items", "contains", "properties", "patternProperties",
        "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
        "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
        "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties",
        "required", "dependentRequired", "title", "description", "default", "deprecated",
        "readOnly", "writeOnly", "examples", "format", "contentEncoding", "contentMediaType",
        "contentSchema",
    }
)  # fmt: skip
_ONE: tuple[str, ...] = ("items", "additionalProperties", "not", "if", "then", "else")
_ONE += ("contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _schemas(node: Any, where: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema object in `node` with where it is (`properties.guests.items`)."""
    if not isinstance(node, dict):
        return
    yield node, where
    for key in _ONE:
        yield from _schemas(node.get(key), f"{where}.{key}" if where else key)
    for key in _MAPS:
        if isinstance(node.get(key), dict):
            for name, sub in node[key].items():
                yield from _schemas(sub, f"{where}.{key}.{name}" if where else f"{key}.{name}")
    for key in _LISTS:
        if isinstance(node.get(key), list):
            for n, sub in enumerate(node[key]):
                yield from _schemas(sub, f"{where}.{key}[{n}]" if where else f"{key}[{n}]")


def keyword_refusal(schema: Any) -> str | None:
    """Why `schema` is not written in JSON Schema's words: a keyword the specification does not
    define (`enun`, `requried`, `optional`: loaded, it would be advertised as written and
    constrain nothing), the nearest one named; None when every keyword is one."""
    for node, where in _schemas(schema, ""):
        for key in node:
            if not isinstance(key, str) or key in KEYWORDS or key.startswith("x-"):
                continue
            near = difflib.get_close_matches(key, sorted(KEYWORDS), n=1, cutoff=0.6)
            hint = f"; did you mean `{near[0]}`?" if near else ""
            at = f" at {where}" if where else ""
            return f"{key!r}{at} is not a JSON Schema keyword{hint}"
    return None
