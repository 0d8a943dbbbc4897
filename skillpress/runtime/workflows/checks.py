"""What a workflow is held to at load, as strictly as an operation file: its parameters a JSON
Schema with no keyword the specification does not define (the nearest one named), and each
tool step's arguments the ones its operation takes — names, the required ones present, literal
values inside their schema — in every branch, taken or not. Pure: each check returns the
refusal's words, or None.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from skillpress.format.declaration import templated
from skillpress.runtime.package.metaschema import check_schema, keyword_refusal
from skillpress.runtime.package.model import Tool

__all__ = ["argument_refusal", "parameters_refusal"]


def parameters_refusal(schema: Any) -> str | None:
    """Why `schema` (a workflow's parameters) is not a JSON Schema as written: a keyword the
    specification does not define (`enun`, `requried`, `optional`), or a keyword's value of
    the wrong kind (`required: guests`, `integer: true`); None when it is one."""
    wrong = keyword_refusal(schema)
    if wrong is not None:
        return wrong
    try:
        check_schema(schema)
    except SchemaError as exc:
        at = ".".join(str(p) for p in exc.path)
        return f"{at or 'the schema'}: {exc.message}"
    return None


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
