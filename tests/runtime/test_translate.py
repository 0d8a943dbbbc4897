"""Call translation: exact requests for real specs, exact refusals a model can correct from."""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path

import pytest

from skillpress.derive import DeriveOptions, derive_package
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.calling.translate import build_request, idempotency_key
from skillpress.runtime.package.model import AuthHeader, PackageError, Skill, UnknownOperation
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.slash import SlashError, help_text, parse_slash, slash_arguments

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
EXAMPLE = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook-skill"


@cache
def derived(name: str, base_url: str | None = None) -> Skill:
    return load_skill(
        derive_package((SPECS / name).read_bytes(), DeriveOptions(base_url=base_url)).files
    )


@cache
def hollowbrook() -> Skill:
    return load_skill({p.name: p.read_bytes() for p in EXAMPLE.iterdir()})


def request_of(skill: Skill, name: str, args: object) -> dict[str, object]:
    return build_request(skill.tool(name), args, skill.hosts).as_dict()


def test_lists_in_the_query_are_repeated_and_numbers_written_plainly() -> None:
    pets = derived("oai-petstore-expanded.yaml")
    assert request_of(pets, "find_pets", {"tags": ["dog", "cat & mouse"], "limit": 5}) == {
        "method": "GET",
        "url": "http://petstore.swagger.io/api/pets?tags=dog&tags=cat%20%26%20mouse&limit=5",
        "headers": {},
        "body": None,
    }
    assert (
        request_of(pets, "find_pet_by_id", {"id": 42})["url"]
        == "http://petstore.swagger.io/api/pets/42"
    )
    assert request_of(pets, "add_pet", {"name": "Rex", "tag": "dog"}) == {
        "method": "POST",
        "url": "http://petstore.swagger.io/api/pets",
        "headers": {"Content-Type": "application/json"},
        "body": {"name": "Rex", "tag": "dog"},
    }


def test_a_parameter_inside_a_segment_and_a_base_path() -> None:
    twilio = derived("twilio-api-v2010.json")
    req = request_of(twilio, "fetch_account", {"Sid": "AC0123456789abcdef0123456789abcdef"})
    assert (
        req["url"]
        == "https://api.twilio.com/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef.json"
    )
    tool = twilio.tool("fetch_account")
    with pytest.raises(
        CallRefused, match=r"^fetch_account: argument Sid: 'AC(x/){16}' does not match"
    ):
        build_request(tool, {"Sid": "AC" + "x/" * 16}, twilio.hosts)


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("a/b?c#d%e f,g", "a%2Fb%3Fc%23d%25e%20f%2Cg"),
        ("café", "caf%C3%A9"),
        ("...", "..."),
        ("~user-1_2.x", "~user-1_2.x"),
        ("%2e%2e", "%252e%252e"),
    ],
)
def test_path_values_are_encoded_as_one_whole_segment(value: str, segment: str) -> None:
    skill = hollowbrook()
    assert (
        request_of(skill, "get_booking", {"booking_id": value})["url"]
        == f"http://hollowbrook.localhost:8084/bookings/{segment}"
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "argument booking_id is a path segment and cannot be ''"),
        (".", "argument booking_id is a path segment and cannot be '.'"),
        ("..", "argument booking_id is a path segment and cannot be '..'"),
        ("a\nb", "argument booking_id is a path segment and cannot contain control characters"),
        ("a\x7fb", "argument booking_id is a path segment and cannot contain control characters"),
    ],
)
def test_path_values_that_would_move_the_path_are_refused(value: str, reason: str) -> None:
    skill = hollowbrook()
    with pytest.raises(CallRefused) as refused:
        build_request(skill.tool("get_booking"), {"booking_id": value}, skill.hosts)
    assert refused.value.reason == reason


def test_refusals_say_what_to_change() -> None:
    skill = hollowbrook()
    tool = skill.tool("create_booking")
    good = {
        "room_id": "oak",
        "guest_name": "Ada",
        "arrival": "2026-12-24",
        "departure": "2026-12-27",
    }
    cases = [
        (
            {**good, "guests": "two"},
            "create_booking: argument guests: 'two' is not of type 'integer'; nothing was sent",
        ),
        (
            {**good, "room": "oak"},
            "create_booking: does not take 'room'; it takes room_id (string, required), guest_name (string, required), arrival (string, required), departure (string, required), guests (integer), notes (string)",
        ),
        (
            {"room_id": "oak"},
            "create_booking: missing required arguments guest_name (string), arrival (string), departure (string); nothing was sent",
        ),
        (
            ["oak"],
            "create_booking: arguments must be a JSON object, not list; it takes room_id (string, required), guest_name (string, required), arrival (string, required), departure (string, required), guests (integer), notes (string)",
        ),
    ]
    for args, message in cases:
        with pytest.raises(CallRefused) as refused:
            build_request(tool, args, skill.hosts)
        assert str(refused.value) == message
    pets = derived("oai-petstore-expanded.yaml")
    with pytest.raises(
        CallRefused,
        match=r"^find_pets: argument limit: 2.5 is not of type 'integer'; nothing was sent$",
    ):
        build_request(pets.tool("find_pets"), {"limit": 2.5}, pets.hosts)
    with pytest.raises(
        CallRefused,
        match=r"^find_pets: argument tags\[1\]: 3 is not of type 'string'; nothing was sent$",
    ):
        build_request(pets.tool("find_pets"), {"tags": ["a", 3]}, pets.hosts)


def test_tools_load_by_tool_name_and_by_manifest_name() -> None:
    skill = hollowbrook()
    assert skill.tool("hollowbrook_get_booking") is skill.tool("get_booking")
    with pytest.raises(
        UnknownOperation,
        match=r"^hollowbrook has no operation or tool named 'create_bookings'; did you mean create_booking",
    ):
        skill.tool("create_bookings")
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Feeds", "version": "1"},
        "servers": [{"url": "https://feeds.example"}],
        "paths": {
            "/feeds": {
                "post": {
                    "operationId": "createFeed",
                    "requestBody": {
                        "content": {
                            "application/xml": {
                                "schema": {"type": "object", "properties": {"title": {}}}
                            }
                        }
                    },
                    "responses": {},
                }
            }
        },
    }
    feeds = load_skill(derive_package(json.dumps(spec).encode()).files)
    with pytest.raises(
        UnknownOperation,
        match=r"^create_feed is not a tool: its request body is application/xml with fields skillpress does not write in that type; skillpress cannot send it \(its file, create_feed.md, spells out the request for an HTTP client of your own\)$",
    ):
        feeds.tool("create_feed")


def test_requests_go_only_to_declared_hosts() -> None:
    airflow = derived("airflow-v1.yaml")  # its server is a path: /api/v1
    tool = airflow.tool("get_dag")
    assert tool.declaration.url == "/api/v1/dags/{dag_id}"
    with pytest.raises(
        CallRefused,
        match=r"^get_dag: the skill declares no host: its URL is the path /api/v1/dags/\{dag_id\}, and a call cannot name one",
    ):
        build_request(tool, {"dag_id": "etl"}, airflow.hosts)
    files = derive_package((SPECS / "airflow-v1.yaml").read_bytes()).files
    based = load_skill(files, base_url="https://airflow.internal:8080")
    assert based.hosts == frozenset({"airflow.internal:8080"})
    assert (
        request_of(based, "get_dag", {"dag_id": "etl"})["url"]
        == "https://airflow.internal:8080/api/v1/dags/etl"
    )
    # A base URL the caller gives moves a declared host too (a mock, a proxy, a region): the
    # skill's own base is replaced, and it is the only host a request may go to
    pets_files = derive_package((SPECS / "oai-petstore-expanded.yaml").read_bytes()).files
    moved = load_skill(pets_files, base_url="http://127.0.0.1:4010")
    assert moved.hosts == frozenset({"127.0.0.1:4010"})
    assert request_of(moved, "find_pet_by_id", {"id": 1})["url"] == "http://127.0.0.1:4010/pets/1"
    pets = load_skill(pets_files)
    assert (
        request_of(pets, "find_pet_by_id", {"id": 1})["url"]
        == "http://petstore.swagger.io/api/pets/1"
    )
    # The host list is checked after building, whatever the declaration says.
    with pytest.raises(CallRefused, match=r"not one of the skill's hosts"):
        build_request(pets.tool("find_pet_by_id"), {"id": 1}, frozenset({"other.test"}))
    with pytest.raises(PackageError, match=r"base URL 'ftp://x' is not an absolute http\(s\) URL"):
        load_skill(files, base_url="ftp://x")


def test_the_idempotency_key_is_a_function_of_method_url_and_identity_values() -> None:
    skill = hollowbrook()
    decl = skill.tool("create_booking").declaration
    args = {
        "room_id": "oak",
        "guest_name": "Ada",
        "arrival": "2026-12-24",
        "departure": "2026-12-27",
    }
    key = idempotency_key(decl, args)
    # Pinned: a change to how keys are derived would make retries across versions double-book.
    assert key == "7b59d81c5cf903755124aa7185d7601aa20dafd44b538d25b0b9f59f3f5aefb7"
    assert key == idempotency_key(decl, dict(reversed(args.items())))
    assert key == idempotency_key(decl, {**args, "notes": "late arrival", "guests": 2})
    assert key != idempotency_key(decl, {**args, "departure": "2026-12-28"})
    assert idempotency_key(skill.tool("get_booking").declaration, {"booking_id": "b"}) is None
    headers = dict(build_request(skill.tool("create_booking"), args, skill.hosts).headers)
    assert headers["Idempotency-Key"] == key


def test_credentials_come_from_the_named_variable_in_the_header_the_skill_names() -> None:
    env = {"K": "abc123", "U": "ada:pw"}
    assert Credential(AuthHeader("X-Api-Key"), "K").header_value(env) == "abc123"
    assert (
        Credential(AuthHeader("Authorization", "bearer"), "K").header_value(env) == "Bearer abc123"
    )
    assert (
        Credential(AuthHeader("Authorization", "basic"), "U").header_value(env) == "Basic YWRhOnB3"
    )
    assert Credential(AuthHeader("Authorization", "bearer"), "MISSING").header_value(env) is None
    assert Credential(AuthHeader("X-Api-Key"), "K").placeholder() == {"X-Api-Key": "<from $K>"}
    # RFC 7617: a key alone is the user name with no password (Stripe's `sk_test_123:`), and a
    # value read from a file keeps no line end
    stripe = {"S": "sk_test_123\r\n", "B": "  Basic YWRhOnB3\n", "T": "tok\n"}
    basic = Credential(AuthHeader("Authorization", "basic"), "S")
    assert basic.header_value(stripe) == "Basic c2tfdGVzdF8xMjM6"
    assert base64.b64decode("c2tfdGVzdF8xMjM6") == b"sk_test_123:"
    assert Credential(AuthHeader("Authorization", "basic"), "B").header_value(stripe) == (
        "Basic YWRhOnB3"
    )
    assert Credential(AuthHeader("Authorization", "bearer"), "T").header_value(stripe) == (
        "Bearer tok"
    )


def test_a_spec_offering_basic_and_bearer_is_derived_as_bearer_and_says_what_the_key_holds() -> (
    None
):
    from skillpress.derive import derive_package

    stripe = derive_package(SPECS.joinpath("stripe.json").read_bytes())
    assert (stripe.manifest.auth.kind, stripe.manifest.auth.scheme) == ("bearer", "bearerAuth")
    assert (
        "The credential is attached for you (a token, sent as `Authorization: Bearer <token>`);"
        " never send one in an argument."
    ) in stripe.files["body.md"].decode()
    twilio = derive_package(SPECS.joinpath("twilio-insights-v2.json").read_bytes())
    assert twilio.manifest.auth.kind == "basic"
    assert (
        "(`user:password`, or an API key alone as the user name, sent base64-encoded as"
        " `Authorization: Basic …`)"
    ) in twilio.files["body.md"].decode()


def test_slash_parsing() -> None:
    skill = hollowbrook()
    assert parse_slash('/create_booking {"a": 1}').name == "create_booking"
    assert (
        parse_slash("/help").is_help and parse_slash("/help get_booking").raw_args == "get_booking"
    )
    with pytest.raises(SlashError):
        parse_slash("create_booking {}")
    assert slash_arguments(skill.tool("get_booking"), "bk-1") == {"booking_id": "bk-1"}
    assert slash_arguments(skill.tool("get_booking"), '{"booking_id": "bk-2"}') == {
        "booking_id": "bk-2"
    }
    with pytest.raises(
        CallRefused,
        match=r"plain text fills an operation's one required argument, and this one has 4",
    ):
        slash_arguments(skill.tool("create_booking"), "oak for Ada")
    with pytest.raises(CallRefused, match=r"arguments are not valid JSON"):
        slash_arguments(skill.tool("create_booking"), '{"room_id": }')
    listing = help_text(skill)
    assert (
        listing.splitlines()[0]
        == "Hollowbrook Guesthouse (hollowbrook): 5 of 5 operations are tools"
    )
    assert "  /create_booking      POST /bookings" in listing
    one = help_text(skill, "get_booking")
    assert json.loads(one.split("schema     ", 1)[1]) == skill.tool("get_booking").schema


def _spec_skill(paths: dict[str, object], swagger2: bool = False) -> Skill:
    if swagger2:
        doc: dict[str, object] = {
            "swagger": "2.0",
            "info": {"title": "Styles", "version": "1"},
            "host": "api.example.test",
            "schemes": ["https"],
            "paths": paths,
        }
    else:
        doc = {
            "openapi": "3.0.3",
            "info": {"title": "Styles", "version": "1"},
            "servers": [{"url": "https://api.example.test"}],
            "paths": paths,
        }
    return load_skill(derive_package(json.dumps(doc).encode()).files)


def _q(name: str, schema: dict[str, object], **how: object) -> dict[str, object]:
    return {"name": name, "in": "query", "schema": schema, **how}


def test_every_query_style_is_written_as_the_spec_says() -> None:
    arr = {"type": "array", "items": {"type": "string"}}
    obj = {"type": "object", "properties": {"status": {"type": "string"}, "n": {"type": "integer"}}}
    skill = _spec_skill(
        {
            "/things": {
                "get": {
                    "operationId": "list",
                    "parameters": [
                        _q("$select", arr, style="form", explode=False),
                        _q("tags", arr),
                        _q("ids", arr, style="spaceDelimited"),
                        _q("codes", arr, style="pipeDelimited"),
                        _q("filter", obj, style="deepObject", explode=True),
                        _q("expand", arr, style="deepObject", explode=True),
                        _q("point", obj, style="form", explode=False),
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        }
    )
    args = {
        "$select": ["id", "displayName"],
        "tags": ["a", "b c"],
        "ids": ["1", "2"],
        "codes": ["x", "y"],
        "filter": {"status": "active", "n": 2},
        "expand": ["customer", "invoice"],
        "point": {"status": "s", "n": 1},
    }
    assert request_of(skill, "list", args)["url"] == (
        "https://api.example.test/things?%24select=id,displayName&tags=a&tags=b%20c&ids=1%202"
        "&codes=x%7Cy&filter%5Bstatus%5D=active&filter%5Bn%5D=2&expand%5B0%5D=customer"
        "&expand%5B1%5D=invoice&point=status,s,n,1"
    )


def test_swagger2_collection_formats_default_to_csv() -> None:
    arr = {"type": "array", "items": {"type": "string"}}
    skill = _spec_skill(
        {
            "/things": {
                "get": {
                    "operationId": "list",
                    "parameters": [
                        {"name": "a", "in": "query", **arr},
                        {"name": "m", "in": "query", "collectionFormat": "multi", **arr},
                        {"name": "t", "in": "query", "collectionFormat": "tsv", **arr},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        swagger2=True,
    )
    url = request_of(skill, "list", {"a": ["1", "2"], "m": ["3", "4"], "t": ["5", "6"]})["url"]
    assert url == "https://api.example.test/things?a=1,2&m=3&m=4&t=5%096"


def _form_op(schema: dict[str, object], encoding: dict[str, object]) -> dict[str, object]:
    media = {"schema": schema, "encoding": encoding}
    return {
        "post": {
            "operationId": "create",
            "requestBody": {"content": {"application/x-www-form-urlencoded": media}},
            "responses": {"200": {"description": "ok"}},
        }
    }


def test_form_bodies_flat_nested_and_lists() -> None:
    schema = {
        "type": "object",
        "required": ["email"],
        "properties": {
            "email": {"type": "string"},
            "balance": {"type": "integer"},
            "address": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "lines": {"type": "array", "items": {"type": "string"}},
                },
            },
            "expand": {"type": "array", "items": {"type": "string"}},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    deep = {"style": "deepObject", "explode": True}
    skill = _spec_skill({"/v1/customers": _form_op(schema, {"address": deep, "expand": deep})})
    sent = request_of(
        skill,
        "create",
        {
            "email": "a+b@example.test",
            "balance": 10,
            "address": {"city": "Köln", "lines": ["1 Main", "Apt 2"]},
            "expand": ["sources"],
            "tags": ["x", "y"],
        },
    )
    assert sent["headers"] == {"Content-Type": "application/x-www-form-urlencoded"}
    assert sent["body"] == (
        "email=a%2Bb%40example.test&balance=10&address%5Bcity%5D=K%C3%B6ln"
        "&address%5Blines%5D%5B0%5D=1%20Main&address%5Blines%5D%5B1%5D=Apt%202"
        "&expand%5B0%5D=sources&tags=x&tags=y"
    )
    from urllib.parse import parse_qsl

    assert parse_qsl(str(sent["body"])) == [
        ("email", "a+b@example.test"),
        ("balance", "10"),
        ("address[city]", "Köln"),
        ("address[lines][0]", "1 Main"),
        ("address[lines][1]", "Apt 2"),
        ("expand[0]", "sources"),
        ("tags", "x"),
        ("tags", "y"),
    ]


def test_an_empty_form_body_on_a_get_is_no_body_and_merge_patch_keeps_its_type() -> None:
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    get = _form_op(empty, {})
    get["get"] = get.pop("post")
    get["get"]["operationId"] = "list"  # type: ignore[index]
    patch = {
        "patch": {
            "operationId": "patch",
            "requestBody": {
                "content": {
                    "application/merge-patch+json": {
                        "schema": {"type": "object", "description": "A patch."}
                    }
                }
            },
            "responses": {"200": {"description": "ok"}},
        }
    }
    skill = _spec_skill({"/things": get, "/things/{id}": patch})
    assert request_of(skill, "list", {})["body"] is None
    sent = request_of(skill, "patch", {"id": "7", "body": {"spec": {"replicas": 2}}})
    assert sent["headers"] == {"Content-Type": "application/merge-patch+json"}
    assert sent["body"] == {"spec": {"replicas": 2}}


def test_a_body_field_named_like_a_parameter_makes_the_body_one_argument() -> None:
    body = {
        "type": "object",
        "properties": {"dryRun": {"type": "string"}, "name": {"type": "string"}},
    }
    op = {
        "delete": {
            "operationId": "delete",
            "parameters": [_q("dryRun", {"type": "string"})],
            "requestBody": {"content": {"application/json": {"schema": body}}},
            "responses": {"200": {"description": "ok"}},
        }
    }
    skill = _spec_skill({"/things/{id}": op})
    tool = skill.tool("delete")
    assert sorted(tool.schema["properties"]) == ["body", "dryRun", "id"]
    sent = request_of(skill, "delete", {"id": "1", "dryRun": "All", "body": {"dryRun": "x"}})
    assert sent["url"] == "https://api.example.test/things/1?dryRun=All"
    assert sent["body"] == {"dryRun": "x"}


def test_a_placeholder_host_is_never_called_until_the_real_one_is_given() -> None:
    package = derive_package((SPECS / "jira.json").read_bytes())
    assert package.manifest.hosts == () and package.manifest.base_url is None
    assert any("is a placeholder (your-domain.atlassian.net)" in w for w in package.warnings)
    bare = load_skill(package.files)
    with pytest.raises(
        CallRefused, match="the skill declares no host: its URL is the path /rest/api/3/user"
    ):
        build_request(bare.tool("remove_user"), {"accountId": "5b10"}, bare.hosts)
    real = load_skill(package.files, base_url="https://acme.atlassian.net")
    sent = build_request(real.tool("remove_user"), {"accountId": "5b10"}, real.hosts)
    assert (sent.method, sent.url) == (
        "DELETE",
        "https://acme.atlassian.net/rest/api/3/user?accountId=5b10",
    )
    given = derive_package(
        (SPECS / "jira.json").read_bytes(), DeriveOptions(base_url="https://acme.atlassian.net")
    )
    assert given.manifest.hosts == ("acme.atlassian.net",)


def test_a_query_parameter_named_like_a_path_parameter_is_offered_under_another_name() -> None:
    skill = _spec_skill(
        {
            "/pods/{name}/proxy/{path}": {
                "get": {
                    "operationId": "proxy",
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "path",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        _q("path", {"type": "string"}),
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        }
    )
    assert sorted(skill.tool("proxy").schema["properties"]) == ["name", "path", "path_query"]
    url = request_of(skill, "proxy", {"name": "p1", "path": "healthz", "path_query": "/x"})["url"]
    assert url == "https://api.example.test/pods/p1/proxy/healthz?path=%2Fx"


def test_what_aws_style_specs_write_into_paths_and_names_still_loads_and_calls() -> None:
    ok = {"200": {"description": "ok"}}
    path_arn = {"name": "arn", "in": "path", "required": True, "schema": {"type": "string"}}
    skill = _spec_skill(
        {
            "/?Action=ListThings": {
                "get": {
                    "operationId": "listThings",
                    "parameters": [_q("MaxItems", {"type": "string"})],
                    "responses": ok,
                }
            },
            "/tags/{arn}#tagKeys": {
                "delete": {
                    "operationId": "untag",
                    "parameters": [path_arn, _q("tagKeys", {"type": "string"})],
                    "responses": ok,
                }
            },
            "/odd": {
                "get": {
                    "operationId": "odd",
                    "parameters": [
                        _q(n, {"type": "string"})
                        for n in ("ip address", "{field_name}", "filter[name]")
                    ],
                    "responses": ok,
                }
            },
        }
    )
    assert request_of(skill, "list_things", {"MaxItems": "5"})["url"] == (
        "https://api.example.test/?MaxItems=5&Action=ListThings"
    )
    assert request_of(skill, "untag", {"arn": "a:b", "tagKeys": "k"})["url"] == (
        "https://api.example.test/tags/a%3Ab?tagKeys=k"
    )
    assert sorted(skill.tool("odd").schema["properties"]) == [
        "field_name",
        "filter[name]",
        "ip_address",
    ]
    url = request_of(
        skill, "odd", {"ip_address": "1.2.3.4", "field_name": "x", "filter[name]": "y"}
    )["url"]
    assert (
        url
        == "https://api.example.test/odd?ip%20address=1.2.3.4&%7Bfield_name%7D=x&filter%5Bname%5D=y"
    )
    with pytest.raises(
        UnknownOperation, match="is not a tool: TRACE is not a method skillpress sends"
    ):
        _spec_skill(
            {
                "/t": {"trace": {"operationId": "traceIt", "responses": ok}},
                "/ok": {"get": {"operationId": "ok", "responses": ok}},
            }
        ).tool("trace_it")
