"""What an API sends back is data, never a weapon: a token endpoint that echoes the client secret,
headers that do not parse after a write was done, answers nested 10,000 deep, a token endpoint
that drips, a token refused after a plain write, a credential that is not set. Each is tried on
the faces an agent reaches (SkillHost, MCP, the command line) and every one goes through the same
code in `runtime.execute`."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

from skillpress.app.serving.calling import call_setup, open_package
from skillpress.host import SkillHost
from skillpress.mcp.server import build_mcp_server
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.fit import AGENT_BUDGET
from skillpress.runtime.calling.request import ExecutionFailed
from skillpress.runtime.calling.tokens import forget_tokens
from tests.runtime.hostile_api import (
    Answer,
    HostileApi,
    Seen,
    hostile_api,
    oauth_package,
    write_package,
)

CLIENT_ID = "pets-client"
SECRET = "s3cr3t-Value-never-shown"
BASIC = "Basic " + base64.b64encode(f"{CLIENT_ID}:{SECRET}".encode()).decode()

BODY = "---\nname: shop\nauth:\n  header: X-Api-Key\n---\n\n# Shop\n\nOrders.\n"


def _op(method: str, url: str, path: str, extra: str = "") -> str:
    return f"---\noperation:\n  method: {method}\n  url: {url}{path}\n{extra}---\n\n# op\n\nAn operation.\n"


@pytest.fixture
def api() -> Iterator[HostileApi]:
    forget_tokens()
    yield from hostile_api()
    forget_tokens()


@pytest.fixture
def shop(tmp_path: Path, api: HostileApi) -> Path:
    return write_package(
        tmp_path / "skills",
        "shop",
        BODY,
        {
            "create_order": _op("POST", api.url, "/orders", "  body: [item]\n"),
            "get_report": _op("GET", api.url, "/report"),
        },
    )


def _mcp_call(folder: Path, name: str, arguments: dict[str, Any], **kw: Any) -> Any:
    import asyncio

    skill, files = open_package(folder)
    setup = call_setup(skill, None, kw.pop("limits", CallLimits()), None, True)
    server = build_mcp_server(skill, files, credential=setup.credential, limits=setup.limits, **kw)

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("call_operation", {"name": name, "arguments": arguments})

    return asyncio.run(go())


# 9 -------------------------------------------------------------------------------------------


def test_the_client_secret_a_token_endpoint_echoes_never_leaves_the_runtime(
    tmp_path: Path, api: HostileApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    pair = f"{CLIENT_ID}:{SECRET}"

    def token(seen: Seen) -> Answer:
        return Answer(
            400,
            body={
                "error": f"bad client {pair}",
                "error_description": f"got {seen.headers['Authorization']} and {SECRET}",
                "hint": BASIC.removeprefix("Basic "),
            },
        )

    api.routes["/token"] = token
    folder = oauth_package(tmp_path / "skills", f"{api.url}/token", api.url)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    host = SkillHost(folder.parent, allow_private_token_url=True)
    with pytest.raises(ExecutionFailed) as failed:
        host.call("pets_list_pets", {})
    said = str(failed.value)
    assert "refused the client credentials: 400" in said
    for form in (SECRET, BASIC, BASIC.removeprefix("Basic ")):
        assert form not in said
    over_mcp = _mcp_call(folder, "list_pets", {})
    assert over_mcp.is_error and "refused the client credentials" in over_mcp.content[0].text
    assert SECRET not in over_mcp.content[0].text
    assert BASIC.removeprefix("Basic ") not in over_mcp.content[0].text


def test_an_api_that_echoes_the_token_or_the_key_gives_the_agent_neither(
    tmp_path: Path, api: HostileApi, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.routes["/token"] = lambda seen: Answer(
        body={"access_token": "tok-abcdef-123", "token_type": "Bearer", "expires_in": 3600}
    )
    api.routes["/pets"] = lambda seen: Answer(
        body={"you_sent": seen.headers.get("Authorization")},
        headers={"X-Echo": seen.headers.get("Authorization", "")},
    )
    api.routes["/report"] = lambda seen: Answer(body={"key": seen.headers.get("X-Api-Key")})
    folder = oauth_package(tmp_path / "skills", f"{api.url}/token", api.url)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    monkeypatch.setenv("SHOP_API_KEY", "shop-key-0123456789")
    host = SkillHost(folder.parent, allow_private_token_url=True)
    got = host.call("pets_list_pets", {})
    assert got.body_value() == {"you_sent": "[redacted]"}
    assert got.headers["x-echo"] == "[redacted]"
    assert api.seen[-1].headers["Authorization"] == "Bearer tok-abcdef-123"  # it was sent
    report = host.call("shop_get_report", {})
    assert report.body_value() == {"key": "[redacted]"}


# 10 ------------------------------------------------------------------------------------------

HOSTILE_HEADERS = {
    "X-RateLimit-Remaining": "²",
    "Retry-After": "²",
}


def test_headers_that_do_not_parse_never_turn_a_done_write_into_an_error(
    api: HostileApi, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter(
        [
            Answer(201, HOSTILE_HEADERS, {"id": "o1"}),
            Answer(201, {"Retry-After": "9" * 400}, {"id": "o2"}),
            Answer(503, {"Retry-After": "9" * 400, "X-RateLimit-Reset": "1e999"}, {"busy": 1}),
        ]
    )
    api.routes["/orders"] = lambda seen: next(answers)
    monkeypatch.setenv("SHOP_API_KEY", "k-0123456789")
    host = SkillHost(shop.parent)
    first = host.call("shop_create_order", {"item": "x"})
    shown = first.as_dict(for_agent=True)
    assert (shown["status"], shown["body"]) == (201, {"id": "o1"})
    assert shown["ignored_headers"] == [
        'x-ratelimit-remaining: "²" is not a number',
        'retry-after: "²" is neither seconds nor a date',
    ]
    second = host.call("shop_create_order", {"item": "y"})
    assert second.as_dict(for_agent=True)["status"] == 201
    third = host.call("shop_create_order", {"item": "z"})
    shown = third.as_dict(for_agent=True)
    assert shown["status"] == 503 and "retry_at" not in shown
    assert [s.method for s in api.seen] == ["POST", "POST", "POST"]  # each sent exactly once
    # the same answers over MCP and the command line: a result, never a protocol error
    answers = iter([Answer(201, HOSTILE_HEADERS, {"id": "o3"})])
    result = _mcp_call(shop, "create_order", {"item": "w"})
    assert not result.is_error and json.loads(result.content[0].text)["status"] == 201
    answers = iter([Answer(201, HOSTILE_HEADERS, {"id": "o4"})])
    from skillpress.cli.main import app

    done = CliRunner().invoke(app, ["call", str(shop), "create_order", "--args", '{"item": "v"}'])
    assert done.exit_code == 0, done.output
    assert len(api.seen) == 5


# 11, 12 --------------------------------------------------------------------------------------


def _deep(levels: int, leaf: Any = "x") -> str:
    return '{"a":' * levels + json.dumps(leaf) + "}" * levels


def test_an_answer_ten_thousand_levels_deep_is_text_not_a_crash(
    api: HostileApi, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.routes["/report"] = lambda seen: Answer(body=_deep(10_000))
    host = SkillHost(shop.parent)
    got = host.call("shop_get_report", {})
    assert got.status == 200 and isinstance(got.body_value(), str)
    shown = got.as_dict(for_agent=True)
    assert isinstance(shown["body"], str) and len(json.dumps(shown)) < 2 * AGENT_BUDGET
    result = _mcp_call(shop, "get_report", {})
    assert not result.is_error and json.loads(result.content[0].text)["status"] == 200
    from skillpress.cli.main import app

    done = CliRunner().invoke(app, ["call", str(shop), "get_report"])
    assert done.exit_code == 0 and "Traceback" not in done.output


def test_what_mcp_sends_is_what_it_measured_however_deep_the_answer(
    api: HostileApi, shop: Path
) -> None:
    # 11 KB, 500 levels deep (as text), and 90 levels deep with wide leaves (as JSON)
    api.routes["/report"] = lambda seen: Answer(body=_deep(500, "y" * 5000))
    result = _mcp_call(shop, "get_report", {})
    assert len(result.content[0].text.encode()) <= AGENT_BUDGET + 1024
    wide = {"rows": [json.loads(_deep(90, "z" * 40)) for _ in range(40)]}
    api.routes["/report"] = lambda seen: Answer(body=wide)
    result = _mcp_call(shop, "get_report", {})
    text = result.content[0].text
    assert len(text.encode()) <= AGENT_BUDGET + 1024
    shown = json.loads(text)
    assert {"at": "$.rows[0]" + ".a" * 30, "deeper_than": 32} in shown["cut"]  # 32 kept


def test_a_model_is_sent_compact_json_without_padding(api: HostileApi, shop: Path) -> None:
    """#58.3: a small answer was sent indented (22–25% more tokens on GitHub's own response
    examples); a model reads the same data compact, the budget counting what is sent."""
    rows = [{"id": n, "name": f"row {n}", "tags": ["a", "b"]} for n in range(20)]
    api.routes["/report"] = lambda seen: Answer(body={"rows": rows})
    text = _mcp_call(shop, "get_report", {}).content[0].text
    assert "\n" not in text and ", " not in text and '": ' not in text, text[:200]
    assert json.loads(text)["body"] == {"rows": rows}


def test_a_json_answer_past_the_read_limit_is_still_cut_by_its_structure(
    api: HostileApi, shop: Path
) -> None:
    rows = [{"id": n, "name": f"row {n}", "pad": "p" * 50} for n in range(40_000)]
    api.routes["/report"] = lambda seen: Answer(body={"total": 40_000, "rows": rows})
    host = SkillHost(shop.parent, limits=CallLimits(max_response_bytes=1_000_000))
    got = host.call("shop_get_report", {})
    assert got.truncated
    shown = got.as_dict(for_agent=True)
    assert shown["body"]["total"] == 40_000
    assert shown["body"]["rows"][0] == rows[0]
    assert shown["cut"][0] == {"at": "$", "read_limit": 1_000_000, "kept_whole_elements": True}
    assert len(json.dumps(shown["body"], separators=(",", ":"))) <= AGENT_BUDGET


# 13 ------------------------------------------------------------------------------------------


def test_a_dripping_token_endpoint_cannot_hold_a_call_past_its_timeout(
    tmp_path: Path, api: HostileApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.routes["/token"] = lambda seen: Answer(
        body={"access_token": "t" * 200, "token_type": "Bearer"}, drip=0.5
    )
    folder = oauth_package(tmp_path / "skills", f"{api.url}/token", api.url)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    host = SkillHost(folder.parent, allow_private_token_url=True, limits=CallLimits(timeout=2))
    errors: list[str] = []

    def caller() -> None:
        try:
            host.call("pets_list_pets", {})
        except ExecutionFailed as exc:
            errors.append(str(exc))

    started = time.monotonic()
    callers = [threading.Thread(target=caller) for _ in range(3)]  # two queue behind the first
    for t in callers:
        t.start()
    for t in callers:
        t.join(60)
    assert time.monotonic() - started < 30  # a hang guard: each call is held to its 2 s
    assert len(errors) == 3 and all("did not answer within" in e for e in errors)
    assert not any(s.path == "/pets" for s in api.seen)


def test_the_timeout_bounds_every_try_together_and_says_how_many(
    api: HostileApi, shop: Path
) -> None:
    api.routes["/report"] = lambda seen: Answer(body={"slow": True}, drip=0.4)
    host = SkillHost(shop.parent, limits=CallLimits(timeout=2, retries=5, max_wait=30))
    started = time.monotonic()
    with pytest.raises(ExecutionFailed, match=r"no answer within 2 s \(\d+ tr(y|ies)\)"):
        host.call("shop_get_report", {})
    assert time.monotonic() - started < 20  # a hang guard


# 14 ------------------------------------------------------------------------------------------


def test_a_token_refused_after_a_plain_write_is_never_a_second_write(
    tmp_path: Path, api: HostileApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued: list[str] = []

    def token(seen: Seen) -> Answer:
        issued.append(f"tok-{len(issued) + 1}")
        return Answer(body={"access_token": issued[-1], "token_type": "Bearer", "expires_in": -5})

    api.routes["/token"] = token
    api.routes["/pets"] = lambda seen: Answer(401, body={"error": "invalid_token"})
    folder = oauth_package(tmp_path / "skills", f"{api.url}/token", api.url)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    host = SkillHost(folder.parent, allow_private_token_url=True)
    got = host.call("pets_add_pet", {"name": "Rex"})
    assert got.status == 401 and "call again" in (got.not_retried or "")
    assert [s.method for s in api.seen if s.path == "/pets"] == ["POST"]
    # expires_in -5: used for its call, never kept; the next call fetches anew
    host.call("pets_list_pets", {})
    assert issued[:2] == ["tok-1", "tok-2"]


def test_over_mcp_a_missing_credential_is_said_in_the_result(
    api: HostileApi, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.routes["/report"] = lambda seen: Answer(body={"ok": True})
    monkeypatch.delenv("SHOP_API_KEY", raising=False)
    result = _mcp_call(shop, "get_report", {})
    shown = json.loads(result.content[0].text)
    assert shown["credential_missing"] == "$SHOP_API_KEY is not set: sent without X-Api-Key"
    monkeypatch.setenv("SHOP_API_KEY", "k-0123456789")
    shown = json.loads(_mcp_call(shop, "get_report", {}).content[0].text)
    assert "credential_missing" not in shown
