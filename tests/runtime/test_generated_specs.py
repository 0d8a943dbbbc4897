"""Property: for generated specs with random parameter styles, body media types and colliding
names, derive → load → translate never refuses a valid argument set, and the request parses back,
by an independent parser of query strings and forms (`urllib.parse.parse_qsl`), to the arguments
given."""

from __future__ import annotations

import json
import warnings
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from skillpress.derive import derive_package
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.skill import load_skill
from tests.runtime.schema_strategy import valid_values

TOKEN = {"type": "string", "pattern": "^[a-z]{1,5}$"}
LIST = {"type": "array", "items": TOKEN, "maxItems": 4}
OBJECT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"k": TOKEN, "n": {"type": "integer", "minimum": 0, "maximum": 99}},
}
QUERY_KINDS = {
    "scalar": ({}, TOKEN),
    "repeated": ({}, LIST),
    "csv": ({"style": "form", "explode": False}, LIST),
    "pipes": ({"style": "pipeDelimited"}, LIST),
    "deep": ({"style": "deepObject", "explode": True}, OBJECT),
    "deep-list": ({"style": "deepObject", "explode": True}, LIST),
}
MEDIA = ["application/json", "application/merge-patch+json", "application/x-www-form-urlencoded"]
NAMES = ["p", "q", "id", "name", "tags", "filter"]


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    query = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
    params: list[dict[str, Any]] = [{"name": "p", "in": "path", "required": True, "schema": TOKEN}]
    for name in query:  # `p` here collides with the path parameter
        how, schema = QUERY_KINDS[draw(st.sampled_from(sorted(QUERY_KINDS)))]
        params.append({"name": name, "in": "query", "schema": schema, **how})
    op: dict[str, Any] = {
        "operationId": "act",
        "parameters": params,
        "responses": {"200": {"description": "ok"}},
    }
    method = draw(st.sampled_from(["get", "post", "patch"]))
    if method != "get":
        media = draw(st.sampled_from(MEDIA))
        fields = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
        props = {f: draw(st.sampled_from([TOKEN, LIST, OBJECT])) for f in fields}
        entry: dict[str, Any] = {"schema": {"type": "object", "properties": props}}
        if media.endswith("urlencoded"):
            entry["encoding"] = {f: {"style": "deepObject", "explode": True} for f in fields}
        op["requestBody"] = {"content": {media: entry}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Generated", "version": "1"},
        "servers": [{"url": "https://gen.example.test"}],
        "paths": {"/r/{p}": {method: op}},
    }


def _flat(name: str, value: Any, style: str) -> list[tuple[str, str]]:
    """What a value must read back as: the independent expectation of each style."""

    def text(v: Any) -> str:
        return json.dumps(v) if not isinstance(v, str) else v

    if isinstance(value, dict):
        if style == "deepObject":
            return [(f"{name}[{k}]", text(v)) for k, v in value.items()]
        return [(k, text(v)) for k, v in value.items()]
    if isinstance(value, list):
        if style == "deepObject":
            return [(f"{name}[{i}]", text(v)) for i, v in enumerate(value)]
        if style in ("csv", "pipes"):
            return (
                [(name, {"csv": ",", "pipes": "|"}[style].join(map(text, value)))]
                if value
                else [(name, "")]
            )
        return [(name, text(v)) for v in value]
    return [(name, text(value))]


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(specs(), st.data())
def test_generated_specs_translate_and_parse_back(doc: dict[str, Any], data: st.DataObject) -> None:
    package = derive_package(json.dumps(doc).encode())
    skill = load_skill(package.files)
    assert len(skill.tools) == 1, package.manifest.operations[0].not_tool_reason
    tool = skill.tools[0]
    decl = tool.declaration
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = data.draw(valid_values(tool.schema))
    request = build_request(tool, args, skill.hosts)  # never refused: the arguments are valid
    url = urlsplit(request.url)
    assert url.path == f"/r/{args['p']}"
    expected: list[tuple[str, str]] = []
    for name in decl.query:
        if name in args:
            expected += _flat(decl.wire_name(name), args[name], decl.style_of(name))
    assert parse_qsl(url.query, keep_blank_values=True) == expected
    sent = {k: args[k] for k in decl.body if k in args}
    if request.body is None:
        assert not sent or decl.body_arg is not None
        return
    assert ("Content-Type", decl.content_type) in request.headers
    if decl.is_form:
        fields = args.get(decl.body_arg, {}) if decl.body_arg else sent
        form: list[tuple[str, str]] = []
        for name, value in fields.items():
            form += _flat(name, value, decl.style_of(name))
        assert parse_qsl(request.body.decode(), keep_blank_values=True) == form
    elif decl.body_arg is not None:
        assert json.loads(request.body) == args[decl.body_arg]
    else:
        assert json.loads(request.body) == sent
