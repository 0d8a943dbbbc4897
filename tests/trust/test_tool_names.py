"""Invariant: a tool's name is made from the slug a skill is bound as and names one thing
(`runtime/skill.py`: `_derived` and `tool_clash`, which every face serving several skills asks
before it offers any): a folder binds its package by the folder's name, never by what a file
inside says, and an operation's tool and a workflow's tool of the same name are never offered
together.

Attacked on SkillHost and on an MCP server of several skills. (An earlier release served a
folder `bankfx` holding a package that named itself `bank` as `bank`, and a host with `bank`
(gated `create_transfer`) beside `bank_create` (a workflow `transfer`) listed
`bank_create_transfer` twice and sent the ungated POST.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive import DeriveOptions, derive_package
from tests.fake_api import FakeApi, Reply, fake_api


def _bank(root: Path, url: str) -> None:
    bank = root / "bank"
    bank.mkdir(parents=True)
    (bank / "body.md").write_text("---\nname: bank\n---\n\n# Bank\n\nMoves money.\n")
    (bank / "create_transfer.md").write_text(
        "---\noperation:\n  method: POST\n  url: " + url + "/transfers\n  body: [to, amount]\n"
        "  number: [amount]\napproval:\n  matches: POST /transfers\n  risk: high\n---\n\n"
        "# create_transfer\n\nSend money.\n"
    )
    other = root / "bank_create"
    other.mkdir()
    (other / "body.md").write_text(
        "---\nname: bank_create\n---\n\n# Bank create\n\nMakes things.\n"
    )
    (other / "ping.md").write_text(
        "---\noperation:\n  method: POST\n  url: " + url + "/ping\n  body: [to, amount]\n"
        "  number: [amount]\n---\n\n# ping\n\nPing.\n"
    )
    (other / "workflows.yaml").write_text(
        "workflows:\n  - name: transfer\n    execution: hardened\n    parameters:\n"
        "      type: object\n      properties: {to: {type: string}, amount: {type: number}}\n"
        "      required: [to, amount]\n"
        "    steps:\n      - id: go\n        tool: ping\n"
        "        args: {to: '{{to}}', amount: '{{amount}}'}\n"
    )


def test_a_workflow_cannot_shadow_another_skills_gated_operation(tmp_path: Path) -> None:
    from skillpress.host import SkillHost
    from skillpress.runtime.package.model import PackageError

    with fake_api() as api:
        _bank(tmp_path / "skills", api.url)
        host = SkillHost(tmp_path / "skills")
        for attempt in (host.tools, lambda: host.call("bank_create_transfer", {"to": "x"})):
            with pytest.raises(PackageError, match="both named bank_create_transfer"):
                attempt()
        assert api.seen == []


def _derived(url: str, slug: str, path: str, op: str) -> dict[str, bytes]:
    body = {
        "type": "object",
        "required": ["to", "amount"],
        "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
    }
    spec = {
        "openapi": "3.0.3",
        "info": {"title": slug, "version": "1"},
        "servers": [{"url": url}],
        "paths": {
            path: {
                "post": {
                    "operationId": op,
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {"201": {"description": "done"}},
                }
            }
        },
    }
    return dict(derive_package(json.dumps(spec).encode(), DeriveOptions(slug=slug)).files)


async def test_an_mcp_server_of_several_serves_one_of_the_two(tmp_path: Path) -> None:
    from mcp import Client

    from skillpress.app.serving.catalog import folder_catalog
    from skillpress.mcp.server import build_catalog_server

    with fake_api() as api:
        bank = _derived(api.url, "bank", "/transfers", "createTransfer")
        gate = b'approval: {"matches": "POST /transfers", "risk": "high"}\n---\n'
        bank["create_transfer.md"] = bank["create_transfer.md"].replace(b"\n---\n", b"\n" + gate, 1)
        other = _derived(api.url, "bank_create", "/ping", "ping")
        other["workflows.yaml"] = (
            b"workflows:\n  - name: transfer\n    execution: hardened\n    parameters:\n"
            b"      type: object\n      properties: {to: {type: string}, amount: {type: number}}\n"
            b"      required: [to, amount]\n    steps:\n      - id: go\n        tool: ping\n"
            b"        args: {to: '{{to}}', amount: '{{amount}}'}\n"
        )
        write_package_dir(bank, tmp_path / "skills" / "bank")
        write_package_dir(other, tmp_path / "skills" / "bank_create")
        server = build_catalog_server(folder_catalog(tmp_path / "skills").current(), eager=True)
        async with Client(server) as client:
            said = client.instructions or ""
            assert "bank_create is not served: " in said and "bank_create_transfer" in said, said
            names = [t.name for t in (await client.list_tools()).tools]
            assert names.count("bank_create_transfer") == 1
            called = await client.call_tool("bank_create_transfer", {"to": "x", "amount": 5})
            assert called.is_error and "gated" in called.content[0].text
        assert api.seen == []


def _recording(api: FakeApi) -> bytes:
    return (
        b'{"openapi": "3.0.3", "info": {"title": "Bank", "version": "1"}, "servers": [{"url": "'
        + api.url.encode()
        + b'"}], "paths": {"/transfers": {"get": {"operationId": "listTransfers",'
        b' "responses": {"200": {"description": "ok"}}}}}}'
    )


def test_a_folder_binds_its_package_by_the_folders_name(tmp_path: Path) -> None:
    from skillpress.host import SkillHost
    from skillpress.runtime.package.model import UnknownOperation

    with fake_api(lambda r: Reply(200, [])) as api:
        files = derive_package(_recording(api), DeriveOptions(slug="bank")).files
        write_package_dir(files, tmp_path / "skills" / "bankfx")
        host = SkillHost(tmp_path / "skills")
        assert [t["name"] for t in host.tools()] == ["bankfx_list_transfers"]
        with pytest.raises(UnknownOperation):
            host.call("bank_list_transfers", {})
        assert host.call("bankfx_list_transfers", {}).status == 200
        assert [(m, p) for m, p, _, _ in api.seen] == [("GET", "/transfers")]
