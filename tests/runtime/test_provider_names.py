"""Property names every provider takes (#42.8): Anthropic refuses a name outside
`^[a-zA-Z0-9_.-]{1,64}$` at any depth, and one such tool fails the whole tools request. Every
provider shape renames such a property (its description says the name the API reads), and a
model's arguments under the offered names reach the API, and the gate, under the API's own."""

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
from skillpress.format.provider_names import NAME_RULE, original_names, provider_names
from skillpress.host import SkillHost
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.package.model import PROVIDERS
from tests.runtime.hostile_api import Answer, HostileApi, hostile_api

LONG = "secret_scanning_non_provider_patterns_enabled_for_new_repositories"  # 66
LONGER = LONG + "_too"  # same first 64 characters: two names still


@pytest.fixture
def api() -> Iterator[HostileApi]:
    yield from hostile_api({"/": lambda seen: Answer(body={"ok": True})})


def _spec(base: str) -> bytes:
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Names", "version": "1"},
        "servers": [{"url": base}],
        "paths": {
            "/orgs/{org}": {
                "patch": {
                    "operationId": "updateOrg",
                    "parameters": [
                        {
                            "name": "org",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {"name": "$filter", "in": "query", "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": [LONG],
                                    "properties": {
                                        LONG: {"type": "boolean", "description": "On or off."},
                                        LONGER: {"type": "boolean"},
                                        "settings": {
                                            "type": "object",
                                            "properties": {
                                                "filter[status]": {"type": "string"},
                                                "ok": {"type": "integer"},
                                            },
                                        },
                                        "rules": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {"rule name": {"type": "string"}},
                                            },
                                        },
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    return yaml.safe_dump(doc).encode()


def _names(schema: Any) -> list[str]:
    """Every property name at every depth."""
    out: list[str] = []
    if isinstance(schema, dict):
        for key, sub in (schema.get("properties") or {}).items():
            out.append(key)
            out += _names(sub)
        for key in ("items", "additionalProperties"):
            out += _names(schema.get(key))
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key) or []:
                out += _names(sub)
    return out


def test_every_provider_shape_holds_the_name_rule_at_every_depth(tmp_path: Path) -> None:
    files = derive_package(_spec("https://api.example.test"), DeriveOptions(slug="gh")).files
    write_package_dir(files, tmp_path / "gh")
    host = SkillHost(tmp_path)
    for provider in PROVIDERS:
        (tool,) = host.tools(provider)
        shaped = json.dumps(tool)
        unsaid = shaped.replace(f"Sent as `{LONGER}`", "").replace(f"Sent as `{LONG}`", "")
        assert LONG not in unsaid, provider
        schema = tool.get("input_schema") or tool.get("inputSchema") or tool.get("parameters")
        schema = schema or tool["function"]["parameters"]
        names = _names(schema)
        assert names and all(NAME_RULE.match(n) for n in names), (provider, names)
    (anthropic,) = host.tools("anthropic")
    props = anthropic["input_schema"]["properties"]
    renamed = [n for n in props if n.startswith("secret_scanning")]
    assert len(renamed) == 2 and all(len(n) == 64 for n in renamed)
    assert props[renamed[0]]["description"] == f"Sent as `{LONG}`. On or off."
    assert anthropic["input_schema"]["required"] == ["org", renamed[0]]
    assert "filter" in props and props["filter"]["description"].startswith("Sent as `$filter`.")
    assert "filter_status" in props["settings"]["properties"]
    assert "rule_name" in props["rules"]["items"]["properties"]
    again = derive_package(_spec("https://api.example.test"), DeriveOptions(slug="gh")).files
    write_package_dir(again, tmp_path / "again" / "gh")
    assert SkillHost(tmp_path / "again").tools("anthropic") == [anthropic]  # same names


def test_arguments_under_the_offered_names_reach_the_api_under_its_own(
    tmp_path: Path, api: HostileApi
) -> None:
    files = derive_package(_spec(api.url), DeriveOptions(slug="gh")).files
    write_package_dir(files, tmp_path / "gh")
    host = SkillHost(tmp_path, limits=CallLimits(retries=0))
    (tool,) = host.tools("anthropic")
    props = tool["input_schema"]["properties"]
    first = next(n for n in props if n.startswith("secret_scanning"))
    args = {
        "org": "acme",
        "filter": "x eq 1",
        first: True,
        "settings": {"filter_status": "open", "ok": 1},
        "rules": [{"rule_name": "r1"}],
    }
    host.call("gh_update_org", args)
    sent = api.seen[-1]
    assert sent.path == "/orgs/acme?%24filter=x%20eq%201"
    assert json.loads(sent.body) == {
        LONG: True,
        "settings": {"filter[status]": "open", "ok": 1},
        "rules": [{"rule name": "r1"}],
    }
    host.call("gh_update_org", {"org": "acme", LONG: False})  # the API's own names, as they are
    assert json.loads(api.seen[-1].body) == {LONG: False}
    with pytest.raises(CallRefused, match="missing required"):
        host.call("gh_update_org", {"org": "acme"})


def test_the_renaming_goes_both_ways_and_leaves_good_names_alone() -> None:
    schema = {
        "type": "object",
        "properties": {"a b": {"type": "string"}, "a_b": {"type": "string"}, "ok": {}},
    }
    offered, notes = provider_names(schema)
    assert list(offered["properties"]) == ["a_b_" + list(offered["properties"])[0][4:], "a_b", "ok"]
    renamed = list(offered["properties"])[0]
    assert renamed != "a_b" and NAME_RULE.match(renamed)
    assert notes == [f".a b: offered as {renamed} (a provider refuses the name)"]
    assert original_names(schema, {renamed: "1", "a_b": "2"}) == {"a b": "1", "a_b": "2"}
    plain = {"type": "object", "properties": {"id": {"type": "string"}}}
    assert provider_names(plain) == (plain, [])
