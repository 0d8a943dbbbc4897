"""Whatever derive writes, the runtime loads (#42.7): each shape a public spec sweep found derive
writing and its own loader refusing, on a small spec written for it, derived, loaded and called
against a server that records the request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.host import SkillHost
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.package.skill import load_skill
from tests.runtime.hostile_api import Answer, HostileApi, hostile_api


@pytest.fixture
def api() -> Iterator[HostileApi]:
    yield from hostile_api({"/": lambda seen: Answer(body={"ok": True})})


def _ok() -> dict[str, Any]:
    return {"200": {"description": "ok"}}


def _spec(server: str) -> bytes:
    upload = {
        "type": "object",
        "required": ["Upload Yaml/Yml File"],
        "properties": {
            "Upload Yaml/Yml File": {"type": "string", "format": "binary"},
            "id": {"type": "string"},  # a part named like the path parameter
            "name": {"type": "string"},
        },
    }
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Odd", "version": "1"},
        "servers": [{"url": server}],
        "paths": {
            "/search": {
                "get": {
                    "operationId": "search",
                    "parameters": [
                        {"name": "", "in": "query", "schema": {"type": "string"}},
                        {"name": "q", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": _ok(),
                }
            },
            "/designs/{id}/import": {
                "post": {
                    "operationId": "importDesign",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "requestBody": {"content": {"multipart/form-data": {"schema": upload}}},
                    "responses": _ok(),
                }
            },
            "/act?Action=List&page size=10&=x": {
                "get": {"operationId": "listActs", "responses": _ok()}
            },
        },
    }
    return yaml.safe_dump(doc).encode()


def _host(tmp_path: Path, server: str) -> tuple[SkillHost, dict[str, bytes]]:
    files = derive_package(_spec(server), DeriveOptions(slug="odd")).files
    write_package_dir(files, tmp_path / "odd")
    return SkillHost(tmp_path, limits=CallLimits(retries=0)), files


def test_every_operation_derive_declares_loads(tmp_path: Path) -> None:
    _, files = _host(tmp_path, "https://api.example.test/{merchantAccount}/v1")
    skill = load_skill(files)
    assert sorted(t.operation for t in skill.tools) == ["import_design", "list_acts", "search"]
    for tool in skill.tools:
        skill.tool(tool.operation)  # each declaration parses and its schema checks


def test_odd_names_become_arguments_that_load_and_are_sent_as_written(
    tmp_path: Path, api: HostileApi
) -> None:
    host, files = _host(tmp_path, api.url)
    host.call("odd_search", {"q": "x"})  # a parameter with no name is not offered, nor sent
    assert api.seen[-1].path == "/search?q=x"
    host.call("odd_list_acts", {})
    assert api.seen[-1].path == "/act?Action=List&page%20size=10"
    host.call(
        "odd_import_design",
        {
            "id": "d1",
            "Upload_Yaml_Yml_File": {"content_base64": "YTogMQo=", "filename": "d.yaml"},
            "id_part": "p1",
        },
    )
    sent = api.seen[-1]
    assert sent.path == "/designs/d1/import"
    assert b'name="Upload Yaml/Yml File"; filename="d.yaml"' in sent.body
    assert b'name="id"\r\n\r\np1\r\n' in sent.body
    tool = load_skill(files).tool("import_design")
    assert set(tool.schema["properties"]) == {"id", "Upload_Yaml_Yml_File", "id_part", "name"}
    assert tool.declaration.wire_name("Upload_Yaml_Yml_File") == "Upload Yaml/Yml File"
    assert tool.declaration.wire_name("id_part") == "id"


def test_a_server_variable_without_a_default_is_an_argument(
    tmp_path: Path, api: HostileApi
) -> None:
    host, files = _host(tmp_path, api.url + "/{merchantAccount}/v1")
    host.call("odd_search", {"merchantAccount": "M1", "q": "x"})
    assert api.seen[-1].path == "/M1/v1/search?q=x"
