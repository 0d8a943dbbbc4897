"""What a workflow is held to at load, as strictly as an operation file: its parameters a JSON
Schema with no keyword the specification does not define (the nearest one named), and each
tool step's arguments the ones its operation takes — names, the required ones present, literal
values inside their schema — in every branch, taken or not. Pure: each check returns the
refusal's words, or None.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from skillpress.runtime.package.metaschema import check_schema
from skillpress.runtime.package.model import Tool

__all__ = ["argument_refusal", "parameters_refusal", "templated"]

# JSON Schema 2020-12's keywords (every vocabulary, the deprecated ones too), and the few a
# workflow's parameters carry for people (`examples`, `x-…` extensions are also taken)
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


def parameters_refusal(schema: Any) -> str | None:
    """Why `schema` (a workflow's parameters) is not a JSON Schema as written: a keyword the
    specification does not define (`enun`, `requried`, `optional`), or a keyword's value of
    the wrong kind (`required: guests`, `integer: true`); None when it is one."""
    for node, where in _schemas(schema, ""):
        for key in node:
            if not isinstance(key, str) or key in KEYWORDS or key.startswith("x-"):
                continue
            near = difflib.get_close_matches(key, sorted(KEYWORDS), n=1, cutoff=0.6)
            hint = f"; did you mean `{near[0]}`?" if near else ""
            at = f" at {where}" if where else ""
            return f"{key!r}{at} is not a JSON Schema keyword{hint}"
    try:
        check_schema(schema)
    except SchemaError as exc:
        at = ".".join(str(p) for p in exc.path)
        return f"{at or 'the schema'}: {exc.message}"
    return None


def templated(value: Any, has_template: Any) -> bool:
    """Whether `value` holds a template anywhere (`has_template(text)` decides for a string)."""
    if isinstance(value, str):
        return bool(has_template(value))
    if isinstance(value, dict):
        return any(templated(v, has_template) for v in value.values())
    if isinstance(value, list):
        return any(templated(v, has_template) for v in value)
    return False


_WHOLE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")


def _kinds(declared: Any) -> set[str]:
    kinds = {declared} if isinstance(declared, str) else set(declared or ())
    return kinds | ({"number"} if "integer" in kinds else set())


def _clash(value: Any, wanted: Any, inputs: Mapping[str, Any]) -> str | None:
    """A whole-value template of a parameter whose declared type the argument does not take
    (a string input feeding an array argument)."""
    m = _WHOLE.match(value) if isinstance(value, str) else None
    declared = inputs.get(m.group(1)) if m else None
    if m is None or not declared or not wanted:
        return None
    given, takes = _kinds(declared), _kinds(wanted)
    if given & takes or ("number" in given and "integer" in takes):
        return None
    return f"{m.group(1)} is {declared}, and this argument takes {wanted}"


def argument_refusal(
    tool: Tool,
    args: Mapping[str, Any],
    has_template: Any,
    inputs: Mapping[str, Any] | None = None,
) -> str | None:
    """Why a step's `args` cannot be what `tool` takes: a name it does not take (the closest
    one named), a required one missing, a literal value outside its schema, or a parameter of
    another type given whole (`inputs`: each parameter's declared `type`); a templated value is
    otherwise checked when it runs. None when they can."""
    props: dict[str, Any] = tool.schema.get("properties") or {}
    for name in args:
        if name not in props:
            near = difflib.get_close_matches(str(name), sorted(props), n=1, cutoff=0.5)
            hint = f"; did you mean `{near[0]}`?" if near else ""
            takes = ", ".join(sorted(props)) or "no arguments"
            return f"{tool.operation} takes no argument {name!r}{hint} (it takes {takes})"
    missing = [r for r in tool.schema.get("required") or () if r not in args]
    if missing:
        return f"{tool.operation} requires {', '.join(map(repr, missing))}: give it in args"
    for name, value in args.items():
        if not isinstance(props[name], dict):
            continue
        clash = _clash(value, props[name].get("type"), inputs or {})
        if clash is not None:
            return f"{name}={value!r}: {clash}"
        if templated(value, has_template):
            continue
        validator = Draft202012Validator(
            props[name], format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        error = best_match(validator.iter_errors(value))
        if error is not None:
            return f"{name}={value!r}: {error.message}"
    return None
