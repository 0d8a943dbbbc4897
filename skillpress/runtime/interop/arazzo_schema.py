"""The shape of an Arazzo 1.0.1 document, as a JSON Schema written from the specification's
text (its fixed fields, which are required, their patterns and enumerations, and that every
object takes `x-` extensions and nothing else), so an export is checked before anyone else
reads it. `problems` lists what a document gets wrong, by where."""

from __future__ import annotations

from typing import Any

__all__ = ["ARAZZO_SCHEMA", "problems"]

_ID = "^[A-Za-z0-9_\\-]+$"
_KEY = "^[a-zA-Z0-9\\.\\-_]+$"
_EXT: dict[str, Any] = {"^x-": {}}


def _object(
    properties: dict[str, Any], required: tuple[str, ...] | list[str] = (), **more: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "patternProperties": _EXT,
        "additionalProperties": False,
    }
    if required:
        out["required"] = list(required)
    return out | more


_OUTPUTS = {
    "type": "object",
    "propertyNames": {"pattern": _KEY},
    "additionalProperties": {"type": "string"},
}
_REUSABLE = _object({"reference": {"type": "string"}, "value": {}}, ["reference"])
_CRITERION = _object(
    {
        "context": {"type": "string"},
        "condition": {"type": "string"},
        "type": {
            "oneOf": [
                {"enum": ["simple", "regex", "jsonpath", "xpath"]},
                _object(
                    {"type": {"enum": ["jsonpath", "xpath"]}, "version": {"type": "string"}},
                    ["type", "version"],
                ),
            ]
        },
    },
    ["condition"],
    # a criterion of a type other than simple names the context it tests
    **{
        "if": {"required": ["type"]},
        "then": {
            "anyOf": [{"properties": {"type": {"const": "simple"}}}, {"required": ["context"]}]
        },
    },
)
_PARAMETER = _object(
    {
        "name": {"type": "string"},
        "in": {"enum": ["path", "query", "header", "cookie"]},
        "value": {},
    },
    ["name", "value"],
)
_GOTO_TARGET = {"oneOf": [{"required": ["stepId"]}, {"required": ["workflowId"]}]}
_SUCCESS_ACTION = _object(
    {
        "name": {"type": "string"},
        "type": {"enum": ["end", "goto"]},
        "workflowId": {"type": "string"},
        "stepId": {"type": "string"},
        "criteria": {"type": "array", "items": _CRITERION},
    },
    ["name", "type"],
    **{"if": {"properties": {"type": {"const": "goto"}}}, "then": _GOTO_TARGET},
)
_FAILURE_ACTION = _object(
    {
        "name": {"type": "string"},
        "type": {"enum": ["end", "retry", "goto"]},
        "workflowId": {"type": "string"},
        "stepId": {"type": "string"},
        "retryAfter": {"type": "number", "minimum": 0},
        "retryLimit": {"type": "integer", "minimum": 0},
        "criteria": {"type": "array", "items": _CRITERION},
    },
    ["name", "type"],
    **{"if": {"properties": {"type": {"const": "goto"}}}, "then": _GOTO_TARGET},
)
_STEP = _object(
    {
        "stepId": {"type": "string", "pattern": _ID},
        "description": {"type": "string"},
        "operationId": {"type": "string"},
        "operationPath": {"type": "string"},
        "workflowId": {"type": "string"},
        "parameters": {"type": "array", "items": {"oneOf": [_PARAMETER, _REUSABLE]}},
        "requestBody": _object(
            {
                "contentType": {"type": "string"},
                "payload": {},
                "replacements": {
                    "type": "array",
                    "items": _object(
                        {"target": {"type": "string"}, "value": {}}, ["target", "value"]
                    ),
                },
            }
        ),
        "successCriteria": {"type": "array", "minItems": 1, "items": _CRITERION},
        "onSuccess": {"type": "array", "items": {"oneOf": [_SUCCESS_ACTION, _REUSABLE]}},
        "onFailure": {"type": "array", "items": {"oneOf": [_FAILURE_ACTION, _REUSABLE]}},
        "outputs": _OUTPUTS,
    },
    ["stepId"],
    # exactly one of the three says what the step runs
    oneOf=[
        {"required": ["operationId"]},
        {"required": ["operationPath"]},
        {"required": ["workflowId"]},
    ],
)
_WORKFLOW = _object(
    {
        "workflowId": {"type": "string", "pattern": _ID},
        "summary": {"type": "string"},
        "description": {"type": "string"},
        "inputs": {"type": "object"},
        "dependsOn": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "steps": {"type": "array", "minItems": 1, "items": _STEP},
        "successActions": {"type": "array", "items": {"oneOf": [_SUCCESS_ACTION, _REUSABLE]}},
        "failureActions": {"type": "array", "items": {"oneOf": [_FAILURE_ACTION, _REUSABLE]}},
        "outputs": _OUTPUTS,
        "parameters": {"type": "array", "items": {"oneOf": [_PARAMETER, _REUSABLE]}},
    },
    ["workflowId", "steps"],
)
ARAZZO_SCHEMA: dict[str, Any] = _object(
    {
        "arazzo": {"type": "string", "pattern": "^1\\.0\\.\\d+(-.+)?$"},
        "info": _object(
            {
                "title": {"type": "string"},
                "summary": {"type": "string"},
                "description": {"type": "string"},
                "version": {"type": "string"},
            },
            ["title", "version"],
        ),
        "sourceDescriptions": {
            "type": "array",
            "minItems": 1,
            "items": _object(
                {
                    "name": {"type": "string", "pattern": _ID},
                    "url": {"type": "string", "format": "uri-reference"},
                    "type": {"enum": ["arazzo", "openapi"]},
                },
                ["name", "url"],
            ),
        },
        "workflows": {"type": "array", "minItems": 1, "items": _WORKFLOW},
        "components": {"type": "object"},
    },
    ["arazzo", "info", "sourceDescriptions", "workflows"],
)


def problems(doc: Any) -> list[str]:
    """What `doc` gets wrong as an Arazzo 1.0.1 document, each `where: what` ([] when nothing)."""
    from jsonschema import Draft202012Validator

    found = sorted(
        Draft202012Validator(ARAZZO_SCHEMA).iter_errors(doc), key=lambda e: list(e.absolute_path)
    )
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(the document)'}: {e.message}"
        for e in found
    ]
