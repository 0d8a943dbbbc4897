"""Arazzo documents as people write them (#45.5–7): components (inputs, parameters, actions) by
reference, several outputs per step as pointers into the answer, header parameters, every
refusal of a document in one answer, and each step's arguments checked against its operation on
import, naming the closest one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.runtime.interop.arazzo import ArazzoRefused
from skillpress.runtime.interop.arazzo_in import from_arazzo
from skillpress.runtime.interop.arazzo_out import to_arazzo
from skillpress.runtime.package.model import Skill
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.run import WorkflowRefused
from tests.runtime.test_workflows import _files

SHOP: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Shop", "version": "1"},
    "servers": [{"url": "https://shop.example.test"}],
    "paths": {
        "/carts": {
            "post": {
                "operationId": "createCart",
                "parameters": [
                    {
                        "name": "X-Channel",
                        "in": "header",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "tags",
                        "in": "query",
                        "schema": {"type": "array", "items": {"type": "string"}},
                    },
                ],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["customerId"],
                                "properties": {"customerId": {"type": "string"}},
                            }
                        }
                    }
                },
                "responses": {"201": {"description": "made"}},
            }
        },
        "/carts/{cartId}": {
            "get": {
                "operationId": "getCart",
                "parameters": [
                    {
                        "name": "cartId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "X-Channel",
                        "in": "header",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {"200": {"description": "the cart"}},
            }
        },
    },
}


@pytest.fixture(scope="module")
def shop() -> tuple[Skill, dict[str, bytes]]:
    files = derive_package(yaml.safe_dump(SHOP).encode(), DeriveOptions(slug="shop")).files
    return load_skill(files), dict(files)


def _doc(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "arazzo": "1.0.1",
        "info": {"title": "shop", "version": "1"},
        "sourceDescriptions": [{"name": "shop", "url": "./shop.yaml", "type": "openapi"}],
        "workflows": [
            {
                "workflowId": "open_cart",
                "inputs": {
                    "type": "object",
                    "properties": {"customer": {"type": "string"}, "channel": {"type": "string"}},
                    "required": ["customer", "channel"],
                },
                "steps": steps,
                "outputs": {"cart": "$steps.look.outputs.cart_id"},
            }
        ],
        **extra,
    }


MAKE = {
    "stepId": "make",
    "operationId": "createCart",
    "parameters": [{"name": "X-Channel", "in": "header", "value": "$inputs.channel"}],
    "requestBody": {
        "contentType": "application/json",
        "payload": {"customerId": "$inputs.customer"},
    },
    "successCriteria": [{"condition": "$statusCode == 201"}],
    "outputs": {"made_id": "$response.body#/id", "made_total": "$response.body#/totals/0"},
}
LOOK = {
    "stepId": "look",
    "operationId": "getCart",
    "parameters": [
        {"name": "cartId", "in": "path", "value": "$steps.make.outputs.made_id"},
        {"name": "x-channel", "in": "header", "value": "$inputs.channel"},
    ],
    "outputs": {"cart_id": "$response.body#/id"},
}


def test_header_parameters_and_outputs_as_pointers_import_and_load(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    skill, files = shop
    made = from_arazzo(_doc([MAKE, LOOK]), skill, files)
    steps = made["workflows"][0]["steps"]
    assert steps[0]["args"] == {"X-Channel": "{{channel}}", "customerId": "{{customer}}"}
    assert steps[0]["save_as"] == "make_body"  # no output is the whole answer: saved once
    assert steps[1]["args"] == {"cartId": "{{make_body.id}}", "X-Channel": "{{channel}}"}
    assert steps[-1] == {"id": "outputs", "return": {"cart": "{{look_body.id}}"}}
    text = yaml.safe_dump(made, sort_keys=False)
    flows = load_workflows({**files, "workflows.yaml": text.encode()}, skill)
    # and out again: the header goes out as a header, by the name the API reads
    out = to_arazzo(flows, skill, files=files)
    assert out["workflows"][0]["steps"][1]["parameters"] == [
        {"name": "cartId", "in": "path", "value": "$steps.make.outputs.make_body.id"},
        {"name": "X-Channel", "in": "header", "value": "$inputs.channel"},
    ]
    again = yaml.safe_dump(from_arazzo(out, skill, files), sort_keys=False)
    assert (
        to_arazzo(
            load_workflows({**files, "workflows.yaml": again.encode()}, skill), skill, files=files
        )
        == out
    )


def test_components_are_read_where_they_are_referenced(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    skill, files = shop
    inline = _doc([MAKE, LOOK])
    by_reference = copy.deepcopy(inline)
    flow = by_reference["workflows"][0]
    flow["inputs"] = {"$ref": "#/components/inputs/who"}
    flow["steps"][1]["parameters"][1] = {"reference": "$components.parameters.channel"}
    flow["steps"][0]["parameters"] = [
        {"reference": "$components.parameters.channel", "value": "$inputs.channel"}
    ]
    by_reference["components"] = {
        "inputs": {
            "who": {
                "type": "object",
                "properties": {
                    "customer": {"$ref": "#/components/inputs/customer"},
                    "channel": {"type": "string"},
                },
                "required": ["customer", "channel"],
            },
            "customer": {"type": "string"},
        },
        "parameters": {
            "channel": {"name": "X-Channel", "in": "header", "value": "$inputs.channel"}
        },
    }
    assert from_arazzo(by_reference, skill, files) == from_arazzo(inline, skill, files)


def test_every_refusal_of_a_document_is_said_at_once(shop: tuple[Skill, dict[str, bytes]]) -> None:
    skill, files = shop
    wrong_name = copy.deepcopy(LOOK)
    wrong_name["parameters"][0]["name"] = "cart_id"
    wrong_output = copy.deepcopy(MAKE)
    wrong_output["outputs"] = {"made_id": "$response.body#id"}
    doc = _doc([wrong_output, wrong_name])
    second = copy.deepcopy(doc["workflows"][0])
    second["workflowId"] = "again"
    second["steps"] = [{**copy.deepcopy(MAKE), "operationId": "makeCart"}]
    second.pop("outputs")
    doc["workflows"].append(second)
    with pytest.raises(ArazzoRefused) as refused:
        from_arazzo(doc, skill, files)
    assert str(refused.value) == (
        "3 parts of the document are outside what maps:\n"
        "  - open_cart step make: output 'made_id': '$response.body#id' is outside the"
        " subset (`$response.body`, a pointer into it like `$response.body#/id` or a path like"
        " `$response.body.id`, `$statusCode` or `$response.header.<name>`, under a name of"
        " letters, digits and '_')\n"
        "  - open_cart step look: get_cart has no path parameter 'cart_id'; did you mean"
        " `cartId`? (path: cartId)\n"
        "  - again step make: operationId 'makeCart' is not an operation of shop"
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda make: make["requestBody"]["payload"].update(customer_id="x"),
            "open_cart step make: create_cart takes no argument 'customer_id'; did you mean"
            " `customerId`?",
        ),
        (
            lambda make: make["parameters"].append(
                {"name": "tags", "in": "query", "value": "$inputs.customer"}
            ),
            "open_cart step make: tags='{{customer}}': customer is string, and this argument"
            " takes array",
        ),
        (
            lambda make: make["requestBody"]["payload"].pop("customerId"),
            "open_cart step make: create_cart requires 'customerId': give it in args",
        ),
    ],
    ids=["a misspelled body field", "a string input feeding an array", "a required one missing"],
)
def test_arguments_are_checked_against_the_operation_on_import(
    shop: tuple[Skill, dict[str, bytes]], change: Any, said: str
) -> None:
    skill, files = shop
    make = copy.deepcopy(MAKE)
    change(make)
    with pytest.raises(WorkflowRefused) as refused:
        from_arazzo(_doc([make, LOOK]), skill, files)
    assert str(refused.value).startswith(said), str(refused.value)


def test_the_hollowbrook_export_still_round_trips_byte_for_byte() -> None:
    files = _files()
    skill = load_skill(files)
    out = to_arazzo(load_workflows(files, skill), skill, files=files)
    text = yaml.safe_dump(from_arazzo(out, skill, files), sort_keys=False)
    back = to_arazzo(
        load_workflows({**files, "workflows.yaml": text.encode()}, skill), skill, files=files
    )
    assert yaml.safe_dump(back, sort_keys=False) == yaml.safe_dump(out, sort_keys=False)


def _look(sid: str, **extra: Any) -> dict[str, Any]:
    return {
        "stepId": sid,
        "operationId": "getCart",
        "parameters": [
            {"name": "cartId", "in": "path", "value": "$steps.make.outputs.cart.id"},
            {"name": "X-Channel", "in": "header", "value": "$inputs.channel"},
        ],
        **extra,
    }


def _diamond(first_way: dict[str, Any]) -> dict[str, Any]:
    make = {
        **MAKE,
        "outputs": {"cart": "$response.body"},
        "onSuccess": [
            {
                "name": "big",
                "type": "goto",
                "stepId": "look-big",
                "criteria": [{"condition": "$steps.make.outputs.cart.big == true"}],
            },
            {"name": "small", "type": "goto", "stepId": "look-small"},
        ],
    }
    doc = _doc([make, _look("look-big", **first_way), _look("look-small"), _look("last")])
    doc["workflows"][0].pop("outputs")
    return doc


@pytest.mark.parametrize(
    ("first_way", "then", "after"),
    [
        (  # both ways meet at `last`: one by its goto, the other running on to it
            {"onSuccess": [{"name": "on", "type": "goto", "stepId": "last"}]},
            ["look-big"],
            ["last"],
        ),
        ({}, ["look-big"], ["look-small", "last"]),  # the first runs on into the second's start
    ],
    ids=["a diamond", "one way runs into the other"],
)
def test_two_ways_that_reach_the_same_step_write_it_once(
    shop: tuple[Skill, dict[str, bytes]],
    first_way: dict[str, Any],
    then: list[str],
    after: list[str],
) -> None:
    skill, files = shop
    made = from_arazzo(_diamond(first_way), skill, files)
    steps = made["workflows"][0]["steps"]
    assert [s["id"] for s in steps] == ["make", "big", *after]
    assert [s["id"] for s in steps[1]["then"]] == then
    assert [s["id"] for s in steps[1]["else"]] == (
        [] if after[0] == "look-small" else ["look-small"]
    )
    text = yaml.safe_dump(made, sort_keys=False)
    assert list(load_workflows({**files, "workflows.yaml": text.encode()}, skill)) == ["open_cart"]


def test_an_on_failure_end_is_what_a_failed_step_does_anyway(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    skill, files = shop
    plain = from_arazzo(_doc([MAKE, LOOK]), skill, files)
    ending = {**MAKE, "onFailure": [{"name": "stop", "type": "end"}]}
    assert from_arazzo(_doc([ending, LOOK]), skill, files) == plain
    retried = {
        **MAKE,
        "onFailure": [
            {"name": "again", "type": "retry", "retryAfter": 0.5, "retryLimit": 2},
            {"name": "stop", "type": "end"},
        ],
    }
    steps = from_arazzo(_doc([retried, LOOK]), skill, files)["workflows"][0]["steps"]
    assert steps[0]["retry"] == {"limit": 2, "after": 0.5}
    back = {**LOOK, "onFailure": [{"name": "again", "type": "goto", "stepId": "make"}]}
    with pytest.raises(ArazzoRefused, match="an earlier step \\(a loop\\), is outside"):
        from_arazzo(_doc([MAKE, back]), skill, files)


def test_an_on_failure_goto_goes_on_from_a_later_step_only_a_failure_reaches(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    skill, files = shop
    make = {
        **MAKE,
        "onSuccess": [{"name": "done", "type": "end"}],
        "onFailure": [{"name": "make_failed", "type": "goto", "stepId": "look"}],
    }
    look = {
        **LOOK,
        "parameters": [
            {"name": "cartId", "in": "path", "value": "$inputs.customer"},
            LOOK["parameters"][1],
        ],
    }
    doc = _doc([make, look])
    doc["workflows"][0].pop("outputs")
    made = from_arazzo(doc, skill, files)
    steps = made["workflows"][0]["steps"]
    # the way that does not fail ends after make; only a failure goes on to look
    assert [s["id"] for s in steps] == ["make", "make-ends", "look"]
    assert steps[0]["on_failure"] == "look" and steps[1]["return"] == {}
    text = yaml.safe_dump(made, sort_keys=False)
    flows = load_workflows({**files, "workflows.yaml": text.encode()}, skill)
    out = to_arazzo(flows, skill, files=files)
    assert out["workflows"][0]["steps"][0]["onFailure"] == [
        {"name": "make_failed", "type": "goto", "stepId": "look"}
    ]
    again = yaml.safe_dump(from_arazzo(out, skill, files), sort_keys=False)
    back = to_arazzo(
        load_workflows({**files, "workflows.yaml": again.encode()}, skill), skill, files=files
    )
    assert back == out


def test_a_header_the_skill_made_its_credential_is_said_to_be_the_credential() -> None:
    """#56.4: an `Authorization` header the spec declares on an operation is the skill's
    credential, sent on every call from its variable: a step that sets it is told so (not that
    the operation has no such header), and what it sets is no argument of the call, so a value
    a document (or its caller, through an input) gives is never sent."""
    spec = copy.deepcopy(SHOP)
    spec["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
    spec["security"] = [{"bearer": []}]
    spec["paths"]["/carts/{cartId}"]["get"]["parameters"].append(
        {"name": "Authorization", "in": "header", "required": True, "schema": {"type": "string"}}
    )
    files = derive_package(yaml.safe_dump(spec).encode(), DeriveOptions(slug="shop")).files
    skill = load_skill(files)
    look = copy.deepcopy(LOOK)
    look["parameters"].append(
        {"name": "Authorization", "in": "header", "value": "Bearer $inputs.customer"}
    )
    notes: list[str] = []
    made = from_arazzo(_doc([MAKE, look]), skill, dict(files), notes)
    assert notes == [
        "open_cart step look: header 'Authorization' is shop's credential, which every call"
        " carries from SHOP_API_KEY: the value the document gives is not sent"
    ]
    looked = made["workflows"][0]["steps"][1]
    assert looked["id"] == "look" and looked["args"] == {
        "cartId": "{{make_body.id}}",
        "X-Channel": "{{channel}}",
    }


def test_what_the_imported_workflows_are_held_to_is_said_in_the_documents_words(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    """#56.4: what an imported workflow is held to is said of the Arazzo input, without a
    `workflows.yaml` the person never wrote; an input no step reads is kept as declared and
    said (FAPI-PAR's `TokenRequestBody`), not refused: the document is valid Arazzo."""
    from skillpress.app.operator.arazzo_io import workflows_from_arazzo

    skill, files = shop
    doc = _doc([MAKE, LOOK])
    doc["workflows"][0]["inputs"]["properties"]["coupon"] = {"type": "string"}
    made = workflows_from_arazzo(doc, skill, files, "shop.arazzo.yaml")
    assert made.notes == [
        "open_cart input coupon: no step reads it; kept as the document declares it (a run"
        " takes it and sends none of it)"
    ]
    assert made.text.startswith(
        "# imported from shop.arazzo.yaml (Arazzo)\n# open_cart input coupon: no step reads"
    )
    params = yaml.safe_load(made.text)["workflows"][0]["parameters"]
    assert params["properties"]["coupon"] == {"type": "string", "x-skillpress-unread": True}
    assert params["required"] == ["customer", "channel"]
    doc["workflows"][0]["inputs"]["properties"]["channel"] = {
        "type": "string",
        "enum": ["web", "app"],
        "default": "shop",
    }
    with pytest.raises(ArazzoRefused) as refused:
        workflows_from_arazzo(doc, skill, files)
    assert str(refused.value) == (
        "open_cart input channel: default 'shop' is not one of its enum ['web', 'app']"
    )


def test_a_parameter_no_step_reads_is_refused_unless_marked_so(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    """The mark is the whole exemption: a workflows.yaml parameter no step reads is refused as
    ever, and passes with `x-skillpress-unread: true` (what an Arazzo import writes)."""
    skill, files = shop
    made = from_arazzo(_doc([MAKE, LOOK]), skill, files)
    made["workflows"][0]["parameters"]["properties"]["coupon"] = {"type": "string"}
    text = yaml.safe_dump(made).encode()
    with pytest.raises(WorkflowRefused) as refused:
        load_workflows({**files, "workflows.yaml": text}, skill)
    assert "open_cart parameter coupon: no step reads it" in str(refused.value)
    made["workflows"][0]["parameters"]["properties"]["coupon"]["x-skillpress-unread"] = True
    loaded = load_workflows({**files, "workflows.yaml": yaml.safe_dump(made).encode()}, skill)
    assert list(loaded) == ["open_cart"]


PUBLISHED = Path(__file__).parents[1] / "fixtures" / "arazzo"


def test_the_specifications_pet_coupons_example_is_refused_once_naming_every_part() -> None:
    """#56: the OAI pet-coupons example as published, against its own OpenAPI document (derived
    into a folder of its name): each construct the specification does not define, and each
    parameter its OpenAPI document does not have, in one answer, with why."""
    from skillpress.app.operator.arazzo_io import read_arazzo, workflows_from_arazzo

    spec = (PUBLISHED / "pet-coupons.openapi.yaml").read_bytes()
    files = dict(derive_package(spec, DeriveOptions()).files)
    skill = load_skill(files, slug="pet-coupons")  # bound as its folder would be
    doc = read_arazzo((PUBLISHED / "pet-coupons.arazzo.yaml").read_bytes())
    with pytest.raises(ArazzoRefused) as refused:
        workflows_from_arazzo(doc, skill, files)
    undefined = (
        "is no runtime expression the Arazzo specification defines (they begin $inputs.,"
        " $outputs., $steps., $response., $statusCode…)"
    )
    no_response = (
        "successCriteria '$statusCode == 200' on a step that runs a workflow: it has no response"
        " of its own to test (it succeeds when its workflow does)"
    )
    lacking = (
        "place-order requires 'quantity', which this step does not pass: pass it, or give it a"
        " default in place-order"
    )
    assert str(refused.value).splitlines() == [
        "10 parts of the document are outside what maps:",
        "  - apply-coupon step find-pet: find_pets_by_tags has no query parameter 'pet_tags';"
        " did you mean `tags`? (query: tags)",
        f"  - apply-coupon step find-pet: output 'my_pet_id': '$outputs[0].id' {undefined}",
        "  - apply-coupon step find-coupons: get_pet_coupons has no path parameter 'pet_id';"
        " did you mean `petId`? (path: petId)",
        f"  - apply-coupon step place-order: {no_response}",
        f"  - apply-coupon step place-order: output 'my_order_id': '$workflow_order_id' {undefined}",
        f"  - buy-available-pet step find-pet: output 'my_pet_id': '$outputs[0].id' {undefined}",
        f"  - buy-available-pet step place-order: {no_response}",
        "  - buy-available-pet step place-order: output 'my_order_id': '$workflow_order_id'"
        f" {undefined}",
        # what a run would stop on (said once the rest was, before; now with it)
        f"  - apply-coupon step place-order: {lacking}",
        "  - buy-available-pet step place-order: place-order requires 'quantity', 'coupon_code',"
        " which this step does not pass: pass it, or give it a default in place-order",
    ]
