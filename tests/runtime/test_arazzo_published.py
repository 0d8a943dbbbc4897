"""Arazzo documents as their authors publish them (#56): the OpenAPI Initiative's FAPI-PAR and
buy-now-pay-later examples and Redocly's museum tickets, unedited (tests/fixtures/arazzo), each
refused in one answer naming every part outside what maps with its reason; and what they showed
missing, now read: a workflow's own `parameters` (every operation step's, a step's own of the
same name winning) and a payload written as the text of a JSON body."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from skillpress.app.operator.arazzo_io import read_arazzo, workflows_from_arazzo
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.runtime.interop.arazzo import ArazzoRefused
from skillpress.runtime.interop.arazzo_in import from_arazzo
from skillpress.runtime.package.model import Skill
from skillpress.runtime.package.skill import load_skill
from tests.runtime.test_arazzo_as_written import LOOK, MAKE, SHOP, _doc

PUBLISHED = Path(__file__).parents[1] / "fixtures" / "arazzo"


@pytest.fixture(scope="module")
def shop() -> tuple[Skill, dict[str, bytes]]:
    files = derive_package(yaml.safe_dump(SHOP).encode(), DeriveOptions(slug="shop")).files
    return load_skill(files), dict(files)


def _refused(document: str, spec: str, slug: str) -> list[str]:
    """The one answer importing `document` against `spec` (derived into a folder `slug`) gives."""
    files = dict(derive_package((PUBLISHED / spec).read_bytes(), DeriveOptions()).files)
    skill = load_skill(files, slug=slug)
    doc = read_arazzo((PUBLISHED / document).read_bytes())
    with pytest.raises(ArazzoRefused) as refused:
        workflows_from_arazzo(doc, skill, files)
    return str(refused.value).splitlines()


def test_the_museum_tickets_credential_is_left_out_and_said() -> None:
    """Redocly's example gives every step `Authorization: Basic Og==` as a workflow parameter:
    the header the skill sends as its credential, from the operator's variable, never from a
    document (it was refused as "`parameters` is outside the subset", saying nothing; then
    refused naming it): left out of every step's arguments and said (runs: test_arazzo_oracle)."""
    files = derive_package(
        (PUBLISHED / "museum.openapi.yaml").read_bytes(), DeriveOptions(slug="museum")
    ).files
    doc = read_arazzo((PUBLISHED / "museum-tickets.arazzo.yaml").read_bytes())
    made = workflows_from_arazzo(doc, load_skill(files), files)
    assert made.notes == [
        "get-museum-tickets's parameters: header 'Authorization' is museum's credential, which"
        " every call carries from MUSEUM_API_KEY: the value the document gives is not sent"
    ]
    [step, _] = yaml.safe_load(made.text)["workflows"][0]["steps"]
    assert step["args"] == {
        "ticketType": "general",
        "ticketDate": "2023-09-07",
        "email": "todd@example.com",
    }


def test_the_fapi_par_workflow_imports_saying_what_it_keeps_as_written() -> None:
    """Everything in it maps, its token request's body written as JSON text included (runs:
    test_arazzo_oracle); its required `TokenRequestBody`, read by no step (the token step
    writes its body from the other inputs), is kept as declared and said, as is the first
    step's `PAR` for the source's operationId `Par`."""

    files = derive_package(
        (PUBLISHED / "FAPI-PAR.openapi.yaml").read_bytes(), DeriveOptions(slug="fapi-par")
    ).files
    doc = read_arazzo((PUBLISHED / "FAPI-PAR.arazzo.yaml").read_bytes())
    made = workflows_from_arazzo(doc, load_skill(files), files, "FAPI-PAR.arazzo.yaml")
    assert made.names == ["OIDC-PAR-AuthzCode"]
    assert made.notes == [
        "OIDC-PAR-AuthzCode step PARStep: operationId 'PAR' is no operationId of the source;"
        " taken as 'Par', which the export writes",
        "OIDC-PAR-AuthzCode input TokenRequestBody: no step reads it; kept as the document"
        " declares it (a run takes it and sends none of it)",
    ]
    params = yaml.safe_load(made.text)["workflows"][0]["parameters"]
    assert params["required"] == [
        "PARrequestBody",
        "TokenRequestBody",
        "client_id",
        "client_assertion",
        "redirect_uri",
        "code_verifier",
    ]
    assert params["properties"]["TokenRequestBody"]["x-skillpress-unread"] is True


def test_the_pay_later_workflow_is_refused_once_naming_every_part() -> None:
    """Its ways map now (three with criteria each, `end`s with criteria, none taken: the next
    step; test_arazzo_ways), so each step's are read on the way they run: every part in the
    one answer; createCustomer's ways on `$statusCode == 201` / `== 200` (it succeeds on both)
    test the status it saves now. Eight are mistakes of the example itself (an output named
    without `outputs.`, a payload that is not JSON, a required field not given, a query
    parameter and a body field the operation does not have, `$response.headers`, an output its
    step does not save); the ninth, a value saved on one way only (createCustomer's, which
    initiateBnplTransaction reads on the way that skips it too), is one Arazzo leaves
    undefined there."""
    flow = "ApplyForLoanAtCheckout"
    assert _refused("bnpl.arazzo.yaml", "bnpl.openapi.yaml", "bnpl") == [
        "9 parts of the document are outside what maps:",
        f"  - {flow} outputs: '$steps.retrieveFinalizedPaymentPlan.finalizedPaymentPlan' "
        "is no runtime expression the Arazzo specification defines (a step's output is "
        "`$steps.<stepId>.outputs.<name>`)",
        f"  - {flow} step initiateBnplTransaction: "
        "'$steps.createCustomer.outputs.customer': step createCustomer saves customer, "
        "but not on every way to this step (a way that does not run it comes here too), "
        "and a step reads only what every way to it saved",
        f"  - {flow} step retrieveFinalizedPaymentPlan: "
        "'$steps.initiateBnplTransaction.outputs.loanTransactionId' names no output step "
        "initiateBnplTransaction saved (its outputs: loanTransactionResourceUrl, "
        "redirectAuthToken)",
        f"  - {flow} step updateOrderStatus: "
        "'$steps.initiateBnplTransaction.outputs.loanTransactionId' names no output step "
        "initiateBnplTransaction saved (its outputs: loanTransactionResourceUrl, "
        "redirectAuthToken)",
        f"  - {flow} step updateOrderStatus: update_bnpl_loan_transaction_status takes no "
        "argument 'loanStatus'; did you mean `status`? (it takes loanTransactionId, "
        "status)",
        f"  - {flow} step authenticateCustomerAndAuthorizeLoan: get_authorization has no "
        "query parameter 'redirectAuthToken'; did you mean `AuthorizationToken`? (query: "
        "AuthorizationToken)",
        f"  - {flow} step authenticateCustomerAndAuthorizeLoan: output 'redirectUrl': "
        "'$response.headers.Location' is no runtime expression the Arazzo specification "
        "defines (a response header is `$response.header.<name>`)",
        f"  - {flow} step createCustomer: the payload is text that is not JSON (line 6, "
        "column 3: Expecting ',' delimiter), so no application/json body can be made from"
        " it",
        f"  - {flow} step initiateBnplTransaction: create_bnpl_transaction requires "
        "'totalAmount': give it in args",
    ]


# each part the refusal names, mended as it says (the one-way value left out)
BNPL_MENDED = [
    (
        "$steps.retrieveFinalizedPaymentPlan.finalizedPaymentPlan",
        "$steps.retrieveFinalizedPaymentPlan.outputs.finalizedPaymentPlan",
    ),
    ('          "newCustomer": "{$steps.createCustomer.outputs.customer}",\n', ""),
    (
        "      loanTransactionResourceUrl: $response.body.links.self",
        "      loanTransactionResourceUrl: $response.body.links.self\n"
        "      loanTransactionId: $response.body.loanTransactionId",
    ),
    ('payload: { "loanStatus": "Completed" }', 'payload: { "status": "Completed" }'),
    (
        "- name: redirectAuthToken\n        in: query\n"
        "        value: $steps.authenticateCustomerAndAuthorizeLoan.outputs.redirectAuthToken",
        "- name: AuthorizationToken\n        in: query\n"
        "        value: $steps.initiateBnplTransaction.outputs.redirectAuthToken",
    ),
    ("$response.headers.Location", "$response.header.Location"),
    ('"{$inputs.customer.postalCode}"\n', '"{$inputs.customer.postalCode}",\n'),
    (
        '"products": "{$steps.checkLoanCanBeProvided.outputs.eligibleProducts}"',
        '"products": "{$steps.checkLoanCanBeProvided.outputs.eligibleProducts}",\n'
        '          "totalAmount": "{$steps.checkLoanCanBeProvided.outputs.totalLoanAmount}"',
    ),
]


def test_the_pay_later_workflow_mended_as_its_refusal_says_imports() -> None:
    """No refusal hides another: each of the nine parts mended as it is said (the value read on
    the way that skips its step left out), the document imports, its ways as `if`s, the
    create step saving the status its ways test and the authorize step the Location header."""
    text = (PUBLISHED / "bnpl.arazzo.yaml").read_text()
    for said, mended in BNPL_MENDED:
        assert text.count(said) >= 1, said
        text = text.replace(said, mended)
    files = dict(
        derive_package((PUBLISHED / "bnpl.openapi.yaml").read_bytes(), DeriveOptions()).files
    )
    skill = load_skill(files, slug="bnpl")
    made = workflows_from_arazzo(read_arazzo(text.encode()), skill, files)
    (flow,) = yaml.safe_load(made.text)["workflows"]
    steps = {s["id"]: s for s in flow["steps"]}
    create = steps["eligibilityCheckNotRequired"]["else"]
    assert create[0]["status_as"] == "createCustomer_status"
    assert create[1]["if"] == "createCustomer_status == 200"
    authorize = steps["CustomerAuthorizationNotRequired"]["else"][0]
    assert authorize["headers_as"] == {"redirectUrl": "Location"}
    assert [s["id"] for s in flow["steps"]] == [
        "checkLoanCanBeProvided",
        "existingCustomerNotEligible-if",
        "getCustomerTermsAndConditions",
        "eligibilityCheckNotRequired",
        "initiateBnplTransaction",
        "CustomerAuthorizationNotRequired",
        "retrieveFinalizedPaymentPlan",
        "updateOrderStatus",
        "outputs",
    ]


def test_a_workflows_parameters_are_every_steps_and_a_steps_own_wins(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    """`parameters` beside a workflow's steps (the Arazzo specification's: they apply to every
    operation step) reach each step that does not give its own of that name and place."""
    skill, files = shop
    make = {k: v for k, v in MAKE.items() if k != "parameters"}
    look = copy.deepcopy(LOOK)
    look["parameters"][1]["value"] = "kiosk"  # its own x-channel: this one wins
    doc = _doc([make, look])
    doc["workflows"][0]["parameters"] = [
        {"name": "X-Channel", "in": "header", "value": "$inputs.channel"}
    ]
    steps = from_arazzo(doc, skill, files)["workflows"][0]["steps"]
    assert steps[0]["args"]["X-Channel"] == "{{channel}}"
    assert steps[1]["args"]["X-Channel"] == "kiosk"


def test_a_payload_written_as_json_text_is_the_fields_it_spells(
    shop: tuple[Skill, dict[str, bytes]],
) -> None:
    """`payload: |` with a JSON body and `{$…}` in its strings (as FAPI-PAR's token step and
    the pay-later steps write it) is the body's fields, each expression a value like any other;
    text that is not JSON says where it stops being JSON."""
    skill, files = shop
    make = copy.deepcopy(MAKE)
    make["requestBody"]["payload"] = '{\n  "customerId": "{$inputs.customer}"\n}\n'
    steps = from_arazzo(_doc([make, LOOK]), skill, files)["workflows"][0]["steps"]
    assert steps[0]["args"]["customerId"] == "{{customer}}"
    make["requestBody"]["payload"] = '{"customerId": "{$inputs.customer}"'
    with pytest.raises(ArazzoRefused) as refused:
        from_arazzo(_doc([make, LOOK]), skill, files)
    assert str(refused.value) == (
        "open_cart step make: the payload is text that is not JSON (line 1, column 36: Expecting"
        " ',' delimiter), so no application/json body can be made from it"
    )


def test_the_published_fixtures_are_the_published_bytes() -> None:
    """Each is as its authors published it (SOURCES.md names the commit): its length in
    characters and its line endings as read there."""
    sizes: dict[str, tuple[int, bool]] = {
        "museum-tickets.arazzo.yaml": (1150, False),
        "museum.openapi.yaml": (23695, False),
        "FAPI-PAR.arazzo.yaml": (6090, True),
        "FAPI-PAR.openapi.yaml": (24337, True),
        "bnpl.arazzo.yaml": (10123, False),
        "bnpl.openapi.yaml": (16726, False),
    }
    for name, (chars, crlf) in sizes.items():
        text = (PUBLISHED / name).read_bytes().decode("utf-8")
        assert (len(text), "\r\n" in text) == (chars, crlf), name
        assert isinstance(yaml.safe_load(text), dict), name


def test_a_condition_joined_by_and_is_its_tests(shop: tuple[Skill, dict[str, bytes]]) -> None:
    """#56.2: `$statusCode == 201 && $response.body#/id != null`, as documents write one
    criterion of two tests, is the step's two success tests (each must hold, as Arazzo reads
    `&&`); a part that is no test is refused as any criterion is."""
    skill, files = shop
    make = copy.deepcopy(MAKE)
    make["successCriteria"] = [{"condition": "$statusCode == 201 && $response.body#/id != null"}]
    steps = from_arazzo(_doc([make, LOOK]), skill, files)["workflows"][0]["steps"]
    assert steps[0]["success"] == ["$statusCode == 201", "$response.body#/id != null"]
    make["successCriteria"] = [{"condition": "$statusCode == 201 && $url == 'x'"}]
    with pytest.raises(ArazzoRefused, match="open_cart step make: successCriteria"):
        from_arazzo(_doc([make, LOOK]), skill, files)
