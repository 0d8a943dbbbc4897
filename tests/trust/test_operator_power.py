"""Invariants of what a caller can make the server do beside its role:

- the token a server writes into `<home>/api.json` for command lines on its home decides no
  gated call and makes no token (`api/deps.py`, `Decider`): reading the home hands no process
  an operator's power;
- a scrape's labels are a closed set: no request grows `/metrics` (`platform/metrics.py`,
  `observe_http`);
- `run --approve` says it approves every gated call of the run, values a step computes from
  an earlier answer included.

(An earlier release's api.json held a plain operator token that granted and minted without
SKILLPRESS_OPERATOR_TOKEN, and 200 made-up HTTP methods grew /metrics from 25 KB to 63 KB.)"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from skillpress.app.base.context import AppContext, open_app
from skillpress.app.records import approval_requests as approvals
from skillpress.platform.settings import Settings
from tests.trust.harness import N, race


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, str, AppContext]]:
    """The API as `up` and `serve` run it: its operators, and the command line's link token."""
    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators
    from skillpress.platform.local_api import local_operator

    ctx = open_app(Settings(home=tmp_path / "home", refresh_interval=0))
    operators = load_operators(ctx.settings.home, None, "127.0.0.1")
    link = secrets.token_urlsafe(32)
    operators.own[local_operator(operators.tokens)] = link
    with TestClient(create_app(ctx, operators, None)) as client:
        yield client, link, ctx
    ctx.close()


def test_the_link_token_decides_nothing_and_mints_nothing(
    served: tuple[TestClient, str, AppContext],
) -> None:
    client, link, ctx = served
    asked = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", {"b": "1"}, "agent")
    as_link = {"Authorization": f"Bearer {link}"}

    def grant(i: int) -> int:
        answer = client.post(
            f"/v1/approvals/{asked.id}/decide", headers=as_link, json={"grant": True}
        )
        return answer.status_code

    assert race(N, grant) == [403] * N
    minted = client.post("/v1/tokens", headers=as_link, json={"name": "x", "role": "operator"})
    assert minted.status_code == 403 and "a person's operator token" in minted.json()["detail"]
    assert approvals.list_requests(ctx)[0]["status"] == "pending"
    # what a command line on the home does without an operator's token, it does through it
    assert client.get("/v1/approvals", headers=as_link).status_code == 200
    assert client.get("/v1/tokens", headers=as_link).status_code == 200
    # and a person's operator token still decides
    operator = {"Authorization": f"Bearer {_operator(ctx)}"}
    decided = client.post(
        f"/v1/approvals/{asked.id}/decide", headers=operator, json={"grant": True}
    )
    assert decided.status_code == 200 and decided.json()["status"] == "granted"


def _operator(ctx: AppContext) -> str:
    from skillpress.app.base.roles import OPERATOR, mint_token

    return mint_token(ctx.settings, "ops-alice", OPERATOR)


def test_no_request_grows_the_scrape(served: tuple[TestClient, str, AppContext]) -> None:
    client, _, _ = served

    def series() -> set[str]:
        text = client.get("/metrics").text
        return {ln.split(" ")[0] for ln in text.splitlines() if ln.startswith("skillpress_http")}

    client.request("BREW", "/healthz")  # one of each kind: the label sets they make
    client.request("M", "/made/up/path/0")
    series()  # (the scrape's own route counted too)
    before = series()
    for i in range(200):
        client.request(f"BREW{i}", "/healthz")
        client.request(f"M{i}", f"/made/up/path/{i}")
    after = series()
    assert after == before, sorted(after - before)
    assert not any("BREW" in s or "made/up" in s for s in after)


def test_run_approve_says_what_it_approves() -> None:
    from skillpress.cli.main import app

    said = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "300"})
    text = " ".join(said.output.split())
    assert "approve every gated call this run makes" in text
    assert "values a step computes from an earlier answer" in text
