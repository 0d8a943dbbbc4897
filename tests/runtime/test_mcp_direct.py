"""#58.1: a tiny API served directly. Petstore's up-front cost was the five fixed tools (about
470 cl100k tokens against its four operations' 380): a server of one skill whose own tools cost
no more than the fixed tools they stand for lists those tools up front, with read_skill_file for
its files, and answers them by name with no load_tools first. A larger API keeps the deferred
form, as does a server of several skills; `--deferred` asks for it anywhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import bpe_openai
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive import DeriveOptions, derive_package
from skillpress.mcp.catalog import HOW_TO
from skillpress.mcp.server import build_catalog_server, build_mcp_server
from skillpress.mcp.tools import HOW_TO_DIRECT, base_tools, serves_directly
from skillpress.runtime.package.skill import load_skill
from tests.conftest import SPECS
from tests.derived import derived
from tests.fake_api import Reply, fake_api

ROOT = Path(__file__).parents[2]
CL100K = bpe_openai.get_encoding("cl100k_base")


def _tokens(instructions: str, tools: list[object]) -> int:
    listed = json.dumps(
        [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema}  # type: ignore[attr-defined]
            for t in tools
        ]
    )
    return len(CL100K.encode(instructions)) + len(CL100K.encode(listed))


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_a_tiny_api_is_served_as_its_own_tools_and_costs_less(tmp_path: Path) -> None:
    with fake_api(lambda r: Reply(200, [{"id": 1, "name": "Rex"}])) as api:
        files = derive_package(
            (SPECS / "oai-petstore-expanded.yaml").read_bytes(), DeriveOptions(base_url=api.url)
        ).files
        out = tmp_path / "petstore"
        write_package_dir(files, out)
        own = sorted(t.name for t in load_skill(dict(files)).tools)
        assert len(own) == 4

        def params(*extra: str) -> StdioServerParameters:
            command = ["-m", "skillpress.cli.main", "mcp", str(out), *extra]
            return StdioServerParameters(command=sys.executable, args=command, cwd=str(ROOT))

        async with Client(params()) as client:
            direct = (await client.list_tools()).tools
            assert sorted(t.name for t in direct) == sorted([*own, "read_skill_file"])
            body = files["body.md"].decode()
            assert client.instructions == HOW_TO_DIRECT + "\n\n" + body
            find = next(n for n in own if n.endswith("find_pets"))
            answer = await client.call_tool(find, {})  # by its name, nothing loaded first
            assert not answer.is_error, answer.content[0].text
            assert json.loads(answer.content[0].text)["status"] == 200
            assert [(s.method, s.path) for s in api.seen] == [("GET", "/pets")]
            loaded = await client.call_tool("loaded_tools", {})  # what it says agrees
            assert json.loads(loaded.content[0].text) == own
            read = await client.call_tool("read_skill_file", {"path": "find_pets.md"})
            assert not read.is_error and "find_pets" in read.content[0].text
            direct_cost = _tokens(client.instructions, direct)

        async with Client(params("--deferred")) as client:
            fixed = (await client.list_tools()).tools
            assert [t.name for t in fixed] == [t.name for t in base_tools(load_skill(dict(files)))]
            assert client.instructions == HOW_TO + "\n\n" + body
            deferred_cost = _tokens(client.instructions, fixed)
    assert direct_cost < deferred_cost, (direct_cost, deferred_cost)


def test_a_larger_api_and_a_server_of_several_keep_the_fixed_tools() -> None:
    """USPTO's three operations cost more as tools (their long schemas) than the fixed tools
    do; Twilio Insights pages by URL, so served directly it would keep call_operation too, and
    its six cost more still. A server of several skills never lists one skill's own tools."""
    for spec in ("oai-uspto.yaml", "twilio-insights-v2.json"):
        assert not serves_directly(load_skill(dict(derived(SPECS / spec).files))), spec
    files = dict(derived(SPECS / "oai-petstore-expanded.yaml").files)
    skill = load_skill(files)
    assert serves_directly(skill)
    for server in (
        build_catalog_server({"a": (skill, files, None)}),
        build_mcp_server(skill, files, deferred=True),
    ):
        assert server.instructions is not None
        assert not server.instructions.startswith(HOW_TO_DIRECT)
