"""The derivation rules, each on a small document written for it (exact outputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillpress.derive import DeriveOptions, derive_package
from skillpress.format.declaration import HEADER_VALUE_PATTERN
from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.interop.tool_lists import package_tools
from skillpress.runtime.package.skill import load_skill

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"


def doc(paths: dict[str, Any], schemas: dict[str, Any] | None = None, **extra: Any) -> bytes:
    d = {
        "openapi": "3.0.3",
        "info": {"title": "Rules", "version": "1"},
        "servers": [{"url": "https://rules.example/v1"}],
        "paths": paths,
        "components": {"schemas": schemas or {}},
        **extra,
    }
    return json.dumps(d).encode()


def tools_of(data: bytes) -> dict[str, dict[str, Any]]:
    package = derive_package(data)
    return {t["name"]: t["input_schema"] for t in package_tools(package.files, "anthropic")}


def test_translation_merges_allof_nullable_and_drops_what_is_not_sent() -> None:
    schemas = {
        "Base": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "id": {"type": "integer", "readOnly": True},
                "name": {"type": "string", "example": "Rex", "xml": {"name": "n"}},
            },
        },
        "Pet": {
            "allOf": [
                {"$ref": "#/components/schemas/Base"},
                {
                    "type": "object",
                    "properties": {
                        "tag": {"type": "string", "nullable": True},
                        "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                    },
                },
            ]
        },
    }
    paths = {
        "/pets": {
            "post": {
                "operationId": "addPet",
                "parameters": [
                    {
                        "name": "X-Trace",
                        "in": "header",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    }
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    }
    schema = tools_of(doc(paths, schemas))["rules_add_pet"]
    assert schema == {
        "type": "object",
        "properties": {
            "X-Trace": {"type": "string", "minLength": 1, "pattern": HEADER_VALUE_PATTERN},
            "name": {"type": "string"},
            "tag": {"type": ["string", "null"]},
            "age": {"type": "integer", "exclusiveMinimum": 0},
        },
        "required": ["X-Trace", "name"],
        "additionalProperties": False,
    }


def test_named_components_become_shared_types() -> None:
    schemas = {
        "Tag": {"type": "object", "properties": {"label": {"type": "string"}}},
        "Pet": {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}}
            },
        },
    }
    paths = {
        "/pets": {
            "post": {
                "operationId": "addPet",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    }
                },
                "responses": {},
            }
        }
    }
    package = derive_package(doc(paths, schemas))
    assert json.loads(package.files["types.json"]) == {
        "Tag": {"type": "object", "properties": {"label": {"type": "string"}}}
    }
    assert '"items": {"$ref": "#/types/Tag"}' in package.files["add_pet.md"].decode()


def test_operations_that_stay_prose_and_why() -> None:
    big = {
        "type": "object",
        "properties": {f"f{i}": {"type": "string", "description": "d" * 300} for i in range(100)},
    }
    huge = {
        "type": "object",
        "properties": {f"field_{i}": {"type": "integer"} for i in range(2000)},
    }
    paths = {
        "/upload": {
            "post": {
                "operationId": "upload",
                "requestBody": {"content": {"multipart/form-data": {"schema": {"type": "object"}}}},
                "responses": {},
            }
        },
        "/list": {
            "put": {
                "operationId": "putList",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "array", "items": {"type": "string"}}
                        }
                    }
                },
                "responses": {},
            }
        },
        "/big": {
            "post": {
                "operationId": "big",
                "requestBody": {"content": {"application/json": {"schema": big}}},
                "responses": {},
            }
        },
        "/huge": {
            "post": {
                "operationId": "huge",
                "requestBody": {"content": {"application/json": {"schema": huge}}},
                "responses": {},
            }
        },
        "/ok": {"get": {"operationId": "ok", "responses": {}}},
    }
    package = derive_package(doc(paths))
    reasons = {op["name"]: op["not_tool_reason"] for op in package.manifest.to_dict()["operations"]}
    assert reasons == {
        "upload": "its multipart body is not an object of fields",
        "put_list": None,  # an array body: one argument, `body`
        "big": None,  # shortened to fit, and the file says so
        "huge": None,  # never left out for its size: its body is one argument
        "ok": None,
    }
    huge_tool = load_skill(package.files).tool("huge")
    assert huge_tool.declaration.body_arg == "body"
    assert huge_tool.schema["properties"]["body"]["type"] == "object"
    sent = build_request(huge_tool, {"body": {"field_7": 7}}, frozenset({"rules.example"}))
    assert sent.body == b'{"field_7":7}'
    assert (
        "the body is one argument, `body`, its fields in this file); this file describes every"
        " field." in package.files["huge.md"].decode()
    )
    big = package.files["big.md"].decode()
    assert (
        "Its argument schema is shortened to fit the tool budget (descriptions shortened);"
        " this file describes every field." in big
    )
    big_tool = load_skill(package.files).tool("big")
    assert len(json.dumps(big_tool.schema, separators=(",", ":"))) <= 24 * 1024
    assert all(len(s["description"]) <= 120 for s in big_tool.schema["properties"].values())
    assert package.manifest.to_dict()["stats"]["tools_share"] == "most"
    body = package.files["body.md"].decode()
    assert "Most of them (4) are tools" in body
    put_list = load_skill(package.files).tool("put_list")
    assert put_list.schema["properties"]["body"] == {"type": "array", "items": {"type": "string"}}
    sent = build_request(put_list, {"body": ["a", "b"]}, frozenset({"rules.example"}))
    assert (sent.body, sent.headers) == (b'["a","b"]', (("Content-Type", "application/json"),))
    assert "- `upload` — Upload. (not callable here)\n" in body
    upload = package.files["upload.md"].decode()
    assert (
        "Not a tool: skillpress cannot send this request, so there is nothing to load or call here."
        " Whoever has an HTTP client can: `POST https://rules.example/v1/upload`" in upload
    )
    assert not upload.startswith("---"), "an undeclared operation has no operation block"


def test_header_params_are_arguments_sent_as_headers_and_the_credential_never_is() -> None:
    paths = {
        "/items/{id}": {
            "get": {
                "operationId": "getItem",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {
                        "name": "organization-id",
                        "in": "header",
                        "required": True,
                        "description": "Required if Authorization is a JWT token",
                        "schema": {"type": "string"},
                    },
                    {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                    {"name": "Content-Type", "in": "header", "schema": {"type": "string"}},
                    {"name": "X-Tags", "in": "header", "schema": {"type": "array"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                ],
                "responses": {},
            }
        }
    }
    schemes = {"bearer": {"type": "http", "scheme": "bearer"}}
    spec = doc(paths, security=[{"bearer": []}])
    spec = spec.replace(
        b'"schemas": {}', b'"schemas": {}, "securitySchemes": ' + json.dumps(schemes).encode()
    )
    package = derive_package(spec)
    skill = load_skill(package.files)
    tool = skill.tool("get_item")
    assert list(tool.schema["properties"]) == ["id", "organization-id", "X-Tags", "session"]
    assert tool.schema["required"] == ["id", "organization-id"]
    request = build_request(
        tool, {"id": "7", "organization-id": "org-1", "X-Tags": ["a", "b"]}, skill.hosts
    )
    assert request.url == "https://rules.example/v1/items/7"
    assert dict(request.headers) == {"organization-id": "org-1", "X-Tags": "a,b"}
    with_cookie = build_request(
        tool, {"id": "7", "organization-id": "o", "session": "s 1"}, skill.hosts
    )  # a cookie the API reads is an argument too (#42.9)
    assert dict(with_cookie.headers) == {"organization-id": "o", "Cookie": "session=s%201"}
    text = package.files["get_item.md"].decode()
    assert (
        "- `organization-id` (string, required, header) — Required if Authorization is a JWT token"
        in text
    )
    assert (
        "The credential, never an argument: the tool attaches it in the `Authorization` header,"
        " so these are not sent:\n- `Authorization` (string, optional, header)"
    ) in text
    assert "Set by the tool or not sent:\n- `Content-Type` (string, optional, header)" in text
    assert "header: [organization-id, X-Tags]" in text


def test_long_operation_ids_give_unique_tool_names_within_64() -> None:
    package = derive_package((SPECS / "adyen-balanceplatform-v2.yaml").read_bytes())
    tools = [op["tool"] for op in package.manifest.to_dict()["operations"] if op["tool"]]
    assert len(tools) == len(set(tools)) == 91
    assert max(len(t) for t in tools) <= 64
    assert any(len(op["operation_id"]) > 64 for op in package.manifest.to_dict()["operations"])


def test_auth_header_comes_from_the_scheme_most_operations_use() -> None:
    blockfrost = derive_package((SPECS / "blockfrost.yaml").read_bytes()).manifest.to_dict()["auth"]
    assert blockfrost["header"] == "project_id" and blockfrost["kind"] == "apiKey"
    airflow = derive_package(
        (SPECS / "airflow-core-v2-fastapi.yaml").read_bytes()
    ).manifest.to_dict()["auth"]
    assert airflow["header"] == "Authorization"
    security = derive_package(
        (SPECS / "oai-security-schemes.yaml").read_bytes()
    ).manifest.to_dict()["auth"]
    # OAuth 2 serves it: the access token, obtained outside, goes in Authorization as a bearer token
    assert (security["header"], security["kind"], security["scheme"]) == (
        "Authorization",
        "bearer",
        "OAuth2",
    )
    assert security["operations_unservable"] == 0 and security["unservable_kinds"] == ["mutualTLS"]


def test_swagger2_is_normalised() -> None:
    package = derive_package((SPECS / "oai-petstore.swagger2.yaml").read_bytes())
    assert package.manifest.to_dict()["base_url"] == "http://petstore.swagger.io/v1"
    assert [
        (o["name"], o["method"], o["path"], o["tool"])
        for o in package.manifest.to_dict()["operations"]
    ] == [
        ("list_pets", "GET", "/pets", "petstore_list_pets"),
        ("create_pets", "POST", "/pets", "petstore_create_pets"),
        ("show_pet_by_id", "GET", "/pets/{petId}", "petstore_show_pet_by_id"),
    ]


def test_relative_server_resolved_against_given_url_or_reported() -> None:
    spec = (SPECS / "airflow-v1.yaml").read_bytes()
    missing = derive_package(spec)
    assert missing.manifest.to_dict()["base_url"] is None
    assert missing.warnings == [
        "server URL '/api/v1' is relative or templated: pass --base-url to resolve it"
    ]
    given = derive_package(spec, DeriveOptions(base_url="https://airflow.example.com/"))
    assert given.manifest.to_dict()["base_url"] == "https://airflow.example.com/api/v1"
    assert given.manifest.to_dict()["hosts"] == ["airflow.example.com"]


def test_tags_failures_are_detected_and_reported() -> None:
    assert derive_package((SPECS / "discord.json").read_bytes()).manifest.to_dict()[
        "categorization"
    ] == {
        "mode": "categories",
        "source": "paths",
        "tag_failure": "no_tags",
    }
    assert (
        derive_package((SPECS / "adyen-fund-v6.json").read_bytes()).manifest.to_dict()[
            "categorization"
        ]["tag_failure"]
        == "single_tag"
    )
    assert (
        derive_package((SPECS / "twilio-insights-v2.json").read_bytes()).manifest.to_dict()[
            "categorization"
        ]["tag_failure"]
        == "tag_per_operation"
    )
    harbor = derive_package((SPECS / "harbor.swagger2.yaml").read_bytes())
    assert harbor.manifest.to_dict()["categorization"] == {
        "mode": "categories",
        "source": "tags",
        "tag_failure": None,
    }
    for cat in harbor.manifest.to_dict()["categories"]:
        assert f"- `{cat['name']}` — " in harbor.files["body.md"].decode()


def test_a_required_field_the_object_may_not_have_is_not_required() -> None:
    screens = {
        "type": "object",
        "additionalProperties": False,
        "required": ["defaultScreen"],
        "properties": {"default": {"type": "integer"}},
    }
    body = {"type": "object", "required": ["screens"], "properties": {"screens": screens}}
    paths = {
        "/screens": {
            "post": {
                "operationId": "createScreens",
                "requestBody": {"content": {"application/json": {"schema": body}}},
                "responses": {},
            }
        }
    }
    tool = load_skill(derive_package(doc(paths)).files).tool("create_screens")
    assert tool.schema["properties"]["screens"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"default": {"type": "integer"}},
    }
    assert tool.validator.is_valid({"screens": {"default": 3}})


def test_a_query_parameter_declared_with_json_content_is_sent_as_json_under_its_name() -> None:
    # Directus `filter`: `?filter={"status":{"_eq":"published"}}`, never exploded into `?status=…`
    paths = {
        "/items/{collection}": {
            "get": {
                "operationId": "getItems",
                "parameters": [
                    {
                        "name": "collection",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "filter",
                        "in": "query",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                ],
                "responses": {},
            }
        }
    }
    package = derive_package(doc(paths))
    skill = load_skill(package.files)
    request = build_request(
        skill.tool("get_items"),
        {"collection": "articles", "filter": {"status": {"_eq": "published"}}, "limit": 2},
        skill.hosts,
    )
    assert request.url == (
        "https://rules.example/v1/items/articles"
        "?filter=%7B%22status%22%3A%7B%22_eq%22%3A%22published%22%7D%7D&limit=2"
    )
    assert 'style: {"filter": "json"}' in package.files["get_items.md"].decode()


def test_only_the_declared_credential_is_kept_from_the_model_never_a_field_named_token() -> None:
    paths = {
        "/locks/{path}": {  # Files.com: the lock's own token, required
            "delete": {
                "operationId": "deleteLocksPath",
                "parameters": [
                    {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}},
                    {
                        "name": "token",
                        "in": "query",
                        "required": True,
                        "description": "Lock token",
                        "schema": {"type": "string"},
                    },
                    {"name": "api_key", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {},
            }
        },
        "/auth/password/reset": {  # Directus: a one-time token in the body
            "post": {
                "operationId": "passwordReset",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["token", "password"],
                                "properties": {
                                    "token": {
                                        "type": "string",
                                        "description": "One-time use JWT token.",
                                    },
                                    "password": {"type": "string"},
                                },
                            }
                        }
                    }
                },
                "responses": {},
            }
        },
        "/chat.postMessage": {  # Slack: its OAuth token declared again as a parameter
            "post": {
                "operationId": "chatPostMessage",
                "parameters": [
                    {
                        "name": "token",
                        "in": "header",
                        "required": True,
                        "description": "Authentication token. Requires scope: `chat:write`",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "channel",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {},
            }
        },
    }
    schemes = {
        "key": {"type": "apiKey", "in": "query", "name": "api_key"},
        "bearer": {"type": "http", "scheme": "bearer"},
    }
    spec = doc(paths, security=[{"bearer": []}]).replace(
        b'"schemas": {}', b'"schemas": {}, "securitySchemes": ' + json.dumps(schemes).encode()
    )
    tools = tools_of(spec)
    assert list(tools["rules_delete_locks_path"]["properties"]) == ["path", "token"]
    assert tools["rules_delete_locks_path"]["required"] == ["path", "token"]
    assert list(tools["rules_password_reset"]["properties"]) == ["token", "password"]
    assert list(tools["rules_chat_post_message"]["properties"]) == ["channel"]
    skill = load_skill(derive_package(spec).files)
    request = build_request(
        skill.tool("delete_locks_path"), {"path": "a/b.txt", "token": "lk-1"}, skill.hosts
    )
    assert request.url == "https://rules.example/v1/locks/a%2Fb.txt?token=lk-1"


UPLOADS = {
    "/folders/{path}": {  # Files.com: plain fields in a multipart body
        "post": {
            "operationId": "postFoldersPath",
            "parameters": [
                {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "requestBody": {
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "mkdir_parents": {"type": "boolean"},
                                "attachment": {"type": "string", "format": "binary"},
                                "tags": {"type": "array", "items": {"type": "string"}},
                            },
                        }
                    }
                }
            },
            "responses": {},
        }
    },
    "/releases/{id}/assets": {  # GitHub release assets, Box uploads: the body is the file
        "post": {
            "operationId": "uploadAsset",
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "requestBody": {
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
                }
            },
            "responses": {},
        }
    },
}


def _parts(body: bytes, content_type: str) -> list[tuple[str, str | None, str, bytes]]:
    """A multipart body read back by the standard library's MIME parser (the oracle):
    (name, filename, content type, bytes) per part."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    return [
        (
            str(part.get_param("name", header="content-disposition")),
            part.get_filename(),
            part.get_content_type(),
            part.get_payload(decode=True),
        )
        for part in message.iter_parts()
    ]


def test_multipart_fields_and_files_are_sent_and_a_raw_body_is_the_file(tmp_path: Path) -> None:
    from skillpress.runtime.calling.files import local_files

    package = derive_package(doc(UPLOADS))
    skill = load_skill(package.files)
    folder = skill.tool("post_folders_path")
    assert folder.declaration.files == ("attachment",)
    (tmp_path / "notes.txt").write_bytes(b"first line\r\n--not a boundary\r\n")
    files = local_files(tmp_path)
    request = build_request(
        folder,
        {
            "path": "docs",
            "mkdir_parents": True,
            "attachment": {"path": "notes.txt"},
            "tags": ["a", "b"],
        },
        skill.hosts,
        files,
    )
    content_type = dict(request.headers)["Content-Type"]
    assert content_type.startswith("multipart/form-data; boundary=skillpress-")
    assert request.body is not None
    assert _parts(request.body, content_type) == [
        ("mkdir_parents", None, "text/plain", b"true"),
        ("attachment", "notes.txt", "text/plain", b"first line\r\n--not a boundary\r\n"),
        ("tags", None, "text/plain", b"a"),
        ("tags", None, "text/plain", b"b"),
    ]
    again = build_request(
        folder,
        {
            "path": "docs",
            "mkdir_parents": True,
            "attachment": {"path": "notes.txt"},
            "tags": ["a", "b"],
        },
        skill.hosts,
        files,
    )
    assert again == request  # the same call, the same bytes (the boundary comes from the content)
    assert request.as_dict()["body"]["attachment"] == {
        "file": "notes.txt",
        "bytes": 30,
        "content_type": "text/plain",
    }
    asset = skill.tool("upload_asset")
    raw = build_request(
        asset,
        {"id": "9", "body": {"content_base64": "AAEC", "filename": "x.bin"}},
        skill.hosts,
    )
    assert (raw.body, dict(raw.headers)["Content-Type"]) == (
        b"\x00\x01\x02",
        "application/octet-stream",
    )
    text = package.files["upload_asset.md"].decode()
    assert 'Files (`body`): give each as `{"path": "report.pdf"}`' in text
    # never a file outside the folder the caller allows, a link out of it, or past the cap
    outside = tmp_path.parent / "secret.txt"
    outside.write_text("no")
    (tmp_path / "link.txt").symlink_to(outside)
    for path, why in [
        ("../secret.txt", "is outside"),
        (str(outside), "is outside"),
        ("link.txt", "is outside"),
        ("missing.txt", "no such file"),
    ]:
        with pytest.raises(CallRefused, match=f"argument body: .*{why}"):
            build_request(asset, {"id": "9", "body": {"path": path}}, skill.hosts, files)
    with pytest.raises(CallRefused, match="notes.txt is 30 bytes, over the 10 a call may send"):
        build_request(
            asset,
            {"id": "9", "body": {"path": "notes.txt"}},
            skill.hosts,
            local_files(tmp_path, 10),
        )
    with pytest.raises(CallRefused, match="no local file may be read here; give content_base64"):
        build_request(asset, {"id": "9", "body": {"path": "notes.txt"}}, skill.hosts)
    with pytest.raises(CallRefused, match="give exactly one of path or content_base64"):
        build_request(
            asset, {"id": "9", "body": {"path": "a", "content_base64": "AA=="}}, skill.hosts, files
        )


def test_webhooks_are_listed_as_events_with_their_payload_never_as_tools() -> None:
    package = derive_package((SPECS / "oai-webhook-example.yaml").read_bytes())
    body = package.files["body.md"].decode()
    assert (
        "## Events it sends (webhooks, not tools)\n"
        "It calls a URL of yours with these; each one's payload is in its file, beside this one.\n"
        "- `newPet` (POST). File: event_new_pet.md\n"
    ) in body
    event = package.files["event_new_pet.md"].decode()
    assert event.startswith("# newPet\n")
    assert "It is not a tool: nothing here sends it" in event
    assert "## Payload\napplication/json" in event
    skill = load_skill(package.files)  # the whole publish check
    assert [t.operation for t in skill.tools] == ["list_pets"]


def test_an_enum_with_padded_values_is_shown_exactly() -> None:
    """#42.10: `' no'` is shown as it is sent (quoted), so a reader sends what the API takes."""
    import yaml

    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Pad", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/x": {
                "get": {
                    "operationId": "getX",
                    "parameters": [
                        {
                            "name": "mode",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["yes", " no", " only"]},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    files = derive_package(yaml.safe_dump(doc).encode()).files
    text = files["get_x.md"].decode()
    assert 'one of `yes`, `" no"`, `" only"`' in text


def test_an_enum_of_values_not_of_its_type_is_read_as_that_type() -> None:
    """apptigent: `type: string` with `enum: [true, false]`, required: no value fits, so the
    tool could never be called (the sweep found it, #54.2); what is offered is its type's."""
    body = {
        "type": "object",
        "required": ["lower", "size", "flag", "odd", "privacy"],
        "properties": {
            "privacy": {"type": "integer", "enum": ["0 (Private)", "1 (Public)"]},
            "lower": {"type": "string", "enum": [True, False]},
            "size": {"type": "integer", "enum": ["1", "2", "x"]},
            "flag": {"type": "boolean", "enum": ["true", "false"]},
            "odd": {"type": "string", "enum": [{"a": 1}]},
        },
    }
    op = {
        "post": {
            "operationId": "compare",
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": {"200": {"description": "ok"}},
        }
    }
    props = tools_of(doc({"/compare": op}))["rules_compare"]["properties"]
    assert props["lower"] == {"type": "string", "enum": ["true", "false"]}
    assert props["size"] == {"type": "integer", "enum": [1, 2]}
    assert props["flag"] == {"type": "boolean", "enum": [True, False]}
    assert props["odd"] == {"type": "string"}  # no value of its type: the type alone
    assert props["privacy"] == {"type": "integer", "enum": [0, 1]}  # visualstudio: named codes


def test_a_list_given_an_enum_of_single_values_offers_them_as_its_items() -> None:
    """bbci's `mixin`, visagecloud's `purposes` (converted Swagger 2 lists): `type: array` with
    `enum: [live, promotions]`, which no list equals; the items are what the enum means."""
    mixin = {"type": "array", "items": {"type": "string"}, "enum": ["live", "promotions"]}
    op = {
        "get": {
            "operationId": "highlights",
            "parameters": [{"name": "mixin", "in": "query", "schema": mixin}],
            "responses": {"200": {"description": "ok"}},
        }
    }
    props = tools_of(doc({"/highlights": op}))["rules_highlights"]["properties"]
    assert props["mixin"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["live", "promotions"]},
    }


def test_an_operation_server_on_the_own_host_at_another_path_follows_the_base_url() -> None:
    """GHES: the API at `{protocol}://{hostname}/api/v3`, its setup operations at
    `{protocol}://{hostname}` (the sweep found them sent under /api/v3): given the base URL
    `https://ghe.corp/api/v3`, setup is at `https://ghe.corp/setup/…`."""
    variables = {"hostname": {"default": "HOSTNAME"}, "protocol": {"default": "http"}}
    ok = {"200": {"description": "ok"}}
    paths = {
        "/user": {"get": {"operationId": "me", "responses": ok}},
        "/setup/api/configure": {
            "post": {
                "operationId": "configure",
                "servers": [{"url": "{protocol}://{hostname}", "variables": variables}],
                "responses": ok,
            }
        },
    }
    spec = doc(paths, servers=[{"url": "{protocol}://{hostname}/api/v3", "variables": variables}])
    files = derive_package(spec, DeriveOptions(base_url="https://ghe.corp/api/v3")).files
    urls = {name: _url_of(files[f"{name}.md"]) for name in ("me", "configure")}
    assert urls == {
        "me": "https://ghe.corp/api/v3/user",
        "configure": "https://ghe.corp/setup/api/configure",
    }


def _url_of(operation_file: bytes) -> str:
    import re

    found = re.search(r'^  url: "([^"]+)"$', operation_file.decode(), re.M)
    assert found, operation_file[:300]
    return found[1]


def test_a_parameter_never_empty_says_so_though_its_schema_allows_zero_length() -> None:
    """AWS writes `minLength: 0` (and a pattern `.*`) on query and path parameters; OpenAPI's
    allowEmptyValue is false unless given and a segment is never empty, so the tool says
    minLength 1 (the sweep's judge found `next-token=` sent, #54.2); an AWS client token is an
    idempotency token, an argument, never a credential read from the environment."""
    loose = {"type": "string", "minLength": 0, "pattern": ".*"}
    op = {
        "get": {
            "operationId": "listBans",
            "parameters": [
                {"name": "channel", "in": "path", "required": True, "schema": loose},
                {"name": "next-token", "in": "query", "schema": loose},
                {"name": "empty-ok", "in": "query", "allowEmptyValue": True, "schema": loose},
                {"name": "X-Amzn-Client-Token", "in": "header", "schema": {"type": "string"}},
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }
    props = tools_of(doc({"/channels/{channel}/bans": op}))["rules_list_bans"]["properties"]
    assert props["channel"]["minLength"] == props["next-token"]["minLength"] == 1
    assert props["empty-ok"]["minLength"] == 0
    assert props["X-Amzn-Client-Token"] == {
        "type": "string",
        "minLength": 1,
        "pattern": HEADER_VALUE_PATTERN,
    }


def test_a_path_that_names_a_parameter_twice_stays_prose_with_why() -> None:
    """Azure Stack's `…/resourceGroups/System.{location}/…/fabricLocations/{location}/…`: the
    runtime loads no operation whose URL names a parameter twice, so derive makes it no tool
    and says why (the sweep found it unloadable, #54)."""
    twice = "/groups/System.{location}/fabricLocations/{location}/results"
    op = {
        "get": {
            "operationId": "getResults",
            "parameters": [{"name": "location", "in": "path", "required": True}],
            "responses": {"200": {"description": "ok"}},
        }
    }
    files = derive_package(
        doc({twice: op, "/other": {"get": {**op["get"], "operationId": "o", "parameters": []}}})
    ).files
    meta = json.loads(files["skill.json"])
    (prose,) = [o for o in meta["operations"] if o["name"] == "get_results"]
    assert "tool" not in prose or not prose["tool"]
    assert "its path names the parameter {location} twice" in files["get_results.md"].decode()
    load_skill(files)  # what derive writes, the runtime loads


def test_a_parameter_templated_in_the_paths_query_is_that_query_parameter() -> None:
    """weatherbit writes `/alerts?lat={lat}&lon={lon}` with lat and lon declared `in: path`:
    they are the query's `lat` and `lon`, arguments the model gives, not the text `{lat}` sent
    on every call (the sweep's judge found it, #54.2)."""
    op = {
        "get": {
            "operationId": "getAlerts",
            "parameters": [
                {"name": "lat", "in": "path", "required": True, "schema": {"type": "number"}},
                {"name": "lon", "in": "path", "required": True, "schema": {"type": "number"}},
                {"name": "key", "in": "query", "schema": {"type": "string"}},
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }
    files = derive_package(doc({"/alerts?lat={lat}&lon={lon}&units=M": op})).files
    skill = load_skill(files)
    tool = skill.tool("get_alerts")
    assert sorted(tool.schema["required"]) == ["lat", "lon"]
    request = build_request(tool, {"lat": 1.5, "lon": -2, "key": "k"}, skill.hosts)
    assert request.url == "https://rules.example/v1/alerts?lat=1.5&lon=-2&key=k&units=M"


def test_a_path_served_at_a_stand_in_host_of_yours_stays_prose_with_why() -> None:
    """NDHM's HIP API: the document's server is the gateway, some paths are served by the
    HIP's own server (`https://your-hrp-server.com`, a stand-in). Sent to the gateway they would
    reach the wrong party (the sweep's judge found ten): derive makes them no tool and says why,
    with or without a base URL given; a stand-in the document's own server shares waits for the
    base URL as before."""
    ok = {"200": {"description": "ok"}}
    paths = {
        "/v0.5/heartbeat": {"get": {"operationId": "heartbeat", "responses": ok}},
        "/v0.5/consents/hip/notify": {
            "servers": [{"url": "https://your-hrp-server.com"}],
            "post": {"operationId": "hipNotify", "responses": ok},
        },
        "/v0.5/links/link/on-init": {
            "post": {
                "operationId": "onInit",
                "servers": [
                    {"url": "https://{host}", "variables": {"host": {"default": "your-hip.in"}}}
                ],
                "responses": ok,
            }
        },
    }
    for given in (None, "https://dev.ndhm.gov.in/gateway"):
        files = derive_package(
            doc(paths, servers=[{"url": "https://dev.ndhm.gov.in/gateway"}]),
            DeriveOptions(base_url=given),
        ).files
        entries = {o["name"]: o for o in json.loads(files["skill.json"])["operations"]}
        assert entries["heartbeat"].get("tool")
        for name, url in (
            ("hip_notify", "https://your-hrp-server.com"),
            ("on_init", "https://your-hip.in"),
        ):
            assert not entries[name].get("tool"), name
            assert (
                f"its server {url} stands in for a host of yours"
                in entries[name]["not_tool_reason"]
            )
        load_skill(files)
    # the document's own stand-in: every operation is a tool, sent where the base URL says
    own = [{"url": "https://your-hrp-server.com"}]
    files = derive_package(
        doc(paths, servers=own), DeriveOptions(base_url="https://hrp.example.in")
    ).files
    entries = {o["name"]: o for o in json.loads(files["skill.json"])["operations"]}
    assert entries["hip_notify"].get("tool") and not entries["on_init"].get("tool")
    assert _url_of(files["hip_notify.md"]) == "https://hrp.example.in/v0.5/consents/hip/notify"


def test_a_required_name_no_allof_part_describes_stays_required() -> None:
    """Codat's bank transaction lines: allOf parts describe `amount` and `id` (readOnly), and
    require `date`, which no part describes. A required readOnly name is never sent, so not
    required; the undescribed `date` still is (derive dropped it: the judge found the request
    missing it)."""
    schemas = {
        "Line": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "readOnly": True},
                "amount": {"type": "number"},
            },
        },
        "Dated": {
            "allOf": [{"$ref": "#/components/schemas/Line"}, {"required": ["id", "date", "amount"]}]
        },
    }
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Dated"}}}}
    op = {
        "post": {
            "operationId": "push",
            "requestBody": body,
            "responses": {"200": {"description": "ok"}},
        }
    }
    tool = tools_of(doc({"/lines": op}, schemas))["rules_push"]
    assert tool["required"] == ["amount", "date"] and "id" not in tool["properties"]
    assert "declares no type" in tool["properties"]["date"]["description"]


def test_schemas_that_admit_no_value_as_written_are_offered_as_meant() -> None:
    """Three spec slips the sweep's judge found, each making a tool no call could satisfy:
    a oneOf of one type told apart by formats alone (Shutterstock's asset id: every string is
    valid under both, so under oneOf under neither) is offered as anyOf; a pattern written as
    a JavaScript literal (Sinao's `/^[0-9]{5}$/`) as its inside, and one with a flag JSON
    Schema cannot say (`/…/i`) not at all; a property made readOnly by a part of its allOf
    (DigitalOcean's `connection`) is never an argument."""
    from jsonschema import Draft202012Validator

    ids = {
        "oneOf": [
            {"type": "string", "format": "asset-id"},
            {"type": "string", "format": "upload-id"},
        ]
    }
    numbers = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    apart = {"oneOf": [{"type": "integer"}, {"type": "string"}]}
    schemas = {
        "Conn": {"type": "object", "properties": {"host": {"type": "string"}}},
        "Pool": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "connection": {
                    "allOf": [{"$ref": "#/components/schemas/Conn"}, {"readOnly": True}]
                },
            },
        },
    }
    params = [
        {"name": "asset", "in": "query", "required": True, "schema": ids},
        {"name": "size", "in": "query", "schema": numbers},
        {"name": "key", "in": "query", "schema": apart},
        {"name": "nic", "in": "query", "schema": {"type": "string", "pattern": "/^[0-9]{5}$/"}},
        {"name": "org", "in": "query", "schema": {"type": "string", "pattern": "/^.*[a-z]+.*$/i"}},
        {"name": "plain", "in": "query", "schema": {"type": "string", "pattern": "^/v[0-9]+/$"}},
    ]
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pool"}}}}
    op = {
        "post": {
            "operationId": "suggest",
            "parameters": params,
            "requestBody": body,
            "responses": {"200": {"description": "ok"}},
        }
    }
    tool = tools_of(doc({"/keywords": op}, schemas))["rules_suggest"]
    props = tool["properties"]
    assert "anyOf" in props["asset"] and "oneOf" not in props["asset"]
    assert "anyOf" in props["size"] and "oneOf" in props["key"]
    assert props["nic"]["pattern"] == "^[0-9]{5}$" and "pattern" not in props["org"]
    assert props["plain"]["pattern"] == "^/v[0-9]+/$"  # slashes inside a pattern, not a literal
    assert "connection" not in props and "name" in props
    check = Draft202012Validator(tool)
    assert check.is_valid({"asset": "abc123", "size": 3, "key": 1, "nic": "75001", "org": "Acme"})
    assert not check.is_valid({"asset": "abc123", "nic": "7500"})


def test_a_json_body_is_sent_with_the_media_type_parameters_its_spec_declares() -> None:
    """Azure Batch declares `application/json; odata=minimalmetadata`, Zuora
    `application/json; charset=utf-8`: the request says what the API declared (it was sent as
    bare `application/json`, which the sweep's judge found 195 times). A parameter that is not
    one (a line break, as a hostile spec could write) is never copied into the header."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    def sent_type(declared: str) -> str:
        op = {
            "post": {
                "operationId": "addJob",
                "requestBody": {"content": {declared: {"schema": schema}}},
                "responses": {"200": {"description": "ok"}},
            }
        }
        skill = load_skill(derive_package(doc({"/jobs": op})).files)
        sent = build_request(skill.tool("add_job"), {"name": "n"}, frozenset({"rules.example"}))
        return dict(sent.headers)["Content-Type"]

    assert sent_type("application/json; odata=minimalmetadata") == (
        "application/json; odata=minimalmetadata"
    )
    assert sent_type("application/json;charset=UTF-8") == "application/json;charset=UTF-8"
    assert sent_type("application/json") == "application/json"
    assert sent_type("application/json; x=y\r\nX-Evil: 1") == "application/json"


def test_a_path_parameter_of_named_scalar_alternatives_keeps_them() -> None:
    """pandascore's `videogame_id_or_slug` is oneOf two named enums (ids, slugs): each
    reference followed, it is a scalar a segment carries, so the model is offered the ids and
    the slugs, not any string (the sweep's judge found `judge` sent, #54.2)."""
    op = {
        "get": {
            "operationId": "getVideogame",
            "parameters": [
                {
                    "name": "id_or_slug",
                    "in": "path",
                    "required": True,
                    "schema": {"$ref": "#/components/schemas/IdOrSlug"},
                }
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }
    schemas = {
        "IdOrSlug": {
            "oneOf": [{"$ref": "#/components/schemas/Id"}, {"$ref": "#/components/schemas/Slug"}]
        },
        "Id": {"type": "integer", "enum": [1, 3]},
        "Slug": {"type": "string", "enum": ["cs-go", "dota-2"]},
    }
    files = derive_package(doc({"/videogames/{id_or_slug}": op}, schemas)).files
    skill = load_skill(files)
    tool = skill.tool("get_videogame")
    assert tool.validator.is_valid({"id_or_slug": 3})
    assert tool.validator.is_valid({"id_or_slug": "dota-2"})
    assert not tool.validator.is_valid({"id_or_slug": "judge"})
    assert not tool.validator.is_valid({"id_or_slug": 2})
    for value, path in ((3, "/videogames/3"), ("cs-go", "/videogames/cs-go")):
        request = build_request(tool, {"id_or_slug": value}, skill.hosts)
        assert request.url == f"https://rules.example/v1{path}"


def test_a_query_enum_offering_the_empty_string_offers_it_only_where_empty_values_are_allowed() -> (
    None
):
    """watchful's `log_type` lists `""` among its values, while OAS sends an empty query value
    only with `allowEmptyValue` (the judge refused `log_type=`, #54.2): an empty value is no
    value, so the model is offered the others; where the spec allows empty values it stays."""
    op = {
        "get": {
            "operationId": "getLogs",
            "parameters": [
                {
                    "name": "kind",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["", "a", "b"]},
                },
                {
                    "name": "mark",
                    "in": "query",
                    "allowEmptyValue": True,
                    "schema": {"type": "string", "enum": ["", "on"]},
                },
                {  # Brex's `dataset`: a segment is never empty, and the runtime refuses one
                    "name": "dataset",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "enum": ["", "mini", "full"]},
                },
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }
    tool = load_skill(derive_package(doc({"/logs/{dataset}": op})).files).tool("get_logs")
    assert tool.schema["properties"]["kind"]["enum"] == ["a", "b"]
    assert tool.schema["properties"]["mark"]["enum"] == ["", "on"]
    assert tool.schema["properties"]["dataset"]["enum"] == ["mini", "full"]
