"""Lists that page the way a spec declares (#42.14): a `meta.next_token` that goes back in
`pagination_token` (Twitter v2), and a list that takes both `page`+`page_size` and
`offset`+`limit` (Figshare), continued in the scheme the call was made in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.format.frontmatter import split_frontmatter
from skillpress.host import SkillHost
from tests.fake_api import FakeApi, Reply, Seen, fake_api

ITEMS = [{"id": str(n)} for n in range(1, 8)]  # seven items


def _paged(request: Seen) -> Reply:
    """The seven items, a page at a time, the way the API at the request's path pages."""
    q = {k: v[0] for k, v in request.query.items()}
    if request.route == "/tweets":  # meta.next_token, pagination_token back
        size = int(q.get("max_results", 3))
        at = int(q.get("pagination_token") or 0)
        meta: dict[str, Any] = {"result_count": len(ITEMS[at : at + size])}
        if at + size < len(ITEMS):
            meta["next_token"] = str(at + size)
        return Reply(200, {"data": ITEMS[at : at + size], "meta": meta})
    if request.route == "/articles":  # page+page_size, or offset+limit
        if "page" in q:
            size = int(q.get("page_size", 3))
            at = (int(q["page"]) - 1) * size
        else:
            size = int(q.get("limit", 3))
            at = int(q.get("offset", 0))
        return Reply(200, ITEMS[at : at + size])
    return Reply(404, {"error": "no such list"})


class _Server:
    def __init__(self, api: FakeApi) -> None:
        self.api, self.url = api, api.url

    @property
    def seen(self) -> list[str]:
        return [r.path for r in self.api.seen]


@pytest.fixture
def server() -> Iterator[_Server]:
    with fake_api(_paged) as api:
        yield _Server(api)


def _ints(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "in": "query", "schema": {"type": "integer"}} for n in names]


ITEM = {"type": "object", "properties": {"id": {"type": "string"}}}


def _spec(url: str) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Schemes", "version": "1"},
        "servers": [{"url": url}],
        "paths": {
            "/tweets": {
                "get": {
                    "operationId": "listTweets",
                    "parameters": [
                        *_ints("max_results"),
                        {"name": "pagination_token", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "a page",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "data": {"type": "array", "items": ITEM},
                                            "meta": {
                                                "type": "object",
                                                "properties": {
                                                    "result_count": {"type": "integer"},
                                                    "next_token": {"type": "string"},
                                                },
                                            },
                                        },
                                    }
                                }
                            },
                        }
                    },
                }
            },
            "/articles": {
                "get": {
                    "operationId": "listArticles",
                    "parameters": _ints("page", "page_size", "limit", "offset"),
                    "responses": {
                        "200": {
                            "description": "a page",
                            "content": {
                                "application/json": {"schema": {"type": "array", "items": ITEM}}
                            },
                        }
                    },
                }
            },
        },
    }


def _host(tmp_path: Path, url: str) -> tuple[SkillHost, dict[str, bytes]]:
    files = derive_package(yaml.safe_dump(_spec(url)).encode(), DeriveOptions(slug="schemes")).files
    write_package_dir(files, tmp_path / "schemes")
    return SkillHost(tmp_path), files


def _walk(host: SkillHost, tool: str, args: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for _ in range(10):
        result = host.call(tool, args)
        assert result.status == 200, result.body_value()
        body = result.body_value()
        ids += [it["id"] for it in (body["data"] if isinstance(body, dict) else body)]
        if result.next is None:
            return ids
        args = result.next["arguments"]
    raise AssertionError("more than 10 pages")


def test_a_meta_next_token_goes_back_in_pagination_token(tmp_path: Path, server: _Server) -> None:
    host, files = _host(tmp_path, server.url)
    front = split_frontmatter("list_tweets.md", files["list_tweets.md"].decode()).frontmatter
    assert front["operation"]["paging"] == {
        "kind": "cursor",
        "param": "pagination_token",
        "field": ["meta", "next_token"],
        "size": "max_results",
    }
    assert _walk(host, "schemes_list_tweets", {"max_results": 3}) == [str(n) for n in range(1, 8)]
    assert server.seen == [
        "/tweets?max_results=3",
        "/tweets?max_results=3&pagination_token=3",
        "/tweets?max_results=3&pagination_token=6",
    ]


def test_a_list_taking_page_and_offset_continues_in_the_scheme_it_was_called_in(
    tmp_path: Path, server: _Server
) -> None:
    host, files = _host(tmp_path, server.url)
    front = split_frontmatter("list_articles.md", files["list_articles.md"].decode()).frontmatter
    assert front["operation"]["paging"] == {
        "kind": "offset",
        "param": "offset",
        "items": [],
        "size": "limit",
        "page": "page",
        "page_size": "page_size",
    }
    every = [str(n) for n in range(1, 8)]
    assert _walk(host, "schemes_list_articles", {"page": 1, "page_size": 3}) == every
    assert server.seen == [
        "/articles?page=1&page_size=3",
        "/articles?page=2&page_size=3",
        "/articles?page=3&page_size=3",
    ]
    server.api.seen.clear()
    assert _walk(host, "schemes_list_articles", {"limit": 3}) == every
    assert server.seen == [
        "/articles?limit=3",
        "/articles?limit=3&offset=3",
        "/articles?limit=3&offset=6",
    ]
    assert (
        "`offset` moves past the items already read (or `page` counts the pages, for a call"
        " made by page)" in files["list_articles.md"].decode()
    )
