"""Property tests: a built URL never leaves its host or path; every tool's valid arguments translate."""

from __future__ import annotations

import base64
import json
import warnings
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.calling.translate import build_request, static_prefix
from skillpress.runtime.package.model import Skill, Tool
from skillpress.runtime.package.skill import load_skill
from tests.conftest import corpus
from tests.derive.test_corpus import REFUSED
from tests.derive.test_derive_rules import _parts
from tests.derived import derived, spread
from tests.runtime.schema_strategy import valid_values

TEMPLATE = (
    "---\noperation:\n  method: GET\n  url: https://api.example.test:8443/v1/orgs/{org}/items/{item}.json\n"
    "  query: [q]\n  optional: [q]\n---\n\n# get_item\n\nOne item.\n"
)


@cache
def _probe() -> Skill:
    return load_skill({"get_item.md": TEMPLATE.encode()}, slug="probe")


def _refused_segment(value: str) -> bool:
    return value in ("", ".", "..") or any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value)


@settings(max_examples=400, deadline=None)
@given(org=st.text(), item=st.text(), q=st.text())
@example(org="..", item="x", q="")
@example(org="a/../../admin", item="x?y#z", q="1&admin=true")
@example(org="%2e%2e", item="@evil.test", q="#")
@example(org="https://evil.test/", item="\\..\\", q="")
def test_no_path_value_leaves_the_host_or_the_path(org: str, item: str, q: str) -> None:
    skill = _probe()
    tool = skill.tool("get_item")
    try:
        request = build_request(tool, {"org": org, "item": item, "q": q}, skill.hosts)
    except CallRefused as refused:
        assert _refused_segment(org) or _refused_segment(item), refused
        return
    assert not (_refused_segment(org) or _refused_segment(item))
    url = urlsplit(request.url)
    assert (url.scheme, url.netloc) == ("https", "api.example.test:8443")
    assert url.path.startswith("/v1/orgs/")
    segments = url.path.split("/")
    assert len(segments) == 6 and segments[3] != "" and segments[5].endswith(".json")
    assert (unquote(segments[3]), unquote(segments[5][: -len(".json")])) == (org, item)
    assert parse_qsl(url.query, keep_blank_values=True) == [("q", q)]
    assert url.fragment == ""


def _has_leaf(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_leaf(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_leaf(v) for v in value)
    return value is not None


def _form_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _skill_of(spec: Path) -> Skill:
    return load_skill(derived(spec, "https://api.example.test").files)


def _assert_translates(tool: Tool, skill: Skill) -> None:
    decl = tool.declaration

    @settings(
        max_examples=3,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(valid_values(tool.schema))
    def translates(args: dict[str, Any]) -> None:
        try:
            request = build_request(tool, args, skill.hosts)
        except CallRefused as refused:
            assert (
                any(
                    _refused_segment(str(args[p]))
                    for p in decl.path_params
                    if isinstance(args[p], str)
                )
                or "is a header and cannot be only blanks" in refused.reason
            ), refused
            return
        for name in decl.header:  # a header argument goes as the header, on its own line
            if isinstance(args.get(name), str):
                sent_header = dict(request.headers)[decl.wire_name(name)]
                assert sent_header == args[name].strip(" \t"), name
        url = urlsplit(request.url)
        assert url.netloc in skill.hosts and url.path.startswith(static_prefix(decl.url))
        assert url.path.count("/") == urlsplit(decl.url).path.count("/")
        assert request.method == decl.method
        sent_query = {k for k, _ in parse_qsl(url.query, keep_blank_values=True)}
        for name in decl.query:
            value = args.get(name)
            if value in (None, [], {}) or isinstance(value, dict):
                continue
            wire = decl.wire_name(name)
            if decl.style_of(name) == "deepObject" and isinstance(value, list):
                if _has_leaf(value):  # `[{}]` has nothing to write
                    assert any(k.startswith(f"{wire}[") for k in sent_query), name
            else:
                assert wire in sent_query, name
        body_args = {k: args[k] for k in decl.body if k in args}
        if request.body is None:
            assert not body_args or decl.body_arg is not None and decl.body_arg not in args
            return
        content_type = dict(request.headers)["Content-Type"]
        if decl.is_multipart:
            assert content_type.startswith("multipart/form-data; boundary=skillpress-")
            sent_parts = {part[0] for part in _parts(request.body, content_type)}
            assert sent_parts == {k for k, v in body_args.items() if v not in ([], None)}
            return
        assert content_type == decl.content_type
        if not decl.is_form and not decl.is_json:  # a raw body: the file's bytes, or the text
            whole = args[decl.body_arg or ""]
            assert request.body == (
                base64.b64decode(whole["content_base64"])
                if decl.body_arg in decl.files
                else str(whole).encode()
            )
            return
        if decl.is_form:
            sent = parse_qsl(request.body.decode(), keep_blank_values=True)
            fields = args.get(decl.body_arg, {}) if decl.body_arg else body_args
            for name, value in fields.items():
                if isinstance(value, (str, int, bool)) and not isinstance(value, float):
                    assert (name, _form_scalar(value)) in sent, (name, value, sent)
        elif decl.body_arg is not None:
            assert json.loads(request.body) == args[decl.body_arg]
        else:
            assert json.loads(request.body) == body_args

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        translates()


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_arguments_generated_from_every_tool_schema_translate(spec: Path) -> None:
    skill = _skill_of(spec)
    assert skill.tools
    for tool in spread(skill.tools):
        _assert_translates(tool, skill)
