"""Derivation rules the whole-directory sweep's judge showed were ours (#54.2), each on a small
document written for it: the request a tool builds is one its spec admits."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from tests.derive.test_derive_rules import doc, tools_of


def _post(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {
        "post": {
            "operationId": "make",
            "requestBody": {"required": True, "content": {media: {"schema": schema}}},
            "responses": {"200": {"description": "ok"}},
        }
    }


def test_a_body_made_one_argument_to_fit_still_requires_its_fields() -> None:
    """MediaConvert's preset: a body too large for the tool budget becomes one argument, and
    it still says what a body must hold (`{}` was offered as valid, and sent)."""
    settings = {
        "type": "object",
        "properties": {f"option_{n:04}": {"type": "string"} for n in range(2500)},
    }
    body = {
        "type": "object",
        "required": ["name", "settings"],
        "properties": {"name": {"type": "string"}, "settings": settings},
    }
    schema = tools_of(doc({"/presets": _post(body)}))["rules_make"]
    assert schema["required"] == ["body"]
    whole = schema["properties"]["body"]
    assert whole["required"] == ["name", "settings"]
    assert whole["properties"] == {"name": {"type": "string"}, "settings": {"type": "object"}}
    assert not Draft202012Validator(schema).is_valid({"body": {}})
    assert Draft202012Validator(schema).is_valid({"body": {"name": "n", "settings": {}}})


def test_a_body_field_naming_another_services_token_is_an_argument() -> None:
    """Nexmo's Facebook page `access_token` and NPR's token to revoke are what the request is
    about: arguments. Slack's `token` whose words say it authenticates stays the credential."""
    security = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
    page = {
        "type": "object",
        "required": ["access_token", "token"],
        "properties": {
            "access_token": {"type": "string", "description": "The Facebook Page Access Token."},
            "token": {"type": "string", "description": "The access token to revoke."},
        },
    }
    slack = {
        "type": "object",
        "properties": {
            "token": {"type": "string", "description": "Authentication token. Requires scope."}
        },
    }
    data = doc(
        {"/page": _post(page), "/chat": {"put": {**_post(slack)["post"], "operationId": "chat"}}},
        security=[{"bearer": []}],
        components=security,
    )
    tools = tools_of(data)
    assert tools["rules_make"]["required"] == ["access_token", "token"]
    assert "token" not in tools["rules_chat"]["properties"]


def test_an_all_of_part_that_names_no_type_narrows_the_property_before_it() -> None:
    """Linode's firewall rules: a part re-declares `inbound: {required: [...]}` beside the array
    the first part makes it; the array stays an array (a string was offered, and sent)."""
    body = {
        "allOf": [
            {
                "type": "object",
                "properties": {"inbound": {"type": "array", "items": {"type": "object"}}},
            }
        ],
        "properties": {"inbound": {"required": ["action"]}},
    }
    inbound = tools_of(doc({"/rules": _post(body)}))["rules_make"]["properties"]["inbound"]
    assert inbound["type"] == "array" and inbound["items"] == {"type": "object"}
    assert inbound["required"] == ["action"]


def test_a_discriminators_property_is_required_in_the_branches_that_describe_it() -> None:
    """Mailchimp's segment conditions: a condition without its `condition_type` matched a
    branch by its other fields, and the API reads the type first."""
    branch = {
        "type": "object",
        "properties": {
            "condition_type": {"type": "string", "enum": ["Aim"]},
            "field": {"type": "string"},
        },
    }
    other = {
        "type": "object",
        "required": ["op"],
        "properties": {"condition_type": {"type": "string", "enum": ["Date"]}, "op": {}},
    }
    body = {
        "type": "object",
        "properties": {
            "condition": {
                "oneOf": [branch, other],
                "discriminator": {"propertyName": "condition_type"},
            }
        },
    }
    schema = tools_of(doc({"/segments": _post(body)}))["rules_make"]
    branches = schema["properties"]["condition"]["oneOf"]
    assert [b.get("required") for b in branches] == [["condition_type"], ["op", "condition_type"]]
    assert not Draft202012Validator(schema).is_valid({"condition": {"field": "aim"}})


def test_an_argument_left_undetailed_keeps_its_values() -> None:
    """EPA's facility search: 200 query parameters, so the largest are left undetailed to fit
    the tool budget; `p_imp_cau_grp`'s 34 pollutant groups were dropped with its words, and any
    string was offered (and sent) where the API takes one of them."""
    groups = [f"POLLUTANT GROUP {n:02}" for n in range(34)]
    params = [
        {
            "name": f"p_{n:03}",
            "in": "query",
            "description": f"Filter {n}. " + "Enter a value to filter the facilities. " * 6,
            "schema": {"type": "string"},
        }
        for n in range(200)
    ]
    params.append(
        {"name": "p_grp", "in": "query", "description": "Group.", "schema": {"enum": groups}}
    )
    op = {
        "get": {
            "operationId": "facilities",
            "parameters": params,
            "responses": {"200": {"description": "ok"}},
        }
    }
    schema = tools_of(doc({"/facilities": op}))["rules_facilities"]
    grp = schema["properties"]["p_grp"]
    assert grp["description"] == "not detailed here: this operation's file describes it"
    assert grp["enum"] == groups


def test_a_base_with_a_discriminator_is_offered_as_the_kinds_that_extend_it() -> None:
    """Data Factory's repoConfiguration: FactoryRepoConfiguration has a discriminator (`type`)
    and no oneOf; FactoryGitHubConfiguration and FactoryVSTSConfiguration extend it by allOf.
    Offered as the base, `type` was any string (and `judge` was sent); now one of the kinds,
    each naming itself."""
    base = {
        "type": "object",
        "discriminator": {"propertyName": "type"},
        "required": ["type", "accountName"],
        "properties": {"type": {"type": "string"}, "accountName": {"type": "string"}},
    }
    github = {
        "allOf": [{"$ref": "#/components/schemas/RepoConfiguration"}],
        "properties": {"hostName": {"type": "string"}},
        "x-ms-discriminator-value": "FactoryGitHubConfiguration",
    }
    vsts = {
        "allOf": [{"$ref": "#/components/schemas/RepoConfiguration"}],
        "required": ["projectName"],
        "properties": {"projectName": {"type": "string"}},
    }
    body = {
        "type": "object",
        "properties": {"repo": {"$ref": "#/components/schemas/RepoConfiguration"}},
    }
    schemas = {"RepoConfiguration": base, "GitHub": github, "Vsts": vsts}
    schema = tools_of(doc({"/factories": _post(body)}, schemas))["rules_make"]
    validator = Draft202012Validator(schema)
    assert not validator.is_valid({"repo": {"type": "judge", "accountName": "a"}})
    assert validator.is_valid(
        {"repo": {"type": "FactoryGitHubConfiguration", "accountName": "a", "hostName": "h"}}
    )
    assert validator.is_valid({"repo": {"type": "Vsts", "accountName": "a", "projectName": "p"}})
    assert not validator.is_valid({"repo": {"type": "Vsts", "accountName": "a"}})


def test_kinds_named_through_a_shared_enum_are_told_apart_and_a_read_only_kind_is_not_a_choice() -> (
    None
):
    """Service Fabric's BackupEntity names its kind through a shared enum type (EntityKind:
    Application, Partition, Service); Azure Migrate's solution summary's kind is readOnly, the
    server's to say: that base is offered as itself."""
    kind = {"type": "string", "enum": ["Application", "Partition"]}
    base = {
        "type": "object",
        "discriminator": {"propertyName": "EntityKind"},
        "required": ["EntityKind"],
        "properties": {"EntityKind": {"$ref": "#/components/schemas/Kind"}},
    }
    app = {
        "allOf": [{"$ref": "#/components/schemas/Entity"}],
        "properties": {"ApplicationName": {"type": "string"}},
        "x-ms-discriminator-value": "Application",
    }
    part = {
        "allOf": [{"$ref": "#/components/schemas/Entity"}],
        "required": ["PartitionId"],
        "properties": {"PartitionId": {"type": "string"}},
        "x-ms-discriminator-value": "Partition",
    }
    summary = {
        "type": "object",
        "discriminator": {"propertyName": "instanceType"},
        "properties": {"instanceType": {"type": "string", "readOnly": True}},
    }
    servers = {"allOf": [{"$ref": "#/components/schemas/Summary"}], "properties": {"n": {}}}
    dbs = {"allOf": [{"$ref": "#/components/schemas/Summary"}], "properties": {"m": {}}}
    body = {
        "type": "object",
        "properties": {
            "entity": {"$ref": "#/components/schemas/Entity"},
            "summary": {"$ref": "#/components/schemas/Summary"},
        },
    }
    schemas = {
        "Kind": kind,
        "Entity": base,
        "App": app,
        "Part": part,
        "Summary": summary,
        "Servers": servers,
        "Dbs": dbs,
    }
    schema = tools_of(doc({"/backups": _post(body)}, schemas))["rules_make"]
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"entity": {"EntityKind": "Application", "ApplicationName": "a"}})
    assert not validator.is_valid({"entity": {"EntityKind": "Partition"}})  # its PartitionId
    assert validator.is_valid({"entity": {"EntityKind": "Partition", "PartitionId": "p"}})
    assert "oneOf" not in schema["properties"]["summary"]


def test_a_choice_no_value_could_make_is_offered_as_one_a_value_can() -> None:
    """Tools no valid arguments could call (the sweep's 'arguments not built'): ShipEngine's
    rates by shipment id or by shipment are a oneOf of open objects that require nothing, so
    whatever matches one matches both; linqr's ContactData closes its properties while they are
    all in its anyOf branches. Offered as anyOf, and open: a call one admits is valid."""
    by_id = {"type": "object", "properties": {"shipment_id": {"type": "string"}}}
    by_shipment = {"type": "object", "properties": {"shipment": {"type": "object"}}}
    vcard = {"type": "object", "properties": {"first_name": {"type": "string"}}}
    mecard = {"type": "object", "properties": {"name": {"type": "string"}}}
    body = {
        "type": "object",
        "properties": {
            "rates": {"oneOf": [by_id, by_shipment]},
            "contact": {"additionalProperties": False, "anyOf": [vcard, mecard]},
        },
    }
    schema = tools_of(doc({"/rates": _post(body)}))["rules_make"]
    assert "anyOf" in schema["properties"]["rates"]
    assert Draft202012Validator(schema).is_valid(
        {"rates": {"shipment_id": "se-1"}, "contact": {"first_name": "Ada"}}
    )


def test_a_one_of_whose_every_branch_another_admits_is_any_of() -> None:
    """Otoroshi's JWT sources: in a query param or a cookie (each `{type, name}`), or in a
    header (those and `remove`), told apart only in words: every value one admits another
    admits too, so no value is valid under oneOf. A oneOf where one branch asks for less than
    another stays oneOf: `{a}` matches the first alone."""
    query = {"type": "object", "required": ["type", "name"], "properties": {"name": {}, "type": {}}}
    header = {**query, "required": ["type", "name", "remove"], "properties": {"remove": {}}}
    cookie = dict(query)
    fewer = {"type": "object", "required": ["a"], "properties": {"a": {}}}
    more = {"type": "object", "required": ["a", "b"], "properties": {"a": {}, "b": {}}}
    body = {
        "type": "object",
        "properties": {
            "source": {"oneOf": [query, header, cookie]},
            "pick": {"oneOf": [fewer, more]},
        },
    }
    props = tools_of(doc({"/verifiers": _post(body)}))["rules_make"]["properties"]
    assert "anyOf" in props["source"] and "oneOf" in props["pick"]


def test_a_branch_that_is_itself_a_choice_of_open_objects_admits_what_the_others_do() -> None:
    """Zoom's settings update: the user's settings (open, all optional), or a choice of two
    authentication shapes (each open, each optional), or security settings. Whatever one
    admits the others do, so no value is valid under oneOf: offered as anyOf, at both levels.
    A nested choice that requires something stays told apart."""
    settings = {"type": "object", "properties": {"feature": {"type": "object"}}}
    meeting = {"properties": {"meeting_authentication": {"type": "boolean"}}}
    recording = {"properties": {"recording_authentication": {"type": "boolean"}}}
    auth = {"type": "object", "oneOf": [meeting, recording]}
    security = {"type": "object", "properties": {"meeting_security": {"type": "object"}}}
    strict = {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}
    body = {
        "type": "object",
        "properties": {
            "settings": {"oneOf": [settings, auth, security]},
            "told": {"oneOf": [settings, {"type": "object", "oneOf": [strict, recording]}]},
        },
    }
    schema = tools_of(doc({"/users/settings": _post(body)}))["rules_make"]
    props = schema["properties"]
    assert "anyOf" in props["settings"] and "oneOf" not in props["settings"]
    assert "oneOf" in props["told"]
    assert Draft202012Validator(schema).is_valid({"settings": {"feature": {}}})
