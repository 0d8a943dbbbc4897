"""Invariant: a page URL only continues the same call (`runtime/paging.py`, `page_url_request`):
the same operation, host and path, and no value the call sent is changed — a fixed one is
never moved, and is sent even where the page URL leaves it out — except where the next page's
position goes.

Attacked with any page URL hypothesis makes, through SkillHost, an MCP server's
call_operation and the command line's --page-url. (An earlier release sent `owner=victim` for
a call whose `owner` is fixed to `acme`.)"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.fake_api import Reply, fake_api

OPERATION = """---
operation:
  method: GET
  url: {url}/repos
  query: [owner, state, per_page, cursor]
  optional: [state, per_page, cursor]
  integer: [per_page]
  fixed: {{owner: acme}}
  paging: {{kind: cursor, param: cursor, field: [next_cursor]}}
---

# list_repos

The repositories of the organisation.
"""


def _package(root: Path, url: str) -> Path:
    folder = root / "repos"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "body.md").write_text("---\nname: repos\n---\n\n# Repos\n\nRepositories.\n")
    (folder / "list_repos.md").write_text(OPERATION.format(url=url))
    return folder


QUERIES = st.lists(
    st.tuples(
        st.sampled_from(["owner", "state", "per_page", "cursor", "page", "Owner"]),
        st.sampled_from(["acme", "victim", "open", "closed", "", "2", "acme,victim", "%2e%2e"]),
    ),
    max_size=5,
)
CALL = {"state": "open", "per_page": 2}


def _held(url: str) -> None:
    """What any request a page URL was let through to must hold."""
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)
    spelled = sorted(k for k in query if k.lower() == "owner")
    assert spelled == ["owner"], url  # no other spelling an API reading names loosely takes
    assert query["owner"] == ["acme"], url  # fixed: exactly the call's, once, left out or not
    # the call's own values: never another (a next link may leave one out: its cursor holds it)
    assert query.get("state", ["open"]) == ["open"], url
    assert query.get("per_page", ["2"]) == ["2"], url


def _page(base: str, pairs: list[tuple[str, str]]) -> str:
    return f"{base}/repos?{urlencode(pairs)}"


SLOW = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SLOW
@given(pairs=QUERIES)
def test_skillhost(pairs: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory) -> None:
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.request import CallRefused

    ok = lambda r: Reply(200, {})  # noqa: E731
    with fake_api(ok) as api:
        root = tmp_path_factory.mktemp("host")
        _package(root, api.url)
        host = SkillHost(root)
        try:
            host.call("repos_list_repos", CALL, page_url=_page(api.url, pairs))
        except CallRefused as exc:
            assert "page_url" in str(exc)
        for _, path, _, _ in api.seen:
            _held(f"{api.url}{path}")


@SLOW
@given(pairs=QUERIES)
def test_the_command_line(
    pairs: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from skillpress.cli.main import app

    root = tmp_path_factory.mktemp("cli")
    base = "http://127.0.0.1:9"
    folder = _package(root, base)
    said = CliRunner().invoke(
        app,
        [
            "call",
            str(folder),
            "list_repos",
            "--args",
            json.dumps(CALL),
            "--page-url",
            _page(base, pairs),
            "--dry-run",
        ],
    )
    if said.exit_code == 0:
        _held(json.loads(said.stdout)["url"])
    else:
        assert said.exit_code == 2 and "page_url" in said.output, said.output


async def test_mcp_call_operation(tmp_path: Path) -> None:
    from mcp import Client

    from skillpress.app.serving.calling import open_package
    from skillpress.mcp.server import build_mcp_server

    ok = lambda r: Reply(200, {})  # noqa: E731
    with fake_api(ok) as api:
        skill, files = open_package(_package(tmp_path, api.url))
        async with Client(build_mcp_server(skill, files)) as client:
            for pairs in (
                [("owner", "victim"), ("state", "open"), ("cursor", "2")],
                [("state", "closed"), ("cursor", "2")],
                [("state", "open"), ("per_page", "2"), ("cursor", "2")],  # owner left out
            ):
                args = {"name": "list_repos", "arguments": CALL, "page_url": _page(api.url, pairs)}
                await client.call_tool("call_operation", args)
        assert len(api.seen) == 1  # only the page that continues the call went
        for _, path, _, _ in api.seen:
            _held(f"{api.url}{path}")
