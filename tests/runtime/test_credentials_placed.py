"""Credentials where the spec puts them (#42.1-4): an apiKey in the query or a cookie, two schemes
one requirement names together, a credential declared as a header parameter, and a body field
named `token` that is not the skill's own. Each on a small spec written for it, derived and
called against a server that records what it was sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.host import SkillHost
from skillpress.runtime.calling.calls import prepare_call
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.package.skill import load_skill
from tests.runtime.hostile_api import Answer, HostileApi, hostile_api


@pytest.fixture
def api() -> Iterator[HostileApi]:
    yield from hostile_api({"/": lambda seen: Answer(body={"ok": True})})


def _spec(base: str, schemes: dict[str, Any], security: list[Any], **op: Any) -> bytes:
    operation = {"operationId": "listItems", "responses": {"200": {"description": "ok"}}} | op
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Keys", "version": "1"},
        "servers": [{"url": base}],
        "paths": {"/items": {"get": operation}},
    }
    if schemes:
        doc["components"] = {"securitySchemes": schemes}
    if security:
        doc["security"] = security
    return yaml.safe_dump(doc).encode()


def _with_payments(spec: bytes) -> bytes:
    """`spec` with two more reads: /more under the document's security, /payments under the
    `Personal` scheme alone (an operation that takes another credential)."""
    doc = yaml.safe_load(spec)
    ok = {"200": {"description": "ok"}}
    doc["paths"]["/more"] = {"get": {"operationId": "listMore", "responses": ok}}
    doc["paths"]["/payments"] = {
        "get": {"operationId": "getPayments", "security": [{"Personal": []}], "responses": ok}
    }
    return yaml.safe_dump(doc).encode()


def _host(tmp_path: Path, data: bytes, slug: str) -> tuple[SkillHost, dict[str, bytes]]:
    files = derive_package(data, DeriveOptions(slug=slug)).files
    write_package_dir(files, tmp_path / "skills" / slug)
    return SkillHost(tmp_path / "skills", limits=CallLimits(retries=0)), files


def test_an_api_key_in_the_query_or_a_cookie_is_attached_there_and_never_shown(
    tmp_path: Path, api: HostileApi
) -> None:
    query = {"key": {"type": "apiKey", "in": "query", "name": "apikey"}}
    host, files = _host(tmp_path, _spec(api.url, query, [{"key": []}]), "amadeus")
    meta = json.loads(files["skill.json"])["auth"]
    assert (meta["header"], meta["in"], meta["kind"]) == ("apikey", "query", "apiKey")
    assert "the key, sent as it is in the `apikey` query parameter" in files["body.md"].decode()
    got = host.call("amadeus_list_items", {}, environ={"AMADEUS_API_KEY": "q-secret-123"})
    assert got.status == 200 and api.seen[-1].path == "/items?apikey=q-secret-123"
    skill = load_skill(files)
    from skillpress.app.serving.calling import call_setup

    setup = call_setup(skill, None, CallLimits(), None)
    shown = prepare_call(skill.tool("list_items"), {}, skill.hosts, setup).shown_request(setup)
    assert shown["url"].endswith("/items?apikey=<from $AMADEUS_API_KEY>")
    cookie = {"sess": {"type": "apiKey", "in": "cookie", "name": "session"}}
    host, _ = _host(tmp_path / "c", _spec(api.url, cookie, [{"sess": []}]), "meshery")
    host.call("meshery_list_items", {}, environ={"MESHERY_API_KEY": "c-secret-456"})
    assert api.seen[-1].headers["Cookie"] == "session=c-secret-456"
    assert api.seen[-1].path == "/items"


def test_two_schemes_one_requirement_puts_in_one_header_send_one_and_it_is_the_credential(
    tmp_path: Path, api: HostileApi
) -> None:
    """Azure Container Registry requires HTTP basic AND an apiKey named Authorization: both are
    the one Authorization header, so a request carries one. The basic credential is sent, on
    the operations that need both and on the token exchange that needs it alone (the sweep's
    judge found the companion written over it there: no basic credential reached the API)."""
    schemes = {
        "registry_auth": {"type": "http", "scheme": "basic"},
        "registry_oauth2": {"type": "apiKey", "in": "header", "name": "Authorization"},
    }
    doc = yaml.safe_load(_spec(api.url, schemes, [{"registry_auth": [], "registry_oauth2": []}]))
    ok = {"200": {"description": "ok"}}
    doc["paths"]["/more"] = {"get": {"operationId": "listMore", "responses": ok}}
    doc["paths"]["/oauth2/token"] = {
        "get": {
            "operationId": "getToken",
            "security": [{"registry_auth": []}],
            "responses": {"200": {"description": "ok"}},
        }
    }
    host, files = _host(tmp_path, yaml.safe_dump(doc).encode(), "acr")
    auth = json.loads(files["skill.json"])["auth"]
    assert (auth["kind"], auth["scheme"], auth.get("also")) == ("basic", "registry_auth", None)
    env = {"ACR_API_KEY": "u:p", "ACR_REGISTRY_OAUTH2": "x"}
    basic = "Basic dTpw"  # u:p
    for tool in ("acr_list_items", "acr_list_more", "acr_get_token"):
        assert host.call(tool, {}, environ=env).status == 200
        assert api.seen[-1].headers["Authorization"] == basic, tool


def test_a_credential_parameter_every_operation_requires_is_sent_beside_the_key(
    tmp_path: Path, api: HostileApi
) -> None:
    """Trello: its security says the key or the token will do, while every operation requires
    both as query parameters; the token was withheld as a credential and never sent (the
    sweep's judge found 324 requests without it). It is sent from its own variable; a
    credential parameter only a few operations require is not sent everywhere."""
    schemes = {
        "api_key": {"type": "apiKey", "in": "query", "name": "key"},
        "api_token": {"type": "apiKey", "in": "query", "name": "token"},
    }
    pair = [
        {"name": "key", "in": "query", "required": True, "schema": {"type": "string"}},
        {"name": "token", "in": "query", "required": True, "schema": {"type": "string"}},
    ]
    spec = _spec(api.url, schemes, [{"api_key": []}, {"api_token": []}], parameters=pair)
    host, files = _host(tmp_path, spec, "trello")
    auth = json.loads(files["skill.json"])["auth"]
    assert (auth["header"], auth.get("in")) == ("key", "query")
    assert auth["also"] == [
        {"name": "token", "in": "query", "kind": "apiKey", "env": "TRELLO_TOKEN"}
    ]
    env = {"TRELLO_API_KEY": "k-123", "TRELLO_TOKEN": "t-456"}
    assert host.call("trello_list_items", {}, environ=env).status == 200
    assert api.seen[-1].path == "/items?key=k-123&token=t-456"
    doc = yaml.safe_load(spec)
    ok = {"200": {"description": "ok"}}
    for n in range(3):  # three more operations that need the key alone
        doc["paths"][f"/more{n}"] = {"get": {"operationId": f"more{n}", "responses": ok}}
    files = derive_package(yaml.safe_dump(doc).encode(), DeriveOptions(slug="trello")).files
    assert "also" not in json.loads(files["skill.json"])["auth"]


def test_between_equally_used_keys_the_one_in_a_header_is_the_skills_credential() -> None:
    schemes = {
        "a_cookie": {"type": "apiKey", "in": "cookie", "name": "sid"},
        "b_key": {"type": "apiKey", "in": "header", "name": "X-Relay-Key"},
    }
    doc = yaml.safe_load(_spec("https://relay.example", schemes, [{"b_key": []}]))
    doc["paths"]["/other"] = {
        "get": {
            "operationId": "getOther",
            "security": [{"a_cookie": []}],
            "responses": {"200": {"description": "ok"}},
        }
    }
    files = derive_package(yaml.safe_dump(doc).encode(), DeriveOptions(slug="relay")).files
    auth = json.loads(files["skill.json"])["auth"]
    assert (auth["header"], auth["scheme"], auth.get("in", "header")) == (
        "X-Relay-Key",
        "b_key",
        "header",
    )
    assert auth["schemes"]["a_cookie"]["servable"] is True


def test_two_schemes_one_requirement_names_are_both_sent_each_from_its_own_variable(
    tmp_path: Path, api: HostileApi
) -> None:
    schemes = {
        "appKey": {"type": "apiKey", "in": "header", "name": "X-VTEX-API-AppKey"},
        "appToken": {"type": "apiKey", "in": "header", "name": "X-VTEX-API-AppToken"},
    }
    host, files = _host(tmp_path, _spec(api.url, schemes, [{"appKey": [], "appToken": []}]), "vtex")
    auth = json.loads(files["skill.json"])["auth"]
    assert auth["also"] == [
        {
            "name": "X-VTEX-API-AppToken",
            "in": "header",
            "kind": "apiKey",
            "env": "VTEX_APP_TOKEN",
            "scheme": "appToken",
        }
    ]
    assert "(from $VTEX_APP_TOKEN)" in files["body.md"].decode()
    both = {"VTEX_API_KEY": "k-0123456789", "VTEX_APP_TOKEN": "t-0123456789"}
    got = host.call("vtex_list_items", {}, environ=both)
    sent = api.seen[-1].headers
    assert got.status == 200
    assert (sent["X-VTEX-API-AppKey"], sent["X-VTEX-API-AppToken"]) == (
        "k-0123456789",
        "t-0123456789",
    )
    half = host.call("vtex_list_items", {}, environ={"VTEX_API_KEY": "k-0123456789"})
    assert half.credential_missing == (
        "$VTEX_APP_TOKEN is not set: sent without X-VTEX-API-AppToken"
    )


@pytest.mark.parametrize("together", [3, 1])
def test_a_requirement_stating_a_credential_together_with_the_skills_own_sends_it_too(
    tmp_path: Path, api: HostileApi, together: int
) -> None:
    """api2cart: 140 operations need the API key and the store key together, 7 the key alone;
    SoundCloud: 20 need the OAuth header and the client id together, 31 the header alone. Each
    operation states its own; the second credential is sent too, or the operations that need
    both always fail (the sweep's judge found them, #54.2); one that needs only the first
    ignores it."""
    schemes = {
        "api_key": {"type": "apiKey", "in": "header", "name": "x-api-key"},
        "store_key": {"type": "apiKey", "in": "header", "name": "x-store-key"},
    }
    doc = yaml.safe_load(_spec(api.url, schemes, []))
    doc.pop("security", None)
    (only,) = doc["paths"].values()
    only["get"]["security"] = [{"api_key": [], "store_key": []}]
    for n in range(together - 1):  # api2cart: more need both; SoundCloud: fewer
        doc["paths"][f"/both{n}"] = {
            "get": {
                "operationId": f"both{n}",
                "security": [{"api_key": [], "store_key": []}],
                "responses": {"200": {"description": "ok"}},
            }
        }
    for n in range(2):
        doc["paths"][f"/alone{n}"] = {
            "get": {
                "operationId": f"alone{n}",
                "security": [{"api_key": []}],
                "responses": {"200": {"description": "ok"}},
            }
        }
    host, files = _host(tmp_path, yaml.safe_dump(doc).encode(), "carts")
    auth = json.loads(files["skill.json"])["auth"]
    assert [(a["name"], a["env"]) for a in auth["also"]] == [("x-store-key", "CARTS_STORE_KEY")]
    keys = {"CARTS_API_KEY": "k-0123456789", "CARTS_STORE_KEY": "s-0123456789"}
    host.call("carts_list_items", {}, environ=keys)
    sent = api.seen[-1].headers
    assert (sent["x-api-key"], sent["x-store-key"]) == ("k-0123456789", "s-0123456789")


def test_a_credential_declared_as_a_header_parameter_is_the_skills_own(
    tmp_path: Path, api: HostileApi
) -> None:
    header = {"name": "xi-api-key", "in": "header", "required": True, "schema": {"type": "string"}}
    data = _spec(api.url, {}, [], parameters=[header])
    host, files = _host(tmp_path, data, "voices")
    tool = next(t for t in host.tools("anthropic") if t["name"] == "voices_list_items")
    assert "xi-api-key" not in tool["input_schema"].get("properties", {})  # never a model's
    assert json.loads(files["skill.json"])["auth"]["header"] == "xi-api-key"
    host.call("voices_list_items", {}, environ={"VOICES_API_KEY": "xi-secret-789"})
    assert api.seen[-1].headers["xi-api-key"] == "xi-secret-789"
    # a required Authorization parameter beside a scheme of another header: sent too
    scheme = {"sub": {"type": "apiKey", "in": "header", "name": "Ocp-Apim-Subscription-Key"}}
    bearer = {
        "name": "Authorization",
        "in": "header",
        "required": True,
        "schema": {"type": "string"},
    }
    data = _spec(api.url, scheme, [{"sub": []}], parameters=[bearer])
    host, files = _host(tmp_path / "l", data, "luis")
    env = {"LUIS_API_KEY": "sub-0123456789", "LUIS_AUTHORIZATION": "Bearer arm-0123456789"}
    host.call("luis_list_items", {}, environ=env)
    sent = api.seen[-1].headers
    assert (sent["Ocp-Apim-Subscription-Key"], sent["Authorization"]) == (
        "sub-0123456789",
        "Bearer arm-0123456789",
    )


def test_a_token_field_that_is_not_the_skills_credential_is_an_argument(
    tmp_path: Path, api: HostileApi
) -> None:
    scheme = {"priv": {"type": "apiKey", "in": "header", "name": "Private-Token"}}
    form = {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "required": ["token"],
                    "properties": {
                        "token": {"type": "string", "description": "The authentication token"}
                    },
                }
            }
        },
    }
    data = yaml.safe_load(_spec(api.url, scheme, [{"priv": []}]))
    data["paths"]["/items"]["put"] = {
        "operationId": "setService",
        "requestBody": form,
        "responses": {"200": {"description": "ok"}},
    }
    host, _ = _host(tmp_path, yaml.safe_dump(data).encode(), "gitlab")
    host.call(
        "gitlab_set_service",
        {"token": "assembla-token"},
        environ={"GITLAB_API_KEY": "p-0123456789"},
    )
    assert api.seen[-1].body == b"token=assembla-token"
    assert api.seen[-1].headers["Private-Token"] == "p-0123456789"


def test_a_path_parameter_whose_schema_is_a_ref_keeps_its_type_and_constraints(
    tmp_path: Path, api: HostileApi
) -> None:
    """#42.5: resolved before it is narrowed: an integer id is an integer, a pattern holds."""
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Refs", "version": "1"},
        "servers": [{"url": api.url}],
        "components": {
            "schemas": {
                "AlertNumber": {"type": "integer", "minimum": 1},
                "TweetId": {"type": "string", "pattern": "^[0-9]{1,19}$"},
            }
        },
        "paths": {
            "/alerts/{alert_number}/tweets/{id}": {
                "get": {
                    "operationId": "getAlert",
                    "parameters": [
                        {
                            "name": "alert_number",
                            "in": "path",
                            "required": True,
                            "schema": {"$ref": "#/components/schemas/AlertNumber"},
                        },
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"$ref": "#/components/schemas/TweetId"},
                        },
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    from skillpress.runtime.calling.request import CallRefused

    host, _ = _host(tmp_path, yaml.safe_dump(doc).encode(), "refs")
    assert host.call("refs_get_alert", {"alert_number": 42, "id": "1234"}).status == 200
    assert api.seen[-1].path == "/alerts/42/tweets/1234"
    for wrong in (
        {"alert_number": "42", "id": "1"},
        {"alert_number": 0, "id": "1"},
        {"alert_number": 1, "id": "x1"},
    ):
        with pytest.raises(CallRefused):
            host.call("refs_get_alert", wrong)
    assert len(api.seen) == 1


def test_a_raw_body_of_format_byte_takes_a_file_like_one_of_format_binary(
    tmp_path: Path, api: HostileApi
) -> None:
    """#42.11: an application/octet-stream body declared `format: byte` is its bytes: a file."""
    doc = yaml.safe_load(_spec(api.url, {}, []))
    doc["paths"]["/items"]["put"] = {
        "operationId": "upload",
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "byte"}}
            },
        },
        "responses": {"200": {"description": "ok"}},
    }
    import base64

    host, _ = _host(tmp_path, yaml.safe_dump(doc).encode(), "raw")
    content = base64.b64encode(b"\x00\x01payload").decode()
    got = host.call("raw_upload", {"body": {"content_base64": content}})
    assert got.status == 200 and api.seen[-1].body == b"\x00\x01payload"


def test_an_operation_that_takes_another_scheme_is_sent_that_ones_credential(
    tmp_path: Path, api: HostileApi
) -> None:
    # Figma: files take OAuth 2, payments only a PersonalAccessToken in X-Figma-Token; the
    # payments call was sent the OAuth token (the judge: "Security not found")
    schemes = {
        "OAuth2": {"type": "http", "scheme": "bearer"},
        "Personal": {"type": "apiKey", "in": "header", "name": "X-Figma-Token"},
    }
    data = _with_payments(_spec(api.url, schemes, [{"OAuth2": []}]))
    host, files = _host(tmp_path, data, "figma")
    auth = json.loads(files["skill.json"])["auth"]
    assert (auth["scheme"], auth["others"]) == (
        "OAuth2",
        [
            {
                "name": "X-Figma-Token",
                "in": "header",
                "kind": "apiKey",
                "env": "FIGMA_PERSONAL",
                "scheme": "Personal",
            }
        ],
    )
    assert 'credential: "Personal"' in files["get_payments.md"].decode()
    assert "credential:" not in files["list_items.md"].decode()
    environ = {"FIGMA_API_KEY": "oauth-token-1", "FIGMA_PERSONAL": "personal-token-2"}
    host.call("figma_list_items", {}, environ=environ)
    assert api.seen[-1].headers["Authorization"] == "Bearer oauth-token-1"
    assert "X-Figma-Token" not in api.seen[-1].headers
    host.call("figma_get_payments", {}, environ=environ)
    sent = api.seen[-1].headers
    assert sent["X-Figma-Token"] == "personal-token-2" and "Authorization" not in sent
    # a dry run shows where it comes from, never the value
    skill = load_skill(files)
    from skillpress.app.serving.calling import call_setup

    setup = call_setup(skill, None, CallLimits(), None)
    placed = prepare_call(skill.tool("get_payments"), {}, skill.hosts, setup)
    assert placed.shown_request(setup)["headers"]["X-Figma-Token"] == "<from $FIGMA_PERSONAL>"


def test_an_operation_file_cannot_name_a_credential_skill_json_does_not_list(
    tmp_path: Path, api: HostileApi
) -> None:
    from skillpress.runtime.package.model import PackageError

    schemes = {"OAuth2": {"type": "http", "scheme": "bearer"}}
    host, files = _host(tmp_path, _spec(api.url, schemes, [{"OAuth2": []}]), "forged")
    text = (
        files["list_items.md"]
        .decode()
        .replace("operation:\n", 'operation:\n  credential: "Elsewhere"\n', 1)
    )
    forged = {**files, "list_items.md": text.encode()}
    with pytest.raises(PackageError, match="auth.others does not list"):
        load_skill(forged).tool("list_items")


def test_an_agent_skills_export_sends_every_credential_where_the_package_does(
    tmp_path: Path, api: HostileApi
) -> None:
    # the export kept only the header's name: a query key went out as a header, and an
    # operation's own credential made the folder refuse to load
    from skillpress.runtime.interop.contracts import agent_skills_folder

    schemes = {
        "key": {"type": "apiKey", "in": "query", "name": "apikey"},
        "Personal": {"type": "apiKey", "in": "header", "name": "X-Personal"},
    }
    data = _with_payments(_spec(api.url, schemes, [{"key": []}]))
    files = derive_package(data, DeriveOptions(slug="keyed")).files
    folder = agent_skills_folder(load_skill(files), files)
    write_package_dir(folder, tmp_path / "skills" / "keyed")
    host = SkillHost(tmp_path / "skills", limits=CallLimits(retries=0))
    environ = {"KEYED_API_KEY": "q-key-1", "KEYED_PERSONAL": "p-key-2"}
    host.call("keyed_list_items", {}, environ=environ)
    assert api.seen[-1].path == "/items?apikey=q-key-1"
    host.call("keyed_get_payments", {}, environ=environ)
    assert api.seen[-1].headers["X-Personal"] == "p-key-2"
    assert "apikey" not in api.seen[-1].path
