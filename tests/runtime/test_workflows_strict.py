"""Workflows declared as strictly as operations (#45.1–3): every tool step's arguments checked at
load against its operation (in a branch never taken too), duplicate keys refused with both
lines, and parameters held to the JSON Schema specification with the nearest keyword named."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.checks import parameters_refusal
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.run import WorkflowRefused
from tests.runtime.guesthouse import EXAMPLE

DATES = {"arrival": "2026-01-01", "departure": "2026-01-02"}


def _load(text: str) -> Any:
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    files["workflows.yaml"] = text.encode()
    return load_workflows(files, load_skill(files))


def _flow(steps: list[dict[str, Any]], parameters: dict[str, Any] | None = None) -> str:
    params = parameters or {
        "type": "object",
        "properties": {"room_id": {"type": "string"}},
        "required": ["room_id"],
    }
    return yaml.safe_dump(
        {
            "workflows": [
                {"name": "flow", "execution": "hardened", "parameters": params, "steps": steps}
            ]
        }
    )


def _refused(text: str) -> str:
    with pytest.raises(WorkflowRefused) as refused:
        _load(text)
    return str(refused.value)


CHECK = {"id": "check", "tool": "check_availability", "save_as": "free"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            {"room": "{{room_id}}", **DATES},
            "workflows.yaml: flow step check: check_availability takes no argument 'room'; did"
            " you mean `room_id`? (it takes arrival, departure, room_id)",
        ),
        (
            {"room_id": "{{room_id}}", "arrival": "2026-01-01"},
            "workflows.yaml: flow step check: check_availability requires 'departure': give it"
            " in args",
        ),
        (
            {"room_id": "{{room_id}}", "arrival": 20260101, "departure": "2026-01-02"},
            "workflows.yaml: flow step check: arrival=20260101: 20260101 is not of type 'string'",
        ),
    ],
    ids=["misspelled", "missing", "literal of the wrong type"],
)
def test_a_steps_arguments_are_checked_against_its_operation_at_load(
    args: dict[str, Any], said: str
) -> None:
    assert _refused(_flow([{**CHECK, "args": args}])) == said


def test_a_step_in_a_branch_never_taken_is_checked_too() -> None:
    steps = [
        {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}},
        {
            "id": "if_free",
            "if": "free.available",
            "then": [{"id": "done", "return": "{{free}}"}],
            "else": [
                {
                    "id": "book",
                    "tool": "create_booking",
                    "args": {"room_id": "{{room_id}}", "guest": "Ada", **DATES},
                }
            ],
        },
    ]
    assert _refused(_flow(steps)) == (
        "workflows.yaml: flow step book: create_booking takes no argument 'guest'; did you mean"
        " `guests`? (it takes arrival, departure, guest_name, guests, notes, room_id)"
    )


def test_templated_and_literal_values_that_fit_load() -> None:
    steps = [{**CHECK, "args": {"room_id": "{{room_id}}", **DATES}}]
    assert list(_load(_flow(steps))) == ["flow"]


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        (
            "workflows:\n  - name: flow\n    execution: hardened\n    steps:\n"
            "      - id: check\n        tool: check_availability\n        args:\n"
            "          room_id: oak\n          arrival: '2026-01-01'\n          departure: '2026-01-02'\n"
            "          room_id: ash\n",
            "room_id",
            "8 and 11",
        ),
        (
            "workflows:\n  - name: flow\n    description: x\n    name: other\n",
            "name",
            "2 and 4",
        ),
        ("workflows: []\nworkflows: []\n", "workflows", "1 and 2"),
    ],
    ids=["a step's args", "a workflow's name", "the file's workflows"],
)
def test_a_duplicate_key_is_refused_with_both_lines(text: str, key: str, lines: str) -> None:
    assert _refused(text) == (
        f"workflows.yaml: the file: duplicate key {key!r} at lines {lines}: a document with"
        " duplicate keys is ambiguous; remove one"
    )


@pytest.mark.parametrize(
    ("prop", "said"),
    [
        (
            {"type": "string", "enun": ["oak"]},
            "'enun' at properties.room_id is not a JSON Schema keyword; did you mean `enum`?",
        ),
        (
            {"type": "string", "fromat": "date"},
            "'fromat' at properties.room_id is not a JSON Schema keyword; did you mean `format`?",
        ),
        (
            {"type": "string", "defualt": "oak"},
            "'defualt' at properties.room_id is not a JSON Schema keyword; did you mean `default`?",
        ),
        ({"integer": True}, "'integer' at properties.room_id is not a JSON Schema keyword"),
        (
            {"type": "text"},
            "properties.room_id.type: 'text' is not valid under any of the given schemas",
        ),
    ],
    ids=["enun", "fromat", "defualt", "integer: true", "a type that is none"],
)
def test_a_parameters_misspelled_keyword_is_refused_naming_the_nearest(
    prop: dict[str, Any], said: str
) -> None:
    params = {"type": "object", "properties": {"room_id": prop}, "required": ["room_id"]}
    steps = [{**CHECK, "args": {"room_id": "{{room_id}}", **DATES}}]
    assert _refused(_flow(steps, params)) == f"workflows.yaml: flow: parameters: {said}"


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (
            {
                "type": "object",
                "properties": {"room_id": {"type": "string"}},
                "requried": ["room_id"],
            },
            "'requried' is not a JSON Schema keyword; did you mean `required`?",
        ),
        (
            {"type": "object", "propeties": {"room_id": {"type": "string"}}},
            "'propeties' is not a JSON Schema keyword; did you mean `properties`?",
        ),
        (
            {"type": "object", "properties": {}, "optional": "guests"},
            "'optional' is not a JSON Schema keyword",
        ),
        (
            {"type": "object", "properties": {}, "required": "guests"},
            "required: 'guests' is not of type 'array'",
        ),
    ],
    ids=["requried", "propeties", "optional: guests", "required: a string"],
)
def test_the_parameters_schema_is_held_to_the_specification(
    schema: dict[str, Any], said: str
) -> None:
    assert parameters_refusal(schema) == said


def test_an_if_on_a_value_that_is_not_true_or_false_stops_the_run_naming_it() -> None:
    """skillpress and Arazzo's `== true` (what the export writes) agree on true, false and
    null; on a list the two runners went different ways (7 requests and 1), so the run stops."""
    from skillpress.runtime.workflows.run import StepFailed, run_workflow

    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    steps = [
        {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}},
        {"id": "if_free", "if": "free.rooms", "then": [{"id": "yes", "return": "{{free}}"}]},
    ]
    files["workflows.yaml"] = _flow(steps).encode()
    skill = load_skill(files)
    flows = load_workflows(files, skill)
    answers: list[Any] = [{"rooms": ["oak"]}, {"rooms": None}, {"rooms": True}]

    def call(step: str, tool: Any, args: Any, owner: Any, rules: Any = None) -> Any:
        return answers.pop(0)

    with pytest.raises(StepFailed) as stopped:
        run_workflow(flows, "flow", {"room_id": "oak"}, skill, call)
    assert str(stopped.value) == (
        "flow: step if_free failed: if free.rooms: the value is a list, not true or false; an if"
        " tests a boolean (or null, taken as false), as Arazzo's `== true` does: name a field"
        " that is one, or compare it (`== 'text'`)"
    )
    assert run_workflow(flows, "flow", {"room_id": "oak"}, skill, call).result == {"rooms": None}
    assert run_workflow(flows, "flow", {"room_id": "oak"}, skill, call).result == {"rooms": True}


def test_an_if_with_a_query_holds_when_the_query_selects_something_whatever_its_value() -> None:
    """`if: {context, jsonpath}`: Arazzo's jsonpath test, a presence test (#56.5): a string, a
    false, a null member all hold; only a query that selects nothing goes the other way."""
    from skillpress.runtime.workflows.run import run_workflow

    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    steps = [
        {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}},
        {
            "id": "if_token",
            "if": {"context": "free", "jsonpath": "$.token"},
            "then": [{"id": "yes", "return": "present"}],
            "else": [{"id": "no", "return": "absent"}],
        },
    ]
    files["workflows.yaml"] = _flow(steps).encode()
    skill = load_skill(files)
    flows = load_workflows(files, skill)
    answers: list[Any] = [{"token": "tok-1"}, {"token": False}, {"token": None}, {"other": 1}]

    def call(step: str, tool: Any, args: Any, owner: Any, rules: Any = None) -> Any:
        return answers.pop(0)

    said = [run_workflow(flows, "flow", {"room_id": "oak"}, skill, call).result for _ in range(4)]
    assert said == ["present", "present", "present", "absent"]
    steps[1]["if"] = {"context": "free", "jsonpath": "$[?@.ok =]"}
    assert _refused(_flow(steps)).startswith(
        "workflows.yaml: flow step if_token: if jsonpath '$[?@.ok =]' is not an RFC 9535 query ("
    )


def test_a_step_that_fails_goes_on_from_its_on_failure_step() -> None:
    from skillpress.runtime.workflows.run import StepFailed, run_workflow

    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    steps = [
        {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}, "on_failure": "fallback"},
        {"id": "done", "return": {"free": "{{free.available}}"}},
        {
            "id": "fallback",
            "tool": "check_availability",
            "args": {"room_id": "ash", **DATES},
            "save_as": "other",
        },
        {"id": "instead", "return": {"free": "{{other.available}}"}},
    ]
    files["workflows.yaml"] = _flow(steps).encode()
    skill = load_skill(files)
    flows = load_workflows(files, skill)
    calls: list[str] = []

    def call(step: str, tool: Any, args: Any, owner: Any, rules: Any = None) -> Any:
        calls.append(f"{step} {args['room_id']}")
        if step == "check":
            raise StepFailed("", step, "check_availability answered 503")
        return {"available": True}

    ran = run_workflow(flows, "flow", {"room_id": "oak"}, skill, call)
    assert ran.result == {"free": True} and calls == ["check oak", "fallback ash"]
    assert ran.trace[0] == "check failed (check_availability answered 503): on to fallback"


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        (
            [
                {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}, "on_failure": "after"},
                {"id": "after", "return": "{{free}}"},
            ],
            "flow step after: reads free, which is not saved when step check fails and the run"
            " goes on from after",
        ),
        (
            [
                {"id": "first", "return": "{{room_id}}"},
                {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}, "on_failure": "first"},
            ],
            "flow step check: on_failure 'first': a later step of the same list (there is none)",
        ),
    ],
    ids=["a value the failure skipped", "an earlier step"],
)
def test_an_on_failure_that_cannot_run_is_refused_at_load(
    steps: list[dict[str, Any]], said: str
) -> None:
    assert _refused(_flow(steps)) == f"workflows.yaml: {said}"


def test_a_misspelled_operation_in_a_step_names_the_nearest() -> None:
    step = {"id": "check", "tool": "check_availabilty", "args": {"room_id": "{{room_id}}"}}
    assert _refused(_flow([step])) == (
        "workflows.yaml: flow step check: 'check_availabilty' is not an operation of"
        " hollowbrook; did you mean `check_availability`?"
    )


def test_retry_on_a_plain_write_is_refused_at_load_and_on_a_keyed_one_loads() -> None:
    """A DELETE has no identity: a second try might do it twice, so the runtime never makes it;
    a retry it would skip is refused where it is written (#54.3)."""
    cancel = {
        "id": "cancel",
        "tool": "cancel_booking",
        "args": {"booking_id": "{{room_id}}"},
        "retry": {"limit": 2, "after": 0},
    }
    assert _refused(_flow([cancel])) == (
        "workflows.yaml: flow step cancel: retry: cancel_booking is a DELETE with no identity"
        " (no Idempotency-Key), so a second try might do it twice and is never made; give the"
        " operation an identity, or take retry out"
    )
    book = {
        "id": "book",
        "tool": "create_booking",
        "args": {"room_id": "{{room_id}}", "guest_name": "Ann", **DATES},
        "retry": {"limit": 2, "after": 0},
    }
    read = {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}, "retry": {"limit": 2}}
    loaded = _load(_flow([read, book]))
    assert [s.rules.retry_limit for s in loaded["flow"].steps if s.rules] == [2, 2]


def test_a_workflow_step_that_leaves_out_what_its_workflow_requires_is_refused_at_load() -> None:
    """#56.5: the run would stop at that step, after the calls before it were made ("'quantity'
    is a required property"): said when the workflows load (an Arazzo import included)."""
    inner = {
        "name": "inner",
        "execution": "hardened",
        "parameters": {
            "type": "object",
            "properties": {"room_id": {"type": "string"}, "guests": {"type": "integer"}},
            "required": ["room_id", "guests"],
        },
        "steps": [
            {**CHECK, "args": {"room_id": "{{room_id}}", **DATES}},
            {"id": "done", "return": {"guests": "{{guests}}", "free": "{{free}}"}},
        ],
    }
    outer = {
        "name": "outer",
        "execution": "hardened",
        "parameters": {
            "type": "object",
            "properties": {"room_id": {"type": "string"}},
            "required": ["room_id"],
        },
        "steps": [{"id": "book", "workflow": "inner", "args": {"room_id": "{{room_id}}"}}],
    }
    assert _refused(yaml.safe_dump({"workflows": [inner, outer]})) == (
        "workflows.yaml: outer step book: inner requires 'guests', which this step does not"
        " pass: pass it, or give it a default in inner"
    )
