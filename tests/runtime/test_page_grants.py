"""A grant is one request exactly as the person saw it, and a page URL only continues the same
call: tried from the agent's side on every face that takes a `page_url` (SkillHost, MCP's
call_operation, the command line's --page-url and --all-pages), against the real approvals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.records import approval_requests as approvals
from skillpress.app.serving.calling import open_package
from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper
from skillpress.host import SkillHost
from skillpress.mcp.server import build_mcp_server
from skillpress.platform.settings import Settings
from skillpress.runtime.calling.calls import GateClosed
from skillpress.runtime.calling.request import CallRefused
from tests.runtime.hostile_api import Answer, HostileApi, Seen, hostile_api, write_package

BODY = "---\nname: acct\nauth:\n  header: X-Api-Key\n---\n\n# Accounts\n\nAccounts and their exports.\n"


def _export(url: str) -> str:
    return (
        "---\noperation:\n  method: GET\n"
        f"  url: {url}/accounts/{{account_id}}/export\n"
        "  query: [top]\n  optional: [top]\n  integer: [top]\n"
        "  paging: {kind: next_url, field: [next], size: top}\n"
        "approval:\n  matches: GET /accounts/{account_id}/export\n  risk: high\n"
        "---\n\n# export_account\n\nExport one account's records.\n"
    )


def _pages(url: str) -> str:
    return (
        "---\noperation:\n  method: GET\n"
        f"  url: {url}/pages\n"
        "  query: [top]\n  optional: [top]\n  integer: [top]\n"
        "  paging: {kind: next_url, field: [next], size: top}\n"
        "---\n\n# list_pages\n\nList the pages.\n"
    )


def _route(seen: Seen) -> Answer:
    base = f"http://{seen.headers['Host']}"
    if seen.path.startswith("/pages"):
        return Answer(body={"items": [1, 2], "next": f"{base}/linkedX?cursor=2"})
    return Answer(body={"rows": ["r1"], "next": f"{base}{seen.path.split('?')[0]}?skiptoken=2"})


@pytest.fixture
def api() -> Iterator[HostileApi]:
    yield from hostile_api({"/": _route})


@pytest.fixture
def package(tmp_path: Path, api: HostileApi) -> Path:
    return write_package(
        tmp_path / "skills",
        "acct",
        BODY,
        {"export_account": _export(api.url), "list_pages": _pages(api.url)},
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", refresh_interval=0)


def _granted(settings: Settings, bound: dict[str, Any]) -> int:
    """A person granted the call for exactly `bound` (recorded as the console records it)."""
    ctx = open_app(settings)
    try:
        asked = approvals.ask(ctx, "acct", "export_account", "high", bound, "an agent")
        assert asked.id is not None
        approvals.decide(ctx, asked.id, True, "ops-alice")
        return asked.id
    finally:
        ctx.close()


def _statuses(settings: Settings) -> list[tuple[str, str]]:
    ctx = open_app(settings)
    try:
        return [(r["bound_json"], r["status"]) for r in _rows(ctx)]
    finally:
        ctx.close()


def _rows(ctx: AppContext) -> list[dict[str, Any]]:
    return [
        {"bound_json": json.dumps(r["bound"], sort_keys=True), "status": r["status"]}
        for r in approvals.list_requests(ctx, everything=True)
    ]


def test_a_grant_for_one_account_is_not_spent_on_a_page_url_for_another(
    package: Path, api: HostileApi, settings: Settings
) -> None:
    _granted(settings, {"account_id": "1"})
    host = SkillHost(
        package.parent,
        gatekeeper=agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "acct"),
    )
    # another account's export, and a query the operation does not take: not a page of this call
    with pytest.raises(CallRefused, match="its path differs"):
        host.call(
            "acct_export_account",
            {"account_id": "1"},
            page_url=f"{api.url}/accounts/999/export?top=100000&include=secrets",
        )
    with pytest.raises(CallRefused, match="'include', which is neither a parameter"):
        host.call(
            "acct_export_account",
            {"account_id": "1"},
            page_url=f"{api.url}/accounts/1/export?top=100000&include=secrets",
        )
    # a real next page of the same call is bound by its URL: the grant for the first page is not
    # one for it, so it asks anew and the grant stays unused
    with pytest.raises(GateClosed) as held:
        host.call(
            "acct_export_account",
            {"account_id": "1"},
            page_url=f"{api.url}/accounts/1/export?top=5&skiptoken=2",
        )
    assert held.value.waits
    assert api.seen == []
    page = json.dumps(
        {"account_id": "1", "page_url": f"{api.url}/accounts/1/export?top=5&skiptoken=2"},
        sort_keys=True,
    )
    assert sorted(_statuses(settings)) == sorted(
        [(json.dumps({"account_id": "1"}), "granted"), (page, "pending")]
    )
    # the grant lets exactly its own call through, once
    result = host.call("acct_export_account", {"account_id": "1"})
    assert result.status == 200 and [s.path for s in api.seen] == ["/accounts/1/export"]
    assert result.next == {"page_url": f"{api.url}/accounts/1/export?skiptoken=2"}


def test_a_page_url_matches_the_operations_path_segment_by_segment(
    package: Path, api: HostileApi
) -> None:
    host = SkillHost(package.parent)
    for bad in (
        f"{api.url}/pagesX?top=1",
        f"{api.url}/pages%2f..%2fadmin",
        f"{api.url}/pages/../admin",
        f"{api.url}/pages/extra",
    ):
        with pytest.raises(CallRefused, match="its path differs"):
            host.call("acct_list_pages", {}, page_url=bad)
    assert api.seen == []
    # a next link off the path is never offered: not as `next`, never followed
    result = host.call("acct_list_pages", {})
    assert result.next is None
    assert result.next_refused is not None and "its path differs" in result.next_refused
    ok = host.call("acct_list_pages", {"top": 2}, page_url=f"{api.url}/pages?top=2&cursor=2")
    assert ok.status == 200 and api.seen[-1].path == "/pages?top=2&cursor=2"


async def test_over_mcp_a_page_url_is_held_to_the_same_call(
    package: Path, api: HostileApi, settings: Settings
) -> None:
    _granted(settings, {"account_id": "1"})
    skill, files = open_package(package)
    server = build_mcp_server(
        skill,
        files,
        gatekeeper=agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "acct"),
    )
    async with Client(server) as client:
        other = await client.call_tool(
            "call_operation",
            {
                "name": "export_account",
                "arguments": {"account_id": "1"},
                "page_url": f"{api.url}/accounts/999/export?top=100000",
            },
        )
        assert other.is_error and "its path differs" in other.content[0].text
        page = await client.call_tool(
            "call_operation",
            {
                "name": "export_account",
                "arguments": {"account_id": "1"},
                "page_url": f"{api.url}/accounts/1/export?skiptoken=9",
            },
        )
        assert page.is_error and "waits for a person's approval" in page.content[0].text
    assert api.seen == []


def test_the_command_lines_all_pages_never_follows_a_link_off_the_path(
    package: Path, api: HostileApi, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.cli.main import app

    monkeypatch.setenv("SKILLPRESS_HOME", str(settings.home))
    monkeypatch.setenv("ACCT_API_KEY", "k-123456789")
    done = CliRunner().invoke(
        app, ["call", str(package), "list_pages", "--all-pages", "--approval-timeout", "0"]
    )
    assert done.exit_code == 0, done.output
    assert [s.path for s in api.seen] == ["/pages"]  # /linkedX never got the credential
    refused = CliRunner().invoke(
        app,
        [
            "call",
            str(package),
            "export_account",
            "--args",
            '{"account_id": "1"}',
            "--page-url",
            f"{api.url}/accounts/2/export",
        ],
    )
    assert refused.exit_code == 2 and "its path differs" in refused.output
    assert [s.path for s in api.seen] == ["/pages"]
