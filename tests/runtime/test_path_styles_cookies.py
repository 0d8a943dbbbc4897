"""Parameters written as the spec says (#42.9): `style: label` and `style: matrix` path
parameters (exploded or not), an array path parameter (`1,2`, its commas as they are), and a
cookie parameter, an argument sent in the Cookie header beside the skill's own cookie key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.format.declaration import DeclarationError
from skillpress.format.frontmatter import parse_operation_file, split_frontmatter
from skillpress.host import SkillHost
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.request import CallRefused
from tests.runtime.hostile_api import Answer, HostileApi, hostile_api


@pytest.fixture
def api() -> Iterator[HostileApi]:
    yield from hostile_api({"/": lambda seen: Answer(body={"ok": True})})


def _path_op(op_id: str, name: str, schema: dict[str, Any], **style: Any) -> dict[str, Any]:
    return {
        "get": {
            "operationId": op_id,
            "parameters": [
                {"name": name, "in": "path", "required": True, "schema": schema, **style}
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }


def _spec(base: str) -> bytes:
    ids = {"type": "array", "items": {"type": "integer"}}
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Styles", "version": "1"},
        "servers": [{"url": base}],
        "components": {
            "schemas": {"Ids": ids},
            "securitySchemes": {"sess": {"type": "apiKey", "in": "cookie", "name": "session"}},
        },
        "paths": {
            "/label/{id}": _path_op("getLabel", "id", {"type": "string"}, style="label"),
            "/labels/{ids}": _path_op("getLabels", "ids", ids, style="label", explode=True),
            "/matrix/{id}": _path_op("getMatrix", "id", {"type": "string"}, style="matrix"),
            "/matrices/{ids}": _path_op("getMatrices", "ids", ids, style="matrix", explode=True),
            "/many/{ids}": _path_op("getMany", "ids", {"$ref": "#/components/schemas/Ids"}),
            "/prefs": {
                "get": {
                    "operationId": "getPrefs",
                    "security": [{"sess": []}],
                    "parameters": [
                        {
                            "name": "theme",
                            "in": "cookie",
                            "required": True,
                            "schema": {"type": "string", "enum": ["dark", "light"]},
                        },
                        {"name": "lang", "in": "cookie", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            },
        },
    }
    return yaml.safe_dump(doc).encode()


def _host(tmp_path: Path, base: str) -> tuple[SkillHost, dict[str, bytes]]:
    files = derive_package(_spec(base), DeriveOptions(slug="styles")).files
    write_package_dir(files, tmp_path / "styles")
    return SkillHost(tmp_path, limits=CallLimits(retries=0)), files


def _operation(files: dict[str, bytes], name: str) -> dict[str, Any]:
    text = files[f"{name}.md"].decode()
    out: dict[str, Any] = split_frontmatter(f"{name}.md", text).frontmatter["operation"]
    return out


def test_label_and_matrix_path_parameters_are_written_in_their_style(
    tmp_path: Path, api: HostileApi
) -> None:
    host, files = _host(tmp_path, api.url)
    assert _operation(files, "get_label")["style"] == {"id": "label"}
    assert _operation(files, "get_matrices")["style"] == {"ids": "matrix_explode"}
    sent = []
    for tool, args in [
        ("get_label", {"id": "abc"}),
        ("get_labels", {"ids": [1, 2]}),
        ("get_matrix", {"id": "abc"}),
        ("get_matrices", {"ids": [1, 2]}),
        ("get_many", {"ids": [1, 2]}),
        ("get_label", {"id": "a.b,c"}),
    ]:
        assert host.call(f"styles_{tool}", args).status == 200
        sent.append(api.seen[-1].path)
    assert sent == [
        "/label/.abc",
        "/labels/.1.2",
        "/matrix/;id=abc",
        "/matrices/;ids=1;ids=2",
        "/many/1,2",  # the commas between values as they are
        "/label/.a.b%2Cc",
    ]


def test_an_array_path_parameter_is_offered_as_a_list_and_checked(
    tmp_path: Path, api: HostileApi
) -> None:
    host, files = _host(tmp_path, api.url)
    many = next(t for t in host.tools() if t["name"] == "styles_get_many")
    ids = many["input_schema"]["properties"]["ids"]
    assert ids["type"] == "array" and ids["minItems"] == 1
    with pytest.raises(CallRefused, match="ids"):
        host.call("styles_get_many", {"ids": []})
    with pytest.raises(CallRefused, match="ids"):
        host.call("styles_get_many", {"ids": "1,2"})
    with pytest.raises(CallRefused, match="dots only"):
        host.call("styles_get_label", {"id": "."})
    assert len(api.seen) == 0


def test_a_cookie_parameter_is_an_argument_sent_beside_the_cookie_key(
    tmp_path: Path, api: HostileApi
) -> None:
    host, files = _host(tmp_path, api.url)
    assert _operation(files, "get_prefs")["cookie"] == ["theme", "lang"]
    assert "`theme`" in files["get_prefs.md"].decode()
    with pytest.raises(CallRefused, match="theme"):
        host.call("styles_get_prefs", {})
    host.call(
        "styles_get_prefs",
        {"theme": "dark", "lang": "en; evil=1"},
        environ={"STYLES_API_KEY": "k-123"},
    )
    assert api.seen[-1].headers["Cookie"] == "theme=dark; lang=en%3B%20evil=1; session=k-123"


def test_a_path_style_is_checked_where_it_is_declared() -> None:
    def declared(style: dict[str, str], schema: dict[str, Any]) -> None:
        text = (
            "---\n"
            + yaml.safe_dump(
                {
                    "operation": {
                        "method": "GET",
                        "url": "https://api.example.test/items/{id}",
                        "style": style,
                        "schema": {
                            "type": "object",
                            "properties": {"id": schema},
                            "required": ["id"],
                        },
                    }
                }
            )
            + "---\n# get_item\n"
        )
        parse_operation_file("get_item.md", text)

    declared({"id": "matrix"}, {"type": "array", "items": {"type": "string"}})
    with pytest.raises(DeclarationError, match="its style is one of simple, label"):
        declared({"id": "deepObject"}, {"type": "string"})
    with pytest.raises(DeclarationError, match="or a list of them"):
        declared({}, {"type": "array", "items": {"type": "object"}})


def test_a_path_parameter_that_may_be_null_is_its_other_type(
    tmp_path: Path, api: HostileApi
) -> None:
    # Airflow's `map_index`: `anyOf: [integer, null]`, offered as a string and sent as 'judge'
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "Maps", "version": "1"},
        "servers": [{"url": api.url}],
        "paths": {
            "/runs/{map_index}": _path_op(
                "getRun", "map_index", {"anyOf": [{"type": "integer"}, {"type": "null"}]}
            )
        },
    }
    files = derive_package(yaml.safe_dump(doc).encode(), DeriveOptions(slug="maps")).files
    _, decl = parse_operation_file("get_run.md", files["get_run.md"].decode())
    assert decl is not None
    assert decl.schema["properties"]["map_index"] == {"type": "integer"}
    write_package_dir(files, tmp_path / "skills" / "maps")
    host = SkillHost(tmp_path / "skills", limits=CallLimits(retries=0))
    with pytest.raises(CallRefused):
        host.call("maps_get_run", {"map_index": "judge"})
    host.call("maps_get_run", {"map_index": 3})
    assert api.seen[-1].path == "/runs/3"
