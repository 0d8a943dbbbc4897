"""Two roles, one line between them, tried from the agent's side: tokens are kept as digests; once
a home has an operator, only an operator makes or revokes tokens; a runtime's token reads
published versions, asks for approvals and waits on them, and can grant, deny, publish, annotate
or mint nothing; no message an agent is shown names a command that decides."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from skillpress.api.app import create_app
from skillpress.api.auth import load_operators
from skillpress.app.base.context import AppContext, open_app
from skillpress.app.base.roles import (
    RUNTIME,
    add_token_as,
    mint_token,
    operator_for,
    revoke_as,
    tokens_file,
)
from skillpress.errors import Refused
from skillpress.platform.operator_tokens import TokenRefused, read_tokens
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.subjects import EVENTS
from tests.app import bus

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", refresh_interval=0)


def test_tokens_are_kept_as_digests_and_an_old_plain_file_is_hashed_on_read(
    settings: Settings,
) -> None:
    secret = add_token_as(settings, "ops-alice", "operator", None)
    path = tokens_file(settings)
    text = path.read_text()
    assert secret not in text and "ops-alice operator sha256:" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert operator_for(settings, secret) == "ops-alice"
    # a file an earlier release wrote (NAME SECRET) works as it did, and is hashed at once
    path.write_text("ops-old plain-secret-of-the-old-release\n")
    assert operator_for(settings, "plain-secret-of-the-old-release") == "ops-old"
    assert "plain-secret-of-the-old-release" not in path.read_text()
    assert read_tokens(path)["ops-old"].role == "operator"


def test_once_an_operator_exists_only_an_operator_makes_or_revokes_a_token(
    settings: Settings,
) -> None:
    first = add_token_as(settings, "ops-alice", "operator", None)  # the bootstrap
    with pytest.raises(Refused, match="making a token needs an operator's token"):
        add_token_as(settings, "mallory", "operator", None)
    runtime = add_token_as(settings, "follower", RUNTIME, first)
    with pytest.raises(Refused, match="holds follower's runtime token"):
        add_token_as(settings, "mallory", "operator", runtime)
    with pytest.raises(Refused, match="holds no token known here"):
        add_token_as(settings, "mallory", "operator", "made-up")
    with pytest.raises(Refused, match="holds follower's runtime token"):
        operator_for(settings, runtime)  # a runtime's token decides no gated call
    with pytest.raises(Refused, match="revoking a token needs an operator's token"):
        revoke_as(settings, "ops-alice", runtime)
    with pytest.raises(TokenRefused, match="is the last operator"):
        revoke_as(settings, "ops-alice", first)
    assert sorted(read_tokens(tokens_file(settings))) == ["follower", "ops-alice"]


def test_the_command_line_will_not_mint_an_operator_for_an_agents_shell(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.cli.main import app

    monkeypatch.setenv("SKILLPRESS_HOME", str(settings.home))
    monkeypatch.delenv("SKILLPRESS_OPERATOR_TOKEN", raising=False)
    runner = CliRunner()
    made = runner.invoke(app, ["token", "add", "ops-alice"])
    assert made.exit_code == 0
    assert made.stderr.startswith("an operator token for ops-alice;"), made.stderr  # #55.8
    secret = made.stdout.strip()
    refused = runner.invoke(app, ["token", "add", "anyone"])
    assert refused.exit_code == 2
    assert "making a token needs an operator's token" in refused.output
    assert "token add" not in refused.output  # it names no command that mints
    monkeypatch.setenv("SKILLPRESS_OPERATOR_TOKEN", secret)
    follower = runner.invoke(app, ["token", "add", "follower", "--role", "runtime"])
    assert follower.exit_code == 0
    assert follower.stderr.startswith("a runtime token for follower;"), follower.stderr
    listed = runner.invoke(app, ["token", "list"]).stdout.splitlines()
    assert [ln.split()[:3] for ln in listed] == [
        ["follower", "runtime", "made"],
        ["ops-alice", "operator", "made"],
    ]
    assert secret not in "".join(listed)


def _published_and_proposed(ctx: AppContext) -> tuple[str, str]:
    """Hollowbrook published once, then a proposal on top (a changed summary)."""
    from skillpress.app.records import publish_check
    from skillpress.schemas.events import PublishVersion
    from skillpress.schemas.subjects import COMMANDS

    def submit(data: bytes, name: str) -> str:
        event = SpecSubmitted(
            submission=name, skill="hollowbrook", blob=ctx.blobs.put(data), created_by="t"
        )
        found = [
            b for s, b in bus.run(ctx, EVENTS.spec_submitted, event) if s == EVENTS.version_proposed
        ]
        return str(found[-1]["version_id"])

    first = submit(HOLLOWBROOK.read_bytes(), "one")
    checked = publish_check.check_publish_request(ctx, "hollowbrook", first, False)
    bus.run(
        ctx,
        COMMANDS.publish_version,
        PublishVersion(skill="hollowbrook", version_id=checked, requested_by="t"),
    )
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    doc["paths"]["/rooms"]["get"]["summary"] = "Every room, and its price tonight."
    second = submit(yaml.safe_dump(doc, sort_keys=False).encode(), "two")
    return first, second


@pytest.fixture
def api(settings: Settings) -> Iterator[tuple[TestClient, str, str, AppContext]]:
    ctx = open_app(settings)
    operators = load_operators(settings.home, None, "127.0.0.1")
    assert operators.generated is not None
    runtime = mint_token(settings, "follower", RUNTIME)
    with TestClient(create_app(ctx, operators, None)) as client:
        yield client, operators.generated, runtime, ctx
    ctx.close()


def test_a_runtime_token_reads_published_versions_and_asks_and_decides_nothing(
    api: tuple[TestClient, str, str, AppContext],
) -> None:
    client, operator, runtime, ctx = api
    first, proposed = _published_and_proposed(ctx)
    as_runtime = {"Authorization": f"Bearer {runtime}"}
    as_operator = {"Authorization": f"Bearer {operator}"}
    live = client.get("/v1/live", headers=as_runtime)
    assert live.status_code == 200 and live.json()[0]["version_id"] == first
    archive = client.get(f"/v1/skills/hollowbrook/versions/{first}/archive", headers=as_runtime)
    assert archive.status_code == 200
    # a proposal nobody published is not the runtime's to read
    hidden = client.get(f"/v1/skills/hollowbrook/versions/{proposed}/files", headers=as_runtime)
    assert hidden.status_code == 404 and "a runtime reads published versions" in hidden.text
    assert (
        client.get(f"/v1/skills/hollowbrook/versions/{proposed}", headers=as_operator).status_code
        == 200
    )
    # asking and waiting
    asked = client.post(
        "/v1/approvals",
        headers=as_runtime,
        json={
            "skill": "hollowbrook",
            "operation": "cancel_booking",
            "risk": "high",
            "bound": {"booking_id": "bk-1"},
            "requested_by": "an MCP client",
        },
    ).json()
    assert (asked["status"], asked["requested_by"]) == ("pending", "an MCP client (as follower)")
    waited = client.post(f"/v1/approvals/{asked['id']}/consume", headers=as_runtime).json()
    assert waited["status"] == "pending"
    # everything that decides, publishes, annotates or mints: refused, each a 403
    for method, path, body in (
        ("POST", f"/v1/approvals/{asked['id']}/decide", {"grant": True}),
        ("GET", "/v1/approvals", None),
        ("POST", f"/v1/skills/hollowbrook/versions/{proposed}/publish", {"remove_gates": True}),
        ("POST", "/v1/skills/hollowbrook/annotations", {"kind": "skill_note", "value": "x"}),
        ("POST", "/v1/tokens", {"name": "mallory", "role": "operator"}),
        ("GET", "/v1/skills", None),
        ("GET", "/v1/skills/hollowbrook/diff", None),
        # deciding a suggestion is a person's, dismissing as much as confirming
        ("POST", "/v1/skills/hollowbrook/suggestions/dismiss", {"groups": ["deletes"]}),
        ("POST", "/v1/skills/hollowbrook/suggestions/confirm", {"groups": ["deletes"]}),
    ):
        answer = client.request(method, path, headers=as_runtime, json=body)
        assert answer.status_code == 403, (path, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert "follower's token is a runtime's" in answer.json()["detail"]
    # and the console does not sign a runtime in
    page = client.post("/sign-in", data={"token": runtime}, follow_redirects=False)
    assert page.status_code == 401 and "only an operator signs in here" in page.text
    # the operator decides; the runtime's next consume takes the grant, once
    decided = client.post(
        f"/v1/approvals/{asked['id']}/decide", headers=as_operator, json={"grant": True}
    )
    assert decided.status_code == 200 and decided.json()["decided_by"] == "operator"
    used = client.post(f"/v1/approvals/{asked['id']}/consume", headers=as_runtime).json()
    assert used["status"] == "used"
    again = client.post(f"/v1/approvals/{asked['id']}/consume", headers=as_runtime)
    # spent: a second consume is not a second `used` (it would send a second call)
    assert again.status_code == 409
    assert again.json()["type"] == "urn:skillpress:problem:grant-spent"
    minted = client.post(
        "/v1/tokens", headers=as_operator, json={"name": "host-2", "role": "runtime"}
    ).json()
    assert minted["role"] == "runtime" and len(minted["token"]) > 30
    rows = client.get("/v1/tokens", headers=as_operator).json()
    assert {r["name"]: r["role"] for r in rows} == {
        "follower": "runtime",
        "host-2": "runtime",
        "operator": "operator",
    }
    assert minted["token"] not in json.dumps(rows)


def test_no_message_an_agent_is_shown_names_a_command_that_decides(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from mcp import Client

    from skillpress.app.serving.calling import open_package
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper
    from skillpress.cli.main import app
    from skillpress.mcp.server import build_mcp_server

    package = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook-skill"
    monkeypatch.setenv("SKILLPRESS_HOME", str(settings.home))
    monkeypatch.delenv("SKILLPRESS_OPERATOR_TOKEN", raising=False)
    said = CliRunner().invoke(
        app,
        [
            "call",
            str(package),
            "cancel_booking",
            "--args",
            '{"booking_id": "bk-1"}',
            "--approval-timeout",
            "0",
        ],
    )
    assert said.exit_code == 1 and "waiting for approval #1" in said.output
    approving = CliRunner().invoke(
        app,
        ["call", str(package), "cancel_booking", "--args", '{"booking_id": "bk-2"}', "--approve"],
    )
    assert approving.exit_code == 2 and "needs an operator's token" in approving.output
    skill, files = open_package(package)
    server = build_mcp_server(
        skill,
        files,
        gatekeeper=agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), skill.slug),
    )

    async def over_mcp() -> str:
        async with Client(server) as client:
            held = await client.call_tool(
                "call_operation", {"name": "cancel_booking", "arguments": {"booking_id": "bk-3"}}
            )
            return str(held.content[0].text)

    told = asyncio.run(over_mcp())
    assert "waits for a person's approval" in told
    for text in (said.output, approving.output, told):
        for command in ("skillpress approve", "skillpress deny", "token add", "approve "):
            assert command not in text, (command, text)
