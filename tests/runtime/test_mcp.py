"""An MCP client from the SDK, over stdio, against the server for a real shared spec (Discord)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive import DeriveOptions, derive_package
from skillpress.mcp.catalog import HOW_TO
from skillpress.mcp.server import DECLARATION_LEFT_OUT
from tests.fake_api import FakeApi, Reply, Seen, fake_api

ROOT = Path(__file__).parents[2]
SPEC = ROOT / "tests" / "fixtures" / "specs" / "discord.json"


def _discord(request: Seen) -> Reply:
    """GET /gateway answered the way Discord does (with a cookie and a rate-limit header the
    runtime must not hand the agent)."""
    return Reply(
        200 if request.path == "/gateway" else 404,
        {"url": "wss://gateway.discord.gg"},
        {"Set-Cookie": "session=secret-cookie", "X-RateLimit-Remaining": "4"},
    )


@pytest.fixture
def discord_api() -> Iterator[FakeApi]:
    with fake_api(_discord) as api:
        yield api


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_an_mcp_client_reads_a_category_loads_an_operation_and_calls_it(
    tmp_path: Path, discord_api: FakeApi
) -> None:
    package = derive_package(SPEC.read_bytes(), DeriveOptions(base_url=discord_api.url))
    out = tmp_path / "discord"
    write_package_dir(package.files, out)
    meta = json.loads(package.files["skill.json"])
    category = next(c for c in meta["categories"] if c["name"] == "gateway")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "skillpress.cli.main",
            "mcp",
            str(out),
            "--auth-env",
            "DISCORD_TEST_TOKEN",
        ],
        cwd=str(ROOT),
        env={**os.environ, "DISCORD_TEST_TOKEN": "Bot test-token"},
    )
    async with Client(params) as client:
        assert client.instructions == HOW_TO + "\n\n" + package.files["body.md"].decode()
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == [
            "read_skill_file",
            "describe_operation",
            "call_operation",
            "load_tools",
            "loaded_tools",
        ], "deferred: no operation is offered up front"
        # a client that lists tools once and never again still calls any operation
        described = json.loads(
            (await client.call_tool("describe_operation", {"name": "get_gateway"})).content[0].text
        )
        assert (described["tool"], described["gated"]) == ("discord_get_gateway", False)
        direct = await client.call_tool("call_operation", {"name": "get_gateway", "arguments": {}})
        assert not direct.is_error and json.loads(direct.content[0].text)["status"] == 200
        wrong = await client.call_tool(
            "call_operation", {"name": "get_gateway", "arguments": {"shard": 1}}
        )
        assert wrong.is_error and wrong.content[0].text.startswith(
            "get_gateway: does not take 'shard'"
        )
        read = await client.call_tool("read_skill_file", {"path": category["file"]})
        assert (
            not read.is_error and read.content[0].text == package.files[category["file"]].decode()
        )
        assert "`get_gateway`" in read.content[0].text
        # #58.4: an operation's file is read without its declaration (the schema is
        # describe_operation's): the prose a model acts on, whole
        own = await client.call_tool("read_skill_file", {"path": "get_gateway.md"})
        prose = package.files["get_gateway.md"].decode().split("\n---\n", 1)[1]
        assert own.content[0].text == f"{DECLARATION_LEFT_OUT}\n{prose.lstrip()}"
        assert "schema:" not in own.content[0].text and "# get_gateway" in own.content[0].text
        loaded = await client.call_tool("load_tools", {"names": ["get_gateway"]})
        assert json.loads(loaded.content[0].text)["loaded"] == ["discord_get_gateway"]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "read_skill_file",
            "describe_operation",
            "call_operation",
            "load_tools",
            "loaded_tools",
            "discord_get_gateway",
        }
        called = await client.call_tool("discord_get_gateway", {})
        assert not called.is_error
        response = json.loads(called.content[0].text)
        assert (response["status"], response["body"]) == (200, {"url": "wss://gateway.discord.gg"})
        # the headers an agent acts on, never the transport's (Server, Date) or a cookie
        assert response["headers"] == {
            "content-type": "application/json",
            "content-length": "35",
            "x-ratelimit-remaining": "4",
        }
        refused = await client.call_tool("discord_get_gateway", {"shard": 1})
        assert refused.is_error and refused.content[0].text.startswith(
            "get_gateway: does not take 'shard'"
        )
        # #58.4: a tool its file names is called by that name before load_tools (as
        # call_operation would call it), where the server answered "no tool is loaded"
        unloaded = await client.call_tool("discord_get_guild", {"guild_id": "1"})
        assert json.loads(unloaded.content[0].text)["status"] == 404  # the fake knows no guild
        unknown = await client.call_tool("discord_get_guildd", {})
        assert (
            unknown.is_error and unknown.content[0].text == "no tool 'discord_get_guildd' is loaded"
        )
        # a type an operation's file refers to is read one at a time
        types = json.loads(package.files["types.json"])
        name = sorted(types)[0]
        typed = await client.call_tool("read_skill_file", {"path": f"types.json#/types/{name}"})
        assert json.loads(typed.content[0].text) == {name: types[name]}
        whole = await client.call_tool("read_skill_file", {"path": "types.json"})
        assert whole.is_error and whole.content[0].text.startswith("name one type")
    assert [(m, p) for m, p, _, _ in discord_api.seen] == [
        ("GET", "/gateway"),
        ("GET", "/gateway"),
        ("GET", "/guilds/1"),
    ]
    assert discord_api.seen[0][2]["Authorization"] == "Bot test-token"


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_eager_serves_every_operation_for_small_apis(tmp_path: Path) -> None:
    skill_dir = ROOT / "skillpress" / "examples" / "hollowbrook-skill"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillpress.cli.main", "mcp", str(skill_dir), "--eager"],
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
    assert names == [
        "call_operation",
        "describe_operation",
        "hollowbrook_book_room",  # its hardened workflow, a tool too
        "hollowbrook_cancel_booking",
        "hollowbrook_check_availability",
        "hollowbrook_create_booking",
        "hollowbrook_get_booking",
        "hollowbrook_list_rooms",
        "load_tools",
        "loaded_tools",
        "read_skill_file",
        "skill_run",  # the example carries a workflow
    ]


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_the_same_server_over_streamable_http_answers_only_its_bearer_token() -> None:
    import asyncio
    import subprocess

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from skillpress.platform.local_processes import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "mcp",
            str(ROOT / "skillpress" / "examples" / "hollowbrook-skill"),
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        cwd=str(ROOT),
        env={k: v for k, v in os.environ.items() if k != "SKILLPRESS_MCP_TOKEN"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        said = proc.stderr.readline()  # the token made for this run, said to whoever started it
        token = said.split("Authorization: Bearer ", 1)[1].split()[0]
        for _ in range(100):
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        async with httpx2.AsyncClient() as raw:
            for headers in ({}, {"Authorization": "Bearer not-the-token"}):
                refused = await raw.post(url, json=hello, headers=headers)
                assert (
                    refused.status_code == 401
                    and "bearer" in refused.headers["www-authenticate"].lower()
                )
        authed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(url, http_client=authed)) as client:
            assert [t.name for t in (await client.list_tools()).tools] == [
                "read_skill_file",
                "describe_operation",
                "call_operation",
                "load_tools",
                "loaded_tools",
                "skill_run",
            ]
            await client.call_tool("load_tools", {"names": ["get_booking"]})
            assert "hollowbrook_get_booking" in [t.name for t in (await client.list_tools()).tools]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_a_money_gate_confirmed_in_review_publishes_and_serves_over_mcp(
    tmp_path: Path,
) -> None:
    """review → publish → mcp on a spec with money fields: the gate holds the call until a person
    grants it, then exactly that call goes, once."""
    from skillpress.app.base.context import open_app
    from skillpress.app.operator import review
    from skillpress.app.records import approval_requests as approvals
    from skillpress.app.records import publish_check, versions
    from skillpress.app.serving.calling import skill_files
    from skillpress.platform.settings import Settings
    from skillpress.schemas.events import PublishVersion, SpecSubmitted
    from skillpress.schemas.subjects import COMMANDS, EVENTS
    from tests.app import bus
    from tests.app.specs import money_spec

    httpd = FakeApi(lambda r: Reply(201, b""))
    spec = money_spec(httpd.url)
    ctx = open_app(Settings(home=tmp_path / "home", refresh_interval=0))
    try:
        blob = ctx.blobs.put(json.dumps(spec).encode())
        bus.run(
            ctx,
            EVENTS.spec_submitted,
            SpecSubmitted(submission="s", skill="pay", blob=blob, created_by="t"),
        )
        skill = versions.find_skill(ctx, "pay")
        gate = next(
            p
            for p in review.open_suggestions(ctx, skill)
            if p.group == "money" and p.kind == "approval"
        )
        review.confirm(ctx, skill, gate, "reviewer")
        from skillpress.schemas.events import AnnotationChanged

        proposed = bus.run(
            ctx,
            EVENTS.annotation_changed,
            AnnotationChanged(
                skill="pay",
                annotation_ids=[],
                change="reviewed",
                as_of=ctx.clock().isoformat(),
                submission="r",
            ),
        )[-1][1]
        version_id = publish_check.check_publish_request(ctx, "pay", proposed["version_id"], False)
        bus.run(
            ctx,
            COMMANDS.publish_version,
            PublishVersion(skill="pay", version_id=version_id, requested_by="t"),
        )
        files, _ = skill_files("pay", lambda: ctx)
    finally:
        ctx.close()
    assert b'"amount": "amount.value"' in files["create_payment.md"]
    out = tmp_path / "pay"
    write_package_dir(files, out)
    home = tmp_path / "operator"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillpress.cli.main", "mcp", str(out), "--eager"],
        cwd=str(ROOT),
        env={**os.environ, "SKILLPRESS_HOME": str(home)},
    )
    pay = {"amount": {"value": 500, "currency": "EUR"}}
    try:
        async with Client(params) as client:
            called = await client.call_tool("pay_create_payment", pay)
            # the gate holds at call time: the agent is told it waits for a person
            assert called.is_error and called.content[0].text.startswith(
                "not sent: create_payment is gated (risk "
            ), called.content[0].text
            assert "(request #1)" in called.content[0].text
            assert "skillpress approve" not in called.content[0].text  # never the agent's to run
            assert httpd.seen == [], "nothing reached the API"
            operator = open_app(Settings(home=home))
            try:
                [asked] = approvals.list_requests(operator)
                # asked in the client's name, as it said at initialize
                assert asked["requested_by"].startswith("MCP client "), asked["requested_by"]
                assert asked["requested_by"] != "MCP client "
                approvals.decide(operator, 1, True, "ops")
            finally:
                operator.close()
            granted = await client.call_tool(
                "call_operation", {"name": "create_payment", "arguments": pay}
            )
            assert not granted.is_error, granted.content[0].text
            once = await client.call_tool("pay_create_payment", pay)
            assert once.is_error and "request #2" in once.content[0].text, "a grant is used once"
    finally:
        httpd.close()
    assert [(r.method, r.path, r.body) for r in httpd.seen] == [
        ("POST", "/payments", b'{"amount":{"value":500,"currency":"EUR"}}')
    ]


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_a_followed_folder_swapped_mid_session_serves_the_new_version(tmp_path: Path) -> None:
    spec = (ROOT / "tests" / "fixtures" / "specs" / "oai-petstore-expanded.yaml").read_text()
    live = tmp_path / "live"
    for version, text in (
        ("1111111111111111", spec),
        ("2222222222222222", spec.replace("operationId: addPet", "operationId: adoptPet")),
    ):
        write_package_dir(
            derive_package(text.encode()).files, live / ".versions" / f"petstore@{version}"
        )
    os.symlink(".versions/petstore@1111111111111111", live / "petstore")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillpress.cli.main", "mcp", str(live / "petstore")],
        cwd=str(ROOT),
        env={**os.environ, "SKILLPRESS_HOME": str(tmp_path / "home")},
    )
    async with Client(params) as client:
        first = await client.call_tool("describe_operation", {"name": "add_pet"})
        assert json.loads(first.content[0].text)["version"] == "1111111111111111"
        os.symlink(".versions/petstore@2222222222222222", live / ".swap")
        os.replace(live / ".swap", live / "petstore")  # what `skillpress follow` does
        gone = await client.call_tool("describe_operation", {"name": "add_pet"})
        assert gone.is_error
        now = json.loads(
            (await client.call_tool("describe_operation", {"name": "adopt_pet"})).content[0].text
        )
        assert (now["version"], now["tool"]) == ("2222222222222222", "petstore_adopt_pet")


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
async def test_several_skills_behind_one_server_and_one_published_later(
    tmp_path: Path, discord_api: FakeApi
) -> None:
    """`mcp --all DIR`: the fixed tools take the skill, each skill sends its own credential, and
    a skill that appears in the folder mid-session is served from the next request on, with a
    client that listed tools once."""
    folder = tmp_path / "skills"
    discord = derive_package(SPEC.read_bytes(), DeriveOptions(base_url=discord_api.url))
    write_package_dir(discord.files, folder / "discord")
    pets_spec = ROOT / "tests" / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
    pets = derive_package(pets_spec.read_bytes())
    write_package_dir(pets.files, folder / "petstore")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillpress.cli.main", "mcp", "--all", str(folder)],
        cwd=str(ROOT),
        env={**os.environ, "DISCORD_API_KEY": "Bot test-token"},
    )
    async with Client(params) as client:
        assert client.instructions is not None
        assert client.instructions.startswith("2 skills.")
        assert "- `discord` — " in client.instructions and "- `petstore` — " in client.instructions
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == list(
            (
                "read_skill_file",
                "describe_operation",
                "call_operation",
                "load_tools",
                "loaded_tools",
            )
        )
        assert tools["call_operation"].input_schema["required"] == ["skill", "name"]
        body = await client.call_tool("read_skill_file", {"skill": "petstore", "path": "body.md"})
        assert body.content[0].text == pets.files["body.md"].decode()
        called = await client.call_tool(
            "call_operation", {"skill": "discord", "name": "get_gateway", "arguments": {}}
        )
        answer = json.loads(called.content[0].text)
        assert (answer["skill"], answer["status"]) == ("discord", 200)
        nowhere = await client.call_tool(
            "describe_operation", {"skill": "stripe", "name": "get_gateway"}
        )
        assert nowhere.is_error
        assert nowhere.content[0].text == "no skill 'stripe' here: one of discord, petstore"
        mixed = await client.call_tool(
            "describe_operation", {"skill": "petstore", "name": "get_gateway"}
        )
        assert mixed.is_error and "get_gateway" in mixed.content[0].text

        # published while the client is connected: served from the next request on
        swagger = ROOT / "tests" / "fixtures" / "specs" / "oai-petstore.swagger2.yaml"
        later_files = derive_package(swagger.read_bytes(), DeriveOptions(slug="swagger-pets")).files
        write_package_dir(later_files, folder / "swagger-pets")
        later = await client.call_tool(
            "describe_operation", {"skill": "swagger-pets", "name": "list_pets"}
        )
        assert not later.is_error, later.content[0].text
        assert json.loads(later.content[0].text)["skill"] == "swagger-pets"
    assert discord_api.seen[0][2]["Authorization"] == "Bot test-token"


async def test_one_bad_tool_never_takes_the_server_down_and_names_never_cross_skills(
    tmp_path: Path,
) -> None:
    """An in-process server (the SDK's client against it): a tool whose file does not load is
    left out of an eager listing and named when asked for, while everything else answers; two
    folders of the same skill are served once (a call always goes to the skill it names); a
    call without a name is told what to give."""
    from skillpress.app.serving.catalog import folder_catalog
    from skillpress.mcp.server import build_catalog_server, build_mcp_server
    from skillpress.runtime.package.skill import load_skill

    pets_spec = ROOT / "tests" / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
    files = dict(derive_package(pets_spec.read_bytes()).files)
    files["find_pets.md"] = files["find_pets.md"].replace(
        b'"type": "object"', b'"$ref": "#/types/Gone", "type": "object"', 1
    )
    server = build_mcp_server(load_skill(files, lazy=True), files, eager=True)
    async with Client(server) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert "petstore_find_pets" not in tools and "petstore_add_pet" in tools
        body = await client.call_tool("read_skill_file", {"path": "body.md"})
        assert not body.is_error
        loaded = await client.call_tool("load_tools", {"names": ["find_pets"]})
        assert loaded.is_error and "Gone" in loaded.content[0].text
        nameless = await client.call_tool("describe_operation", {})
        assert nameless.is_error and nameless.content[0].text == (
            "describe_operation: 'name' is a required property (it takes name)"
        )

    folder = tmp_path / "skills"
    gated = derive_package(pets_spec.read_bytes()).files
    write_package_dir(gated, folder / "a-pets")
    write_package_dir(gated, folder / "b-pets")  # the same package again, in another folder
    catalog = folder_catalog(folder)
    several = build_catalog_server(catalog.current())
    async with Client(several) as client:
        assert "Not served" not in (client.instructions or "")  # two skills, one per folder
        for slug in ("a-pets", "b-pets"):
            by_slug = await client.call_tool(
                "describe_operation", {"skill": slug, "name": "delete_pet"}
            )
            described = json.loads(by_slug.content[0].text)
            assert (described["skill"], described["tool"]) == (slug, f"{slug}_delete_pet")
        by_file = await client.call_tool(
            "describe_operation", {"skill": "petstore", "name": "delete_pet"}
        )
        assert by_file.is_error  # the slug a file names binds nothing
