"""Operation files as strict as workflows (#54.3): what a file cannot mean is refused at load
(the publish check, and every runtime's), naming the file, the field and the nearest right word:
a schema keyword JSON Schema does not define, a fixed value of the wrong type or one that is a
template, a workflow parameter's default that is a template or not a value of its own schema."""

from __future__ import annotations

import json

import pytest
import yaml

from skillpress.runtime.package.model import PackageError
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.model import WorkflowRefused
from tests.runtime.guesthouse import EXAMPLE


def _op(operation: str) -> bytes:
    return f"---\noperation:\n{operation}---\n\n# op\n\nWhat it does.\n".encode()


def _refused(operation: str) -> str:
    with pytest.raises(PackageError) as refused:
        load_skill({"find.md": _op(operation)}, slug="items")
    return str(refused.value)


SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["open", "shut"]}},
    "required": ["status"],
}


def _schema_op(schema: dict[str, object]) -> str:
    return (
        "  method: GET\n  url: http://items.test/items\n  query: [status]\n"
        f"  schema: '{json.dumps(schema)}'\n"
    )


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (
            {**{k: v for k, v in SCHEMA.items() if k != "required"}, "requried": ["status"]},
            "find.md: operation.schema: 'requried' is not a JSON Schema keyword; did you mean"
            " `required`?",
        ),
        (
            {**SCHEMA, "properties": {"status": {"type": "string", "enun": ["open", "shut"]}}},
            "find.md: operation.schema: 'enun' is not a JSON Schema keyword; did you mean `enum`?",
        ),
        (
            {**SCHEMA, "properties": {"status": {"type": "string", "optional": True}}},
            "find.md: operation.schema: 'optional' is not a JSON Schema keyword",
        ),
    ],
    ids=["requried", "enun", "optional"],
)
def test_a_schema_keyword_json_schema_does_not_define_is_refused(
    schema: dict[str, object], said: str
) -> None:
    assert _refused(_schema_op(schema)) == said
    # the schema written right loads, and is what the model is offered
    assert load_skill({"find.md": _op(_schema_op(SCHEMA))}, slug="items").tool("find").schema[
        "properties"
    ]["status"] == {"type": "string", "enum": ["open", "shut"]}


def test_a_misspelled_keyword_in_a_type_a_tool_uses_is_refused() -> None:
    schema = {"type": "object", "properties": {"pet": {"$ref": "#/types/Pet"}}}
    pet = {"type": "object", "properties": {"name": {"type": "string", "maxLenght": 9}}}
    files = {
        "find.md": _op(_schema_op(schema).replace("query: [status]", "query: [pet]")),
        "types.json": json.dumps({"Pet": pet}).encode(),
    }
    with pytest.raises(PackageError) as refused:
        load_skill(files, slug="items")
    assert str(refused.value) == (
        "find.md: operation.schema uses types.json's Pet: 'maxLenght' at"
        " properties.name is not a JSON Schema keyword; did you mean `maxLength`?"
    )


@pytest.mark.parametrize(
    ("fixed", "said"),
    [
        (
            "{limit: five}",
            "find.md: operation.fixed: limit: 'five' is not an integer, as the field is declared",
        ),
        (
            "{limit: true}",
            "find.md: operation.fixed: limit: True is not an integer, as the field is declared",
        ),
        (
            "{tags: a}",
            "find.md: operation.fixed: tags: 'a' is not a list, and the field is listed in `list`",
        ),
        (
            "{tags: [1]}",
            "find.md: operation.fixed: tags: 1 is not a boolean, as the field is declared",
        ),
        (
            "{q: '{{other}}'}",
            "find.md: operation.fixed: q: '{{other}}' is a template; a fixed value is sent as"
            " written (templates are a workflow's: write the value, or leave the argument to"
            " the call)",
        ),
    ],
    ids=["word for integer", "boolean for integer", "scalar for list", "item type", "template"],
)
def test_a_fixed_value_is_what_its_field_is_declared(fixed: str, said: str) -> None:
    flat = (
        "  method: GET\n  url: http://items.test/items\n  query: [limit, tags, q]\n"
        "  integer: [limit]\n  boolean: [tags]\n  list: [tags]\n"
    )
    assert _refused(flat + f"  fixed: {fixed}\n") == said
    fits = load_skill(
        {"find.md": _op(flat + "  fixed: {limit: 5, tags: [true], q: plain}\n")}, slug="items"
    )
    assert fits.tool("find").declaration.fixed == (
        ("limit", 5),
        ("tags", [True]),
        ("q", "plain"),
    )


def _workflow(default: object) -> str:
    return yaml.safe_dump(
        {
            "workflows": [
                {
                    "name": "look",
                    "execution": "hardened",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "booking_id": {"type": "string", "default": default},
                        },
                    },
                    "steps": [
                        {
                            "id": "get",
                            "tool": "get_booking",
                            "args": {"booking_id": "{{booking_id}}"},
                        }
                    ],
                }
            ]
        }
    )


@pytest.mark.parametrize(
    ("default", "said"),
    [
        (
            "{{other}}",
            "workflows.yaml: look parameter booking_id: default '{{other}}' is a template; a"
            " default is a value, used as written (give the value, or make the parameter"
            " required)",
        ),
        (
            5,
            "workflows.yaml: look parameter booking_id: default 5 is not a value of the"
            " parameter: 5 is not of type 'string'",
        ),
    ],
    ids=["template", "wrong type"],
)
def test_a_parameters_default_is_a_value_of_its_own_schema(default: object, said: str) -> None:
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    skill = load_skill(files)
    files["workflows.yaml"] = _workflow(default).encode()
    with pytest.raises(WorkflowRefused) as refused:
        load_workflows(files, skill)
    assert str(refused.value) == said
    files["workflows.yaml"] = _workflow("b-1").encode()
    assert load_workflows(files, skill)["look"].parameters["properties"]["booking_id"] == {
        "type": "string",
        "default": "b-1",
    }
