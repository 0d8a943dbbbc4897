"""Pagination an agent can follow: derive says how each list pages (Link header, a cursor field,
Stripe's starting_after, an @odata.nextLink URL, an offset), and a call's result carries `next`,
the exact arguments (or the URL) of the next page, checked against the skill's hosts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
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
from skillpress.runtime.calling.request import CallRefused
from tests.fake_api import FakeApi, Reply, Seen

ITEMS = [{"id": f"it_{n}", "n": n} for n in range(1, 6)]  # five items, pages of two


class _Lister:
    """One list API paged five ways over the same five items, recording every request."""

    def __init__(self) -> None:
        self.api = FakeApi(_listed)
        self.url = self.api.url

    @property
    def seen(self) -> list[str]:
        return [r.path for r in self.api.seen]

    def close(self) -> None:
        self.api.close()


def _listed(request: Seen) -> Reply:
    """A page of the five items, the way the API at the request's path pages."""
    q = {k: v[0] for k, v in request.query.items()}
    size = int(q.get("limit") or q.get("per_page") or q.get("$top") or 2)
    base = f"http://{request.header('Host')}"
    route = request.route
    if route == "/repos":  # GitHub: page numbers, the next in a Link header
        page = int(q.get("page", 1))
        chunk = ITEMS[(page - 1) * size : page * size]
        more = page * size < len(ITEMS)
        link = f'<{base}/repos?per_page={size}&page={page + 1}>; rel="next"'
        return Reply(200, chunk, {"Link": link} if more else {})
    if route == "/conversations":  # Slack: response_metadata.next_cursor
        at = int(q.get("cursor") or 0)
        chunk = ITEMS[at : at + size]
        after = str(at + size) if at + size < len(ITEMS) else ""
        return Reply(
            200, {"ok": True, "channels": chunk, "response_metadata": {"next_cursor": after}}
        )
    if route == "/customers":  # Stripe: has_more, starting_after
        after_id = q.get("starting_after")
        at = next((i + 1 for i, it in enumerate(ITEMS) if it["id"] == after_id), 0)
        chunk = ITEMS[at : at + size]
        return Reply(200, {"object": "list", "data": chunk, "has_more": at + size < len(ITEMS)})
    if route == "/users":  # Graph: @odata.nextLink with a $skiptoken
        at = int(q.get("$skiptoken") or 0)
        out: dict[str, Any] = {"value": ITEMS[at : at + size]}
        if at + size < len(ITEMS):
            out["@odata.nextLink"] = f"{base}/users?$top={size}&$skiptoken={at + size}"
        return Reply(200, out)
    if route == "/elsewhere":  # a next page on a host the skill does not name
        return Reply(
            200, ITEMS[:2], {"Link": '<https://evil.example/elsewhere?page=2>; rel="next"'}
        )
    return Reply(404, {"error": "no such list"})


@pytest.fixture
def lister() -> Iterator[_Lister]:
    server = _Lister()
    yield server
    server.close()


def _query(*names_types: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"name": n, "in": "query", "schema": {"type": t}} for n, t in names_types]


def _ok(schema: dict[str, Any], headers: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "description": "a page",
        "content": {"application/json": {"schema": schema}},
    }
    if headers:
        out["headers"] = headers
    return {"200": out}


ITEM = {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}}
SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Lists", "version": "1"},
    "paths": {
        "/repos": {
            "get": {
                "operationId": "listRepos",
                "parameters": _query(("per_page", "integer"), ("page", "integer")),
                "responses": _ok(
                    {"type": "array", "items": ITEM}, {"Link": {"schema": {"type": "string"}}}
                ),
            }
        },
        "/conversations": {
            "get": {
                "operationId": "listConversations",
                "parameters": _query(("limit", "integer"), ("cursor", "string")),
                "responses": _ok(
                    {
                        "type": "object",
                        "properties": {
                            "ok": {"type": "boolean"},
                            "channels": {"type": "array", "items": ITEM},
                            "response_metadata": {
                                "type": "object",
                                "properties": {"next_cursor": {"type": "string"}},
                            },
                        },
                    }
                ),
            }
        },
        "/customers": {
            "get": {
                "operationId": "listCustomers",
                "parameters": _query(("limit", "integer"), ("starting_after", "string")),
                "responses": _ok(
                    {
                        "type": "object",
                        "properties": {
                            "object": {"type": "string"},
                            "data": {"type": "array", "items": ITEM},
                            "has_more": {"type": "boolean"},
                        },
                    }
                ),
            }
        },
        "/users": {
            "get": {
                "operationId": "listUsers",
                "parameters": _query(("$top", "integer")),
                "responses": _ok(
                    {
                        "allOf": [
                            {
                                "type": "object",
                                "properties": {"@odata.nextLink": {"type": "string"}},
                            },
                            {
                                "type": "object",
                                "properties": {"value": {"type": "array", "items": ITEM}},
                            },
                        ]
                    }
                ),
            }
        },
        "/elsewhere": {
            "get": {
                "operationId": "listElsewhere",
                "parameters": _query(("page", "integer")),
                "responses": _ok(
                    {"type": "array", "items": ITEM}, {"Link": {"schema": {"type": "string"}}}
                ),
            }
        },
        "/pets/{id}": {
            "get": {
                "operationId": "getPet",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": _ok(ITEM),
            }
        },
    },
}


def _package(base_url: str) -> dict[str, bytes]:
    spec = {**SPEC, "servers": [{"url": base_url}]}
    return derive_package(yaml.safe_dump(spec).encode(), DeriveOptions(slug="lists")).files


def _front(files: dict[str, bytes], name: str) -> dict[str, Any]:
    text = files[f"{name}.md"].decode()
    return split_frontmatter(f"{name}.md", text).frontmatter


def test_derive_says_how_each_list_pages() -> None:
    files = _package("https://api.example.test")
    assert {
        n: _front(files, n)["operation"].get("paging")
        for n in ("list_repos", "list_conversations", "list_customers", "list_users", "get_pet")
    } == {
        "list_repos": {"kind": "link", "size": "per_page"},
        "list_conversations": {
            "kind": "cursor",
            "param": "cursor",
            "field": ["response_metadata", "next_cursor"],
            "size": "limit",
        },
        "list_customers": {
            "kind": "after_last",
            "param": "starting_after",
            "items": ["data"],
            "size": "limit",
            "more": ["has_more"],
            "key": "id",
        },
        "list_users": {"kind": "next_url", "field": ["@odata.nextLink"], "size": "$top"},
        "get_pet": None,
    }
    assert (
        "Pages: the answer's `response_metadata.next_cursor` goes back in `cursor`; a result"
        " carries `next`, the arguments of the next page (or its URL), when there is one."
    ) in files["list_conversations.md"].decode()
    again = _package("https://api.example.test")
    assert again == files  # same spec, same bytes


def _walk(host: SkillHost, tool: str, args: dict[str, Any]) -> list[Any]:
    """Every page, following `next` exactly as an agent would."""
    bodies, page_url = [], None
    for _ in range(10):
        result = host.call(tool, args, page_url=page_url)
        assert result.status == 200
        bodies.append(result.body_value())
        found = result.next
        if found is None:
            return bodies
        args, page_url = (
            (found["arguments"], None) if "arguments" in found else (args, found["page_url"])
        )
    raise AssertionError("more than 10 pages")


def test_next_fetches_the_next_page_exactly_for_every_kind(tmp_path: Path, lister: _Lister) -> None:
    write_package_dir(_package(lister.url), tmp_path / "lists")
    host = SkillHost(tmp_path)
    first = host.call("lists_list_repos", {"per_page": 2})
    assert first.next == {"arguments": {"per_page": 2, "page": 2}}
    assert first.as_dict(for_agent=True)["next"] == first.next
    pages = _walk(host, "lists_list_repos", {"per_page": 2})
    assert [it["n"] for page in pages for it in page] == [1, 2, 3, 4, 5]
    lister.api.seen.clear()
    pages = _walk(host, "lists_list_conversations", {"limit": 2})
    assert [it["n"] for page in pages for it in page["channels"]] == [1, 2, 3, 4, 5]
    assert lister.seen == [
        "/conversations?limit=2",
        "/conversations?limit=2&cursor=2",
        "/conversations?limit=2&cursor=4",
    ]  # the last page's empty next_cursor ends it
    lister.api.seen.clear()
    pages = _walk(host, "lists_list_customers", {"limit": 2})
    assert [it["n"] for page in pages for it in page["data"]] == [1, 2, 3, 4, 5]
    assert lister.seen[1:] == [
        "/customers?limit=2&starting_after=it_2",
        "/customers?limit=2&starting_after=it_4",
    ]
    lister.api.seen.clear()
    first = host.call("lists_list_users", {"$top": 2})
    assert first.next == {"page_url": f"{lister.url}/users?$top=2&$skiptoken=2"}
    pages = _walk(host, "lists_list_users", {"$top": 2})
    assert [it["n"] for page in pages for it in page["value"]] == [1, 2, 3, 4, 5]
    assert lister.seen[-2:] == ["/users?$top=2&$skiptoken=2", "/users?$top=2&$skiptoken=4"]


def test_a_next_page_off_the_skills_hosts_is_refused(tmp_path: Path, lister: _Lister) -> None:
    write_package_dir(_package(lister.url), tmp_path / "lists")
    host = SkillHost(tmp_path)
    result = host.call("lists_list_elsewhere", {})
    assert result.next is None
    assert result.next_refused == (
        "the answer names a next page at https://evil.example/elsewhere?page=2: page_url goes to"
        " evil.example, which is not one of the skill's hosts"
    )
    with pytest.raises(CallRefused, match="not one of the skill's hosts"):
        host.call("lists_list_users", {}, page_url="https://evil.example/users?$skiptoken=2")
    with pytest.raises(CallRefused, match="its path differs"):
        host.call("lists_list_users", {}, page_url=f"{lister.url}/customers?x=1")
    with pytest.raises(CallRefused, match="does not"):
        host.call("lists_get_pet", {"id": "1"}, page_url=f"{lister.url}/pets/2")
    assert lister.seen == ["/elsewhere"]


def test_a_paging_declaration_is_checked_when_it_loads() -> None:
    def declared(paging: Any, method: str = "GET") -> None:
        text = (
            "---\n"
            + yaml.safe_dump(
                {
                    "operation": {
                        "method": method,
                        "url": "https://api.example.test/items",
                        "query": ["cursor"],
                        "optional": ["cursor"],
                        "paging": paging,
                    }
                }
            )
            + "---\n# list_items\n"
        )
        parse_operation_file("list_items.md", text)

    declared({"kind": "cursor", "param": "cursor", "field": ["next"]})
    for paging, said in [
        ({"kind": "cursor", "param": "cursor", "feild": ["next"]}, "did you mean"),
        ({"kind": "scroll"}, "is not one of after_last, cursor"),
        ({"kind": "cursor", "field": ["next"]}, "a cursor paging needs `param`"),
        ({"kind": "cursor", "param": "token", "field": ["next"]}, "not a query argument"),
        ({"kind": "cursor", "param": "cursor", "field": "next"}, "must be a list of field names"),
    ]:
        with pytest.raises(DeclarationError, match=said):
            declared(paging)
    with pytest.raises(DeclarationError, match="only a GET pages"):
        declared({"kind": "link"}, "POST")


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_call_all_pages_follows_them_within_its_caps(tmp_path: Path, lister: _Lister) -> None:
    write_package_dir(_package(lister.url), tmp_path / "lists")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "skillpress.cli.main",
                "call",
                str(tmp_path / "lists"),
                *args,
            ],
            env={**env, "SKILLPRESS_HOME": str(tmp_path / "home")},
            capture_output=True,
            text=True,
            timeout=60,
        )

    whole = cli("list_customers", "--args", '{"limit": 2}', "--all-pages")
    assert whole.returncode == 0, whole.stderr
    out = json.loads(whole.stdout)
    assert out["pages"] == 3 and "stopped_at" not in out
    assert [it["n"] for r in out["results"] for it in r["body"]["data"]] == [1, 2, 3, 4, 5]
    capped = json.loads(
        cli("list_customers", "--args", '{"limit": 2}', "--all-pages", "--max-pages", "2").stdout
    )
    assert capped["pages"] == 2 and capped["stopped_at"] == "--max-pages 2"
    assert capped["next"] == {"arguments": {"limit": 2, "starting_after": "it_4"}}
    one = cli("list_users", "--args", '{"$top": 2}')
    assert one.stderr.strip() == f"next page: --page-url '{lister.url}/users?$top=2&$skiptoken=2'"
    second = cli(
        "list_users",
        "--args",
        '{"$top": 2}',
        "--page-url",
        f"{lister.url}/users?$top=2&$skiptoken=2",
        "--json",
    )
    assert [it["n"] for it in json.loads(second.stdout)["body"]["value"]] == [3, 4]


def test_over_mcp_call_operation_takes_the_page_url(tmp_path: Path, lister: _Lister) -> None:
    from mcp import Client

    from skillpress.mcp.server import build_mcp_server
    from skillpress.runtime.package.skill import load_skill

    files = _package(lister.url)

    async def pages() -> list[Any]:
        server = build_mcp_server(load_skill(files, lazy=True), files)
        async with Client(server) as client:
            first = await client.call_tool(
                "call_operation", {"name": "list_users", "arguments": {"$top": 2}}
            )
            got = json.loads(first.content[0].text)
            second = await client.call_tool(
                "call_operation",
                {
                    "name": "list_users",
                    "arguments": {"$top": 2},
                    "page_url": got["next"]["page_url"],
                },
            )
            return [got, json.loads(second.content[0].text)]

    first, second = asyncio.run(pages())
    assert [it["n"] for it in first["body"]["value"]] == [1, 2]
    assert [it["n"] for it in second["body"]["value"]] == [3, 4]
    assert second["next"] == {"page_url": f"{lister.url}/users?$top=2&$skiptoken=4"}
