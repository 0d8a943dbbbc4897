"""Invariants of what an API answers, as an agent is given it (`runtime/redaction.py` and
`runtime/execute.py`, `send` and `CallResult.as_dict`):

- no secret a call used comes back to the agent in any form: the key, a Basic pair and its
  password, a bearer token the runtime fetched, each as it is, without its scheme,
  JSON-escaped, percent-encoded in either case or base64, in the body or a header;
- an answer is bounded whole: its headers, the next page and what is said of the call count
  against the agent's budget with its body.

Attacked with an API that echoes the credential in whatever form hypothesis picks, through
SkillHost, MCP and the command line. (An earlier release let lowercase percent-encoding,
base64 of the key alone and a fetched token without `Bearer` through, and made an 80 KB MCP
result of X-Page-* headers against a 48 KB budget.)"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillpress.runtime.calling.fit import AGENT_BUDGET
from tests.fake_api import FakeApi, Reply, Seen, fake_api

FORMS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "json": lambda s: json.dumps(s)[1:-1],
    "json-slash": lambda s: json.dumps(s)[1:-1].replace("/", "\\/"),
    "percent": lambda s: quote(s, safe=""),
    "percent-lower": lambda s: _lower_percent(quote(s, safe="")),
    "plus": lambda s: quote_plus(s, safe=""),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base64url": lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
}


def _lower_percent(text: str) -> str:
    import re

    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), text)


class Echo:
    """An API that answers with what it is told to echo of the request's credential."""

    def __init__(self, form: str, where: str) -> None:
        self.form, self.where = form, where
        self.api = FakeApi(self._echo)
        self.url = self.api.url

    def _echo(self, request: Seen) -> Reply:
        given = request.header("X-Key") or request.header("Authorization") or ""
        bare = given.split(" ", 1)[1] if " " in given else given
        parts = [given, bare]
        if given.startswith("Basic "):
            pair = base64.b64decode(bare).decode()
            parts += [pair, pair.partition(":")[2]]
        echoed = [FORMS[self.form](p) for p in parts if p]
        headers = {"X-Request-Id": " ".join(echoed)} if self.where == "header" else {}
        return Reply(200, {"you_sent": echoed}, headers)

    def close(self) -> None:
        self.api.close()


def _package(root: Path, url: str, kind: str) -> Path:
    folder = root / "echo"
    folder.mkdir(parents=True, exist_ok=True)
    header = "X-Key" if kind == "apiKey" else "Authorization"
    (folder / "body.md").write_text(
        f"---\nname: echo\nauth:\n  header: {header}\n  kind: {kind}\n---\n\n# Echo\n\nEchoes.\n"
    )
    (folder / "look.md").write_text(
        f"---\noperation:\n  method: GET\n  url: {url}/look\n---\n\n# look\n\nLook.\n"
    )
    return folder


SECRETS = st.text(
    st.characters(codec="ascii", exclude_categories=("Cc",)), min_size=8, max_size=24
).filter(lambda s: s.strip() == s and ":" not in s)


@pytest.fixture(scope="module")
def echo() -> Iterator[Echo]:
    made = Echo("raw", "body")
    yield made
    made.close()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    secret=SECRETS,
    kind=st.sampled_from(["apiKey", "bearer", "basic"]),
    form=st.sampled_from(sorted(FORMS)),
    where=st.sampled_from(["body", "header"]),
)
def test_no_form_of_a_secret_comes_back(
    secret: str,
    kind: str,
    form: str,
    where: str,
    echo: Echo,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from skillpress.host import SkillHost

    value = f"user-name:{secret}" if kind == "basic" else secret
    echo.form, echo.where = form, where
    root = tmp_path_factory.mktemp("echo")
    _package(root, echo.url, kind)
    result = SkillHost(root).call("echo_look", {}, environ={"ECHO_API_KEY": value})
    shown = json.dumps(result.as_dict(for_agent=True)) + json.dumps(result.as_dict())
    shown += result.body.decode(errors="replace") + json.dumps(result.headers)
    for part in {secret, value}:
        for name, make in FORMS.items():
            assert make(part) not in shown, (name, make(part))


@pytest.fixture
def noisy() -> Iterator[str]:
    """An API whose answer is a 40 KB JSON body, 30 X-Page-* headers of 400 characters and a
    Link to a next page 3 KB long (all the headers an HTTP client takes: 16 KB)."""
    big_link = "<http://127.0.0.1/next?cursor=" + "c" * 3_000 + '>; rel="next"'
    headers = {f"X-Page-Note-{i}": "n" * 400 for i in range(30)} | {"Link": big_link}
    items = {"items": [{"n": i, "text": "x" * 200} for i in range(200)]}
    with fake_api(lambda r: Reply(200, items, headers)) as api:
        yield api.url


def _lists(root: Path, url: str) -> Path:
    folder = root / "noisy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "body.md").write_text("---\nname: noisy\n---\n\n# Noisy\n\nLoud answers.\n")
    (folder / "items.md").write_text(
        "---\noperation:\n  method: GET\n  url: " + url + "/items\n  query: [cursor]\n"
        "  optional: [cursor]\n  paging: {kind: cursor, param: cursor, field: [next]}\n---\n\n"
        "# items\n\nThe items.\n"
    )
    return folder


def test_an_answer_is_bounded_whole_skillhost(noisy: str, tmp_path: Path) -> None:
    from skillpress.host import SkillHost

    _lists(tmp_path, noisy)
    result = SkillHost(tmp_path).call("noisy_items", {})
    given = json.dumps(result.as_dict(for_agent=True), ensure_ascii=False)
    assert len(given.encode()) <= AGENT_BUDGET, len(given.encode())
    assert "cut" in result.as_dict(for_agent=True)


async def test_an_answer_is_bounded_whole_mcp(noisy: str, tmp_path: Path) -> None:
    from mcp import Client

    from skillpress.app.serving.calling import open_package
    from skillpress.mcp.server import build_mcp_server

    skill, files = open_package(_lists(tmp_path, noisy))
    async with Client(build_mcp_server(skill, files)) as client:
        called = await client.call_tool("call_operation", {"name": "items", "arguments": {}})
    text = called.content[0].text
    assert len(text.encode()) <= AGENT_BUDGET, len(text.encode())
    said = json.loads(text)
    assert said["headers"]["x-skillpress-headers-left-out"]
    assert all(len(v) <= 600 for v in said["headers"].values())


def test_a_fetched_token_never_comes_back(tmp_path: Path) -> None:
    """An OAuth 2 client-credentials token the runtime fetched, echoed by the API without its
    scheme, percent-encoded and in base64, with the client secret beside it: none of it comes
    back."""
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.tokens import forget_tokens
    from tests.runtime.test_client_credentials import _package

    token, secret = "fetched-token-9f8e7d6c", "client-secret-0a1b2c3d"

    said = {"X-Request-Id": base64.b64encode(token.encode()).decode()}

    def answer(request: Seen) -> Reply:
        if request.method == "POST":
            return Reply(
                200, {"access_token": token, "token_type": "Bearer", "expires_in": 60}, said
            )
        bare = (request.header("Authorization") or "").removeprefix("Bearer ")
        return Reply(200, {"token": bare, "quoted": quote(bare), "secret": secret}, said)

    forget_tokens()
    try:
        with fake_api(answer) as api:
            _package(tmp_path, f"{api.url}/token", api.url)
            host = SkillHost(tmp_path / "skills", allow_private_token_url=True)
            environ = {"PETS_CLIENT_ID": "client-id-1", "PETS_CLIENT_SECRET": secret}
            result = host.call("pets_list_pets", {}, environ=environ)
    finally:
        forget_tokens()
    shown = json.dumps(result.as_dict(for_agent=True)) + json.dumps(result.as_dict())
    assert result.status == 200 and "[redacted]" in shown
    for part in (token, secret):
        for name, make in FORMS.items():
            assert make(part) not in shown, (name, make(part))
