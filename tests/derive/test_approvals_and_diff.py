"""Guessed approvals and identities, and the diff between packages: pure, on real specs."""

from __future__ import annotations

from pathlib import Path

from skillpress.derive import derive_package
from skillpress.derive.approvals import guess_suggestions
from skillpress.derive.diff import diff_packages, gates

ROOT = Path(__file__).parents[2]
SPECS = ROOT / "tests" / "fixtures" / "specs"


def test_hollowbrook_reads_unproposed_creates_medium_deletes_gated_identity_from_required_fields() -> (
    None
):
    files = derive_package(
        (ROOT / "skillpress" / "examples" / "hollowbrook.yaml").read_bytes()
    ).files
    got = [
        (
            g.operation,
            g.kind,
            g.group,
            g.body.get("risk"),
            g.body.get("gated"),
            g.body.get("binds") or g.body.get("fields"),
        )
        for g in guess_suggestions(files)
    ]
    # a read is never proposed as a gate (it returns no secret); a gate binds every argument
    assert got == [
        (
            "create_booking",
            "approval",
            "changes",
            "medium",
            False,
            ["room_id", "guest_name", "arrival", "departure"],
        ),
        (
            "create_booking",
            "identity",
            "changes",
            None,
            None,
            ["room_id", "guest_name", "arrival", "departure"],
        ),
        ("cancel_booking", "approval", "deletes", "high", True, ["booking_id"]),
    ]


def test_a_read_that_returns_secrets_is_proposed_flagged_and_a_price_makes_money() -> None:
    spec = b"""openapi: 3.0.0
info: {title: V, version: '1'}
servers: [{url: 'https://v.test'}]
paths:
  /projects/{id}/env:
    get:
      operationId: getProjectEnv
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'200': {description: the decrypted values}}
  /projects:
    get:
      operationId: listProjects
      responses: {'200': {description: them}}
  /domains/buy:
    post:
      operationId: buyDomain
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string}, expectedPrice: {type: number}}}
      responses: {'200': {description: bought}}
  /ping:
    post:
      operationId: ping
      responses: {'204': {description: pong}}
"""
    got = {
        g.operation: g.body | {"group": g.group}
        for g in guess_suggestions(derive_package(spec).files)
    }
    assert set(got) == {"get_project_env", "buy_domain", "ping"}  # list_projects: not proposed
    assert (got["get_project_env"]["group"], got["get_project_env"]["why"]) == (
        "reads",
        "a GET that returns credentials or secrets (env)",
    )
    assert (got["buy_domain"]["group"], got["buy_domain"]["risk"], got["buy_domain"]["amount"]) == (
        "money",
        "high",
        "expectedPrice",
    )
    # #55.3: nothing to bind is a gate all the same (each call waits, a grant lets one by)
    assert (got["ping"]["binds"], got["ping"]["bindable"]) == ([], True)


def test_money_is_named_gated_and_its_amount_and_currency_fields_found() -> None:
    files = derive_package((SPECS / "adyen-fund-v6.json").read_bytes()).files
    by_op = {g.operation: g for g in guess_suggestions(files) if g.kind == "approval"}
    transfer = by_op["post_transfer_funds"]
    assert (transfer.group, transfer.body["risk"], transfer.body["gated"]) == (
        "money",
        "high",
        True,
    )
    assert (transfer.body["amount"], transfer.body["currency"]) == (
        "amount.value",
        "amount.currency",
    )
    assert by_op["post_setup_beneficiary"].group == "changes"
    assert sorted(op for op, g in by_op.items() if g.group == "money") == [
        "post_debit_account_holder",
        "post_payout_account_holder",
        "post_refund_funds_transfer",
        "post_refund_not_paid_out_transfers",
        "post_transfer_funds",
    ]


def test_x_risk_wins_over_the_guess() -> None:
    spec = b"""openapi: 3.0.0
info: {title: R, version: '1'}
servers: [{url: 'https://r.test'}]
paths:
  /things/{id}:
    delete:
      operationId: deleteThing
      x-risk: low
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'204': {description: gone}}
    get:
      operationId: getThing
      x-risk: high
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'200': {description: it}}
"""
    got = {
        g.operation: (g.body["risk"], g.body["gated"], g.body["why"])
        for g in guess_suggestions(derive_package(spec).files)
    }
    assert got == {
        "delete_thing": ("low", False, "the spec's x-risk says so"),
        "get_thing": ("high", True, "the spec's x-risk says so"),
    }


def test_diff_names_added_removed_and_changed_calls() -> None:
    spec = (SPECS / "oai-petstore-expanded.yaml").read_text()
    before = derive_package(spec.encode()).files
    changed = spec.replace("  /pets/{id}:\n    get:", "  /pets/{id}:\n    put:").replace(
        "operationId: deletePet", "operationId: removePet"
    )
    after = derive_package(changed.encode()).files
    diff = diff_packages(before, after)
    assert (diff["added"], diff["removed"]) == (["remove_pet"], ["delete_pet"])
    assert diff["changed"] == [
        {
            "operation": "find_pet_by_id",
            "what": ["method", "declaration"],
            "before": "GET /pets/{id}",
            "after": "PUT /pets/{id}",
            "details": ["method PUT (was GET)"],
        }
    ]
    assert diff_packages(before, before)["summary"] == {
        "added": 0,
        "removed": 0,
        "changed": 0,
        "files_changed": 0,
    }
    assert diff_packages(None, before)["summary"]["added"] == 4


def test_diff_says_what_changed_in_a_declaration_in_words() -> None:
    import yaml

    doc = yaml.safe_load((SPECS / "oai-petstore-expanded.yaml").read_text())
    before = derive_package(yaml.safe_dump(doc).encode()).files
    params = doc["paths"]["/pets"]["get"]["parameters"]
    limit = next(p for p in params if p["name"] == "limit")
    limit["schema"] = {"type": "string"}
    params.append({"name": "owner", "in": "query", "required": True, "schema": {"type": "string"}})
    params.append(
        {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["name", "age"]}}
    )
    after = derive_package(yaml.safe_dump(doc).encode()).files
    doc["paths"]["/pets"]["get"]["parameters"][-1]["schema"]["enum"] = ["name", "id"]
    later = derive_package(yaml.safe_dump(doc).encode()).files
    changed = {c["operation"]: c for c in diff_packages(before, after)["changed"]}
    assert changed["find_pets"]["details"] == [
        "new required argument `owner` (string)",
        "new argument `sort` (string)",
        "`limit`: integer → string",
    ]
    again = {c["operation"]: c for c in diff_packages(after, later)["changed"]}
    assert again["find_pets"]["details"] == ["`sort` values: adds `id`; drops `age`"]


def test_gates_are_read_from_frontmatter() -> None:
    files = {
        p.name: p.read_bytes()
        for p in (ROOT / "skillpress" / "examples" / "hollowbrook-skill").iterdir()
    }
    assert gates(files) == {
        "POST /bookings": "create_booking.md",
        "DELETE /bookings/{booking_id}": "cancel_booking.md",
    }


def test_an_identity_is_guessed_for_creates_only_never_for_a_post_that_looks_things_up() -> None:
    import json

    body = {
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["merchantAccount"],
                    "properties": {
                        "merchantAccount": {"type": "string"},
                        "country": {"type": "string"},
                    },
                }
            }
        }
    }
    ok = {"200": {"description": "ok"}}
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Shop", "version": "1"},
        "servers": [{"url": "https://shop.example.test"}],
        "paths": {
            "/paymentMethods": {
                "post": {"operationId": "post-paymentMethods", "requestBody": body, "responses": ok}
            },
            "/orders/search": {
                "post": {"operationId": "searchOrders", "requestBody": body, "responses": ok}
            },
            "/orders": {
                "post": {"operationId": "createOrder", "requestBody": body, "responses": ok}
            },
        },
    }
    guesses = guess_suggestions(derive_package(json.dumps(doc).encode()).files)
    identities = {g.operation: g.body["fields"] for g in guesses if g.kind == "identity"}
    assert identities == {"create_order": ["merchantAccount"]}


def test_a_diff_names_each_workflow_added_removed_or_changed() -> None:
    import yaml

    from skillpress.derive.diff import diff_packages, workflow_changes

    def flows(*items: dict[str, object]) -> bytes:
        return yaml.safe_dump({"workflows": list(items)}).encode()

    book = {"name": "book", "execution": "draft", "procedure": "Book it.", "parameters": {}}
    hardened = {**book, "execution": "hardened", "steps": [{"id": "a", "tool": "x"}]}
    hardened.pop("procedure")
    cancel = {"name": "cancel", "execution": "guided", "tool": "cancel_booking"}
    assert workflow_changes(flows(book), flows(hardened, cancel)) == [
        "+ cancel (guided)",
        "~ book: execution draft → hardened, steps, procedure",
    ]
    assert workflow_changes(flows(book, cancel), flows(book)) == ["- cancel"]
    assert workflow_changes(flows(book), flows(book)) == []
    base = derive_package(
        (ROOT / "skillpress" / "examples" / "hollowbrook.yaml").read_bytes()
    ).files
    diff = diff_packages(
        {**base, "workflows.yaml": flows(book)}, {**base, "workflows.yaml": flows(hardened)}
    )
    assert diff["workflows"] == ["~ book: execution draft → hardened, steps, procedure"]
    assert diff["summary"]["workflows"] == 1
    assert (diff["added"], diff["removed"], diff["changed"]) == ([], [], [])
    assert "workflows" not in diff_packages(base, base)


def test_money_needs_a_number_beside_a_currency_or_a_price_like_name() -> None:
    """#42.15: a secret's `encrypted_value` and a variable's string `value` are not money; an
    integer `amount`, a `value` beside a `currency`, and a decimal-string `price` are."""
    import yaml

    from skillpress.derive import derive_package
    from skillpress.derive.approvals import guess_suggestions

    def body(props: dict[str, object]) -> dict[str, object]:
        return {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object", "properties": props}}},
        }

    def op(op_id: str, props: dict[str, object]) -> dict[str, object]:
        return {
            "operationId": op_id,
            "requestBody": body(props),
            "responses": {"200": {"description": "ok"}},
        }

    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Money", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/secrets": {"put": op("putSecret", {"encrypted_value": {"type": "string"}})},
            "/variables": {
                "post": op(
                    "makeVariable", {"name": {"type": "string"}, "value": {"type": "string"}}
                )
            },
            "/charges": {
                "post": op(
                    "makeCharge", {"amount": {"type": "integer"}, "currency": {"type": "string"}}
                )
            },
            "/payouts": {
                "post": op(
                    "makePayout", {"value": {"type": "number"}, "currency": {"type": "string"}}
                )
            },
            "/offers": {
                "post": op("makeOffer", {"price": {"type": "string", "format": "decimal"}})
            },
        },
    }
    files = derive_package(yaml.safe_dump(doc).encode()).files
    money = sorted(g.operation for g in guess_suggestions(files) if g.group == "money")
    assert money == ["make_charge", "make_offer", "make_payout"]


def test_a_money_gate_reads_the_payments_own_amount_and_says_when_unsure() -> None:
    """#55.1: Adyen's payments send `amount {currency, value}` (required) and, beside it,
    `additionalAmount`; the guess read additionalAmount.value, so a gate confirmed as guessed let
    100,000,000 EUR through under `auto_below: 50`. The payment's own amount is the required
    one, named `amount`, paired with a currency; the guess says what else is sent."""
    files = derive_package((SPECS / "adyen-checkout-v70.json").read_bytes()).files
    money = {
        s.operation: s.body
        for s in guess_suggestions(files)
        if s.kind == "approval" and s.group == "money" and s.body.get("amount")
    }
    for op in ("post_payments", "post_sessions", "post_payment_methods_balance"):
        assert (money[op]["amount"], money[op]["currency"]) == ("amount.value", "amount.currency")
        assert money[op]["unsure"] == (
            "it also sends additionalAmount.value: check that amount.value is the payment's own"
        )
    assert "unsure" not in money["post_payments_payment_psp_reference_refunds"]


def test_money_is_guessed_from_what_a_name_means_beside_it() -> None:
    """#55.1: a count named `total_members` is no amount (Zoom's update_role), a repository's
    `transfer` and a notification thread's `subscription` are no money (GitHub), a paid plan is
    (Zoom's account_plan_create), and a money operation whose amount has no currency beside it
    says an automatic approval needs one."""
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Mixed", "version": "1"},
        "servers": [{"url": "https://api.mixed.test"}],
        "paths": {
            "/roles/{roleId}": {
                "patch": {
                    "operationId": "updateRole",
                    "parameters": [
                        {
                            "name": "roleId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "name": {"type": "string"},
                                        "total_members": {"type": "integer"},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"204": {"description": "updated"}},
                }
            },
            "/repos/{owner}/{repo}/transfer": {
                "post": {
                    "operationId": "repos/transfer",
                    "parameters": [
                        {
                            "name": "owner",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "repo",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {"202": {"description": "moving"}},
                }
            },
            "/notifications/threads/{id}/subscription": {
                "put": {
                    "operationId": "activity/set-thread-subscription",
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": {"200": {"description": "set"}},
                }
            },
            "/accounts/{accountId}/plans": {
                "post": {
                    "operationId": "accountPlanCreate",
                    "parameters": [
                        {
                            "name": "accountId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["price"],
                                    "properties": {"price": {"type": "number"}},
                                }
                            }
                        }
                    },
                    "responses": {"201": {"description": "subscribed"}},
                }
            },
        },
    }
    import json

    files = derive_package(json.dumps(spec).encode()).files
    said = {
        s.operation: (s.group, s.body) for s in guess_suggestions(files) if s.kind == "approval"
    }
    assert said["update_role"][0] == "changes" and "amount" not in said["update_role"][1]
    assert said["repos_transfer"][0] == "changes"
    assert said["activity_set_thread_subscription"][0] == "changes"
    group, plan = said["account_plan_create"]
    assert group == "money" and plan["amount"] == "price" and "currency" not in plan
    assert plan["unsure"].startswith("no currency field beside it: an automatic approval needs one")


def test_an_identity_is_suggested_where_the_api_reads_a_key_and_unsure_where_it_does_not() -> None:
    """#55.2: Adyen declares an `Idempotency-Key` header on its writes and got no identity
    suggestion; an API that declares none got them for every create, though confirming one lets
    a failed write be sent again (twice done where the API does not dedupe). Now a write whose
    API reads a key is suggested with what confirming does; a create elsewhere says it is
    unsure."""
    adyen = derive_package((SPECS / "adyen-checkout-v70.json").read_bytes()).files
    ids = {g.operation: g.body for g in guess_suggestions(adyen) if g.kind == "identity"}
    assert ids["post_payments"] == {
        "fields": ["amount", "merchantAccount", "paymentMethod", "reference", "returnUrl"],
        "why": "the API reads Idempotency-Key: confirming sends one made of these fields, so a"
        " write that failed can be sent again and is done once",
    }
    assert len(ids) == 20 and not any("unsure" in b for b in ids.values())
    stripe = derive_package((SPECS / "stripe.json").read_bytes()).files
    unsure = [g.body for g in guess_suggestions(stripe) if g.kind == "identity"]
    assert unsure and all(
        b["unsure"].startswith("this API declares no idempotency key") for b in unsure
    )


def test_a_description_inside_the_arguments_is_described_anew_not_a_changed_call() -> None:
    """#55.7: an operation whose only change was a description inside its argument schema
    showed under Changed as a bare "declaration" (search_code and six others on GitHub), while
    the call it sends is the same; it is described anew. A constraint that moved is a changed
    call, and says so in words."""
    import yaml

    doc = yaml.safe_load((SPECS / "oai-petstore-expanded.yaml").read_text())
    before = derive_package(yaml.safe_dump(doc).encode()).files
    name = doc["components"]["schemas"]["NewPet"]["properties"]["name"]
    name["description"] = "The pet's name, as its owner calls it."
    described = derive_package(yaml.safe_dump(doc).encode()).files
    diff = diff_packages(before, described)
    assert [c["operation"] for c in diff["changed"]] == [], diff["changed"]
    assert "add_pet" in diff["described"]
    name["maxLength"] = 40
    bounded = derive_package(yaml.safe_dump(doc).encode()).files
    changed = {c["operation"]: c for c in diff_packages(described, bounded)["changed"]}
    assert changed["add_pet"]["what"] == ["declaration"]
    assert changed["add_pet"]["details"] == [
        "its arguments' schema changed (a constraint, a format or a nested field)"
    ]
