"""OAuth 2 client credentials: a spec's clientCredentials flow makes the runtime fetch its own
token from the token URL (held to the fetch guard), keep it until it expires, fetch it again
once on a 401, and never show the secret or the token anywhere but in the request."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import yaml

from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.host import SkillHost
from skillpress.runtime.calling.request import ExecutionFailed
from skillpress.runtime.calling.tokens import forget_tokens
from tests.cli_process import skillpress
from tests.fake_api import FakeApi, Reply, Seen

CLIENT_ID = "pets-client"
SECRET = "s3cr3t-Value-never-shown"


class _Issuer:
    """One local server that is both the token endpoint (`/token`) and the API (`/pets`): each
    token it issues is `tok-N`; a revoked one is answered 401 by the API."""

    def __init__(self) -> None:
        self.revoked: set[str] = set()
        self.expires_in: int | None = 3600
        self.refuse: dict[str, str] | None = None
        self.api = FakeApi(self._answer)
        self.url = self.api.url

    @property
    def tokens(self) -> list[dict[str, Any]]:
        """Each token request: its Authorization, its form."""
        return [
            {"authorization": r.header("Authorization"), **parse_qs(r.body.decode())}
            for r in self.api.seen
            if r.method == "POST"
        ]

    @property
    def calls(self) -> list[str | None]:
        """Each API request's Authorization."""
        return [r.header("Authorization") for r in self.api.seen if r.method == "GET"]

    def _answer(self, request: Seen) -> Reply:
        if request.method == "POST":
            if self.refuse is not None:
                return Reply(401, self.refuse)
            answer: dict[str, Any] = {
                "access_token": f"tok-{len(self.tokens)}",
                "token_type": "Bearer",
            }
            if self.expires_in is not None:
                answer["expires_in"] = self.expires_in
            return Reply(200, answer)
        auth = request.header("Authorization")
        if auth is None or auth.removeprefix("Bearer ") in self.revoked:
            return Reply(401, {"error": "invalid_token"})
        return Reply(200, [{"id": 1, "name": "Rex"}])

    def close(self) -> None:
        self.api.close()


@pytest.fixture
def issuer() -> Iterator[_Issuer]:
    forget_tokens()
    server = _Issuer()
    yield server
    server.close()
    forget_tokens()


def _spec(token_url: str, base_url: str) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": base_url}],
        "components": {
            "securitySchemes": {
                "oauth": {
                    "type": "oauth2",
                    "flows": {
                        "clientCredentials": {
                            "tokenUrl": token_url,
                            "scopes": {"pets:read": "read pets", "pets:write": "change pets"},
                        }
                    },
                }
            }
        },
        "security": [{"oauth": ["pets:read"]}],
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "List the pets.",
                    "responses": {"200": {"description": "the pets"}},
                }
            }
        },
    }


def _package(tmp_path: Path, token_url: str, base_url: str) -> Path:
    data = yaml.safe_dump(_spec(token_url, base_url)).encode()
    package = derive_package(data, DeriveOptions(slug="pets"))
    out = tmp_path / "skills" / "pets"
    for name, content in package.files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(content)
    return out


def test_derive_records_the_flow_and_says_what_the_credential_is(tmp_path: Path) -> None:
    out = _package(tmp_path, "https://auth.example.com/oauth/token", "https://api.example.com")
    auth = json.loads((out / "skill.json").read_text())["auth"]
    assert (auth["kind"], auth["header"]) == ("bearer", "Authorization")
    assert (auth["token_url"], auth["scopes"]) == (
        "https://auth.example.com/oauth/token",
        ["pets:read"],  # what the operations ask for, not every scope the flow offers
    )
    head = json.loads((out / "index.json").read_bytes().split(b"\n", 1)[0][:-15] + b"}")
    assert head["auth"] == {
        "header": "Authorization",
        "kind": "bearer",
        "token_url": "https://auth.example.com/oauth/token",
        "scopes": ["pets:read"],
    }
    assert (
        "The credential is attached for you (a token, sent as `Authorization: Bearer <token>`;"
        " or, given a client id and secret, one fetched from auth.example.com (OAuth 2 client"
        " credentials)); never send one in an argument."
    ) in (out / "body.md").read_text()


def test_the_token_is_fetched_once_kept_and_fetched_again_once_on_a_401(
    tmp_path: Path, issuer: _Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path, f"{issuer.url}/token", issuer.url)
    monkeypatch.delenv("PETS_API_KEY", raising=False)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", f"{SECRET}\r\n")  # as read from a file
    host = SkillHost(tmp_path / "skills", allow_private_token_url=True)
    assert host.call("pets_list_pets", {}).status == 200
    assert host.call("pets_list_pets", {}).status == 200
    basic = "Basic " + base64.b64encode(f"{CLIENT_ID}:{SECRET}".encode()).decode()
    assert issuer.tokens == [
        {"authorization": basic, "grant_type": ["client_credentials"], "scope": ["pets:read"]}
    ]
    assert issuer.calls == ["Bearer tok-1", "Bearer tok-1"]
    issuer.revoked.add("tok-1")
    result = host.call("pets_list_pets", {})
    assert result.status == 200 and result.tries == 2
    assert issuer.calls[2:] == ["Bearer tok-1", "Bearer tok-2"]
    assert len(issuer.tokens) == 2
    issuer.revoked.add("tok-2")
    issuer.refuse = None
    issuer.revoked.add("tok-3")  # the fresh one is refused too: once, not again and again
    result = host.call("pets_list_pets", {})
    assert result.status == 401 and issuer.calls[4:] == ["Bearer tok-2", "Bearer tok-3"]


def test_a_token_is_fetched_again_when_it_expires(
    tmp_path: Path, issuer: _Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path, f"{issuer.url}/token", issuer.url)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    issuer.expires_in = 1  # kept for half its life when that is under the 30 s margin
    host = SkillHost(tmp_path / "skills", allow_private_token_url=True)
    host.call("pets_list_pets", {})
    host.call("pets_list_pets", {})
    time.sleep(0.6)
    host.call("pets_list_pets", {})
    assert issuer.calls == ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"]


def test_a_static_token_wins_and_the_guard_holds_the_token_url(
    tmp_path: Path, issuer: _Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secure = issuer.url.replace("http:", "https:") + "/token"
    _package(tmp_path, secure, issuer.url)
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    host = SkillHost(tmp_path / "skills")  # private addresses not allowed
    with pytest.raises(ExecutionFailed) as refused:
        host.call("pets_list_pets", {})
    assert str(refused.value) == (
        f"the token endpoint {secure} resolves to 127.0.0.1, a loopback address: no"
        " client secret is sent there (set SKILLPRESS_FETCH_ALLOW_PRIVATE=true on a trusted"
        " network)"
    )
    assert issuer.tokens == [] and issuer.calls == []
    monkeypatch.setenv("PETS_API_KEY", "static-token")
    assert host.call("pets_list_pets", {}).status == 200
    assert issuer.calls == ["Bearer static-token"] and issuer.tokens == []


def test_a_token_url_that_is_not_https_is_never_sent_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget_tokens()
    _package(tmp_path, "http://auth.example.com/token", "https://api.example.com")
    monkeypatch.setenv("PETS_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("PETS_CLIENT_SECRET", SECRET)
    with pytest.raises(ExecutionFailed) as refused:
        SkillHost(tmp_path / "skills").call("pets_list_pets", {})
    assert str(refused.value) == (
        "the token endpoint http://auth.example.com/token is not https: a client secret is only"
        " ever sent over TLS"
    )
    assert refused.value.sent is False


def _cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLPRESS_", "PETS_"))}
    given = {**base, "SKILLPRESS_HOME": str(tmp_path / "home"), **env}
    return skillpress(*args, env=given, replace_env=True, timeout=60)


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_the_command_line_shows_neither_secret_nor_token(tmp_path: Path, issuer: _Issuer) -> None:
    out = _package(tmp_path, f"{issuer.url}/token", issuer.url)
    env = {
        "PETS_CLIENT_ID": CLIENT_ID,
        "PETS_CLIENT_SECRET": SECRET,
        "SKILLPRESS_FETCH_ALLOW_PRIVATE": "true",
    }
    dry = _cli(tmp_path, "call", str(out), "list_pets", "--dry-run", **env)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["headers"]["Authorization"] == (
        "<from $PETS_API_KEY, or a token fetched with $PETS_CLIENT_ID and $PETS_CLIENT_SECRET>"
    )
    sent = _cli(tmp_path, "call", str(out), "list_pets", "--json", **env)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["body"] == [{"id": 1, "name": "Rex"}]
    issuer.refuse = {"error": "invalid_client", "error_description": f"bad secret {SECRET}"}
    forget_tokens()
    refused = _cli(tmp_path, "call", str(out), "list_pets", **env)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"error: the token endpoint {issuer.url}/token refused the client credentials: 401"
        " invalid_client (bad secret <secret>)"
    )
    nothing = _cli(tmp_path, "call", str(out), "list_pets", "--dry-run")
    assert nothing.returncode == 0
    for shown in (dry, sent, refused, nothing):
        assert SECRET not in shown.stdout + shown.stderr
        assert "tok-" not in shown.stdout + shown.stderr
    unset = _cli(tmp_path, "call", str(out), "list_pets", SKILLPRESS_FETCH_ALLOW_PRIVATE="true")
    assert unset.stderr.startswith(
        "warning: $PETS_API_KEY (or $PETS_CLIENT_ID and $PETS_CLIENT_SECRET) is not set;"
        " sending without Authorization"
    )


def test_which_flows_the_runtime_serves_and_what_it_says_of_the_others() -> None:
    from skillpress.derive.auth import auth_hint, client_credentials_url

    assert (
        client_credentials_url(
            {"type": "oauth2", "flow": "application", "tokenUrl": "https://a.example/t"}
        )
        == "https://a.example/t"
    )  # Swagger 2.0's name for it
    for not_served in (
        {"type": "oauth2", "flows": {"authorizationCode": {"tokenUrl": "https://a.example/t"}}},
        {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/relative/token"}}},
        {"type": "oauth2", "flow": "accessCode", "tokenUrl": "https://a.example/t"},
        {"type": "http", "scheme": "bearer"},
    ):
        assert client_credentials_url(not_served) is None
    code_only = {
        "header": "Authorization",
        "kind": "bearer",
        "scheme": "oauth",
        "schemes": {"oauth": {"kind": "oauth2", "header": "Authorization", "servable": True}},
    }
    assert auth_hint(code_only) == (
        "an OAuth 2 access token obtained outside (no sign-in flow is run here), sent as"
        " `Authorization: Bearer <token>`"
    )


@pytest.mark.integration  # an MCP server as a process, beside the issuer
@pytest.mark.parametrize("every", [False, True], ids=["one-skill", "all"])
async def test_an_mcp_server_fetches_its_token_where_the_operator_allows_it(
    tmp_path: Path, issuer: _Issuer, every: bool
) -> None:
    """SKILLPRESS_FETCH_ALLOW_PRIVATE reaches an MCP server's credential as it does a call's:
    with it, the token comes from the private token URL and the call goes through; without it,
    the guard refuses to send the secret to it."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    out = _package(tmp_path, f"{issuer.url}/token", issuer.url)
    target = ["--all", str(out.parent)] if every else [str(out)]
    arguments = {"name": "list_pets", "arguments": {}} | ({"skill": "pets"} if every else {})
    answers = []
    for allowed in ("true", "false"):
        forget_tokens()
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "skillpress.cli.main", "mcp", *target],
            env={
                **os.environ,
                "PETS_CLIENT_ID": CLIENT_ID,
                "PETS_CLIENT_SECRET": SECRET,
                "SKILLPRESS_FETCH_ALLOW_PRIVATE": allowed,
                "SKILLPRESS_HOME": str(tmp_path / "home"),
            },
        )
        async with Client(params) as client:
            answers.append(await client.call_tool("call_operation", arguments))
    allowed_answer, refused = answers
    assert not allowed_answer.is_error, allowed_answer.content
    assert json.loads(allowed_answer.content[0].text)["body"] == [{"id": 1, "name": "Rex"}]
    assert len(issuer.tokens) == 1 and issuer.calls == ["Bearer tok-1"]
    assert refused.is_error and refused.content[0].text == (
        f"the token endpoint {issuer.url}/token is not https: a client secret is only ever sent"
        " over TLS"
    )
    for shown in answers:
        assert SECRET not in shown.content[0].text
