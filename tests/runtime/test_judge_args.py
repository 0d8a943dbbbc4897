"""The judge's argument builder (`judge_args`): a value the tool's own schema accepts wherever
one exists, so an 'arguments not built' finding is the spec's or ours, never the builder's."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from tests.runtime.judge_args import valid_arguments


def test_a_choice_beside_properties_keeps_what_both_require() -> None:
    """ShipEngine's bulk rates: the body is a oneOf (by shipment ids, or by shipments) beside
    the `rate_options` it also requires. A branch read alone dropped `rate_options`."""
    schema = {
        "type": "object",
        "properties": {
            "body": {
                "type": "object",
                "properties": {"rate_options": {"type": "object"}},
                "required": ["rate_options"],
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
                        "required": ["ids"],
                    },
                    {
                        "type": "object",
                        "properties": {"shipments": {"type": "array", "minItems": 1}},
                        "required": ["shipments"],
                    },
                ],
            }
        },
        "required": ["body"],
    }
    args = valid_arguments(schema)
    assert args is not None and Draft202012Validator(schema).is_valid(args)
    assert {"rate_options", "ids"} <= set(args["body"])


def test_no_value_where_the_spec_allows_none() -> None:
    """SendGrid's schedule: `send_at` a date-time whose one listed value is `now`."""
    schema = {
        "type": "object",
        "properties": {"send_at": {"type": "string", "format": "date-time", "enum": ["now"]}},
        "required": ["send_at"],
    }
    assert valid_arguments(schema) is None
