"""Invariants of the approvals a runtime reaches with its own token (`app/records/approval_requests`:
every read and consume scoped to the asking token; `settle_asked` evaluating the live gate):

- a runtime reads and consumes only the requests it made; an identical call of another
  runtime's asks on its own request, never on another's grant;
- an automatic approval is the server's evaluation of the live version's gate on the call's
  arguments, never a client's claim (`auto`, `risk`, a package that says its gate is laxer);
- every record names the token that asked.

Attacked through the HTTP API with two runtimes' real tokens and through SkillHost's
`api_gatekeeper`, on SQLite and PostgreSQL. (An earlier release let one runtime read another's
request with its bound values, use up its grant, and have `{"auto": true, "bound": {"amount":
999999}}` recorded as approved by its gate with no runtime named.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.app.records import approval_requests as approvals
from skillpress.app.serving.calling import skill_files
from skillpress.platform.settings import Settings
from tests.app.specs import money_spec
from tests.fake_api import FakeApi
from tests.trust.harness import PAY_GATE, N, Served, publish_gated, race, served_api


@pytest.fixture
def api(settings: Settings, pay_api: FakeApi) -> Iterator[Served]:
    with served_api(settings) as served:
        publish_gated(served.ctx, money_spec(pay_api.url), "pay", "create_payment", PAY_GATE)
        yield served


def _as(api: Served, token: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {token}"})


CANCEL = {"skill": "hollowbrook", "operation": "cancel_booking", "arguments": {"booking_id": "b1"}}


def test_a_runtime_reads_and_consumes_only_its_own_requests(api: Served) -> None:
    alice, mallory = api.runtime_token("alice-host"), api.runtime_token("mallory-host")
    with _as(api, alice) as a, _as(api, mallory) as m, _as(api, api.operator) as ops:
        asked = a.post("/v1/approvals", json=CANCEL).json()
        assert (asked["status"], asked["token"]) == ("pending", "alice-host")
        # another runtime's identical call is its own request, never a share of alice's
        theirs = m.post("/v1/approvals", json=CANCEL).json()
        assert theirs["id"] != asked["id"] and theirs["token"] == "mallory-host"
        seen = m.get(f"/v1/approvals/{asked['id']}")
        assert seen.status_code == 404 and "b1" not in seen.text
        ops.post(f"/v1/approvals/{asked['id']}/decide", json={"grant": True}).raise_for_status()

        def steal(i: int) -> int:
            with _as(api, mallory) as c:
                return c.post(f"/v1/approvals/{asked['id']}/consume").status_code

        assert race(N, steal) == [404] * N
        # an operator reads any request; alice's grant is still hers, once
        assert ops.get(f"/v1/approvals/{asked['id']}").json()["status"] == "granted"
        assert a.post(f"/v1/approvals/{asked['id']}/consume").json()["status"] == "used"


def _ask(api: Served, token: str, body: dict[str, Any]) -> dict[str, Any]:
    with _as(api, token) as c:
        answer = c.post("/v1/approvals", json=body)
        answer.raise_for_status()
        return dict(answer.json())


def test_an_automatic_approval_is_the_servers_finding(api: Served) -> None:
    token = api.runtime_token("host")
    pay = {"skill": "pay", "operation": "create_payment"}
    claimed = _ask(
        api, token, {**pay, "auto": True, "risk": "low", "bound": {"amount": 999999}}
    )  # the earlier shape, claiming its way through
    assert (claimed["status"], claimed["risk"], claimed["decided_by"]) == ("pending", "high", None)
    small = {"amount": {"value": 10, "currency": "EUR"}}
    auto = _ask(api, token, {**pay, "arguments": small, "auto": False})
    assert (auto["status"], auto["decided_by"], auto["token"]) == (
        "auto",
        "its gate (auto_below)",
        "host",
    )
    for held in (
        {"amount": {"value": 10}},  # no currency: never automatic (#52.7)
        {"amount": {"value": 10, "currency": "USD"}},  # not the threshold's currency
        {"amount": {"value": 50, "currency": "EUR"}},  # not under it
        {"amount": {"value": -1, "currency": "EUR"}},  # a negative amount is never small
    ):
        found = _ask(api, token, {**pay, "arguments": held, "auto": True})
        assert found["status"] == "pending", (held, found)
    rows = approvals.list_requests(api.ctx, everything=True)
    assert all(r["token"] == "host" for r in rows)
    assert all(r["requested_by"] == "host" for r in rows)


def test_skillhost_through_the_api_cannot_claim_a_laxer_gate(
    api: Served, pay_api: FakeApi, tmp_path: Path
) -> None:
    """The host's package says its gate lets anything under a billion through; the server's
    live gate is what decides."""
    from skillpress.app.serving.gatekeepers import api_gatekeeper
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.calls import GateClosed

    files, _ = skill_files("pay", lambda: api.ctx)
    lax = files["create_payment.md"].replace(b'"auto_below": 50', b'"auto_below": 1000000000')
    assert lax != files["create_payment.md"]
    write_package_dir({**files, "create_payment.md": lax}, tmp_path / "skills" / "pay")
    gate = api_gatekeeper(api.url, api.runtime_token("host"), "pay")
    host = SkillHost(tmp_path / "skills", gatekeeper=gate)
    host.call("pay_create_payment", {"amount": {"value": 10, "currency": "EUR"}})
    with pytest.raises(GateClosed, match=r"request #\d+"):
        host.call("pay_create_payment", {"amount": {"value": 5000, "currency": "EUR"}})
    with pytest.raises(GateClosed, match=r"request #\d+"):
        host.call("pay_create_payment", {"amount": {"value": 10}})
    assert [(m, p) for m, p, _, _ in pay_api.seen] == [("POST", "/payments")]
