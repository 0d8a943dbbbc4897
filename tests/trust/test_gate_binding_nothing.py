"""Invariant: a gate that binds nothing is a gate (#55.3). GitHub's `DELETE /installation/token`
and DigitalOcean's `DELETE /v2/registry` send no argument: the review suggested a gate and then
said "Cannot confirm: nothing to bind", annotate refused it, and the file format refused it, so
the one DELETE that empties a registry went ungated. Now the operator gates it like any other:
every call waits for a person, and one grant lets one call by (the grant is consumed by exactly
one request, `app/records/approval_requests.consume`).

Attacked with N identical calls at once through SkillHost and over MCP, on SQLite and
PostgreSQL: all N wait on one request; granted, N again send exactly one DELETE."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.context import open_app
from skillpress.app.base.package_dir import write_package_dir
from skillpress.app.records import approval_requests as approvals
from skillpress.derive import DeriveOptions, derive_package
from skillpress.derive.annotations import Annotation
from skillpress.platform.settings import Settings
from tests.fake_api import FakeApi, Reply, fake_api
from tests.trust.harness import N, race

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Registry", "version": "1"},
    "paths": {
        "/v2/registry": {
            "delete": {
                "operationId": "registry_delete",
                "summary": "Delete the container registry, and every image in it",
                "responses": {"204": {"description": "gone"}},
            }
        }
    },
}
GATE = {"matches": "DELETE /v2/registry", "risk": "high"}


@pytest.fixture
def registry() -> Iterator[FakeApi]:
    with fake_api(lambda r: Reply(204, b"")) as api:
        yield api


def _skills(root: Path, url: str) -> Path:
    """The skill as an operator makes it: the spec derived with the gate confirmed on it."""
    gate = Annotation("a1", "approval", "operation:registry_delete", GATE)
    package = derive_package(
        json.dumps(SPEC).encode(), DeriveOptions(slug="reg", base_url=url, annotations=(gate,))
    )
    declared = package.files["registry_delete.md"].decode()
    assert '"binds": []' in declared, declared
    write_package_dir(package.files, root / "reg")
    return root


def _request_of(outcome: Any) -> int | None:
    said = re.search(r"request #(\d+)", str(outcome))
    return int(said.group(1)) if said else None


def _attack(settings: Settings, registry: FakeApi, call: Any) -> None:
    first = race(N, call)
    assert registry.seen == [], "nothing reached the API before a person said so"
    asked = {_request_of(o) for o in first}
    assert len(asked) == 1 and None not in asked, f"N identical calls, one request: {first}"
    (request,) = asked
    assert request is not None
    ctx = open_app(settings)
    try:
        approvals.decide(ctx, request, True, "ops")
    finally:
        ctx.close()
    second = race(N, call)
    assert [r.method for r in registry.seen] == ["DELETE"], f"one grant, one request: {second}"
    held = {_request_of(o) for o in second} - {None}
    assert len(held) == 1 and request not in held, second


def test_skillhost(settings: Settings, registry: FakeApi, tmp_path: Path) -> None:
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper
    from skillpress.host import SkillHost

    gate = agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "reg")
    host = SkillHost(_skills(tmp_path / "skills", registry.url), gatekeeper=gate)

    def call(i: int) -> Any:
        return host.call("reg_registry_delete", {})

    _attack(settings, registry, call)


def test_mcp(settings: Settings, registry: FakeApi, tmp_path: Path) -> None:
    from mcp import Client

    from skillpress.app.serving.calling import open_package
    from skillpress.app.serving.gatekeepers import LocalDesk, agent_gatekeeper
    from skillpress.mcp.server import build_mcp_server

    skill, files = open_package(_skills(tmp_path / "skills", registry.url) / "reg")
    gate = agent_gatekeeper(lambda: LocalDesk(lambda: open_app(settings)), "reg")
    server = build_mcp_server(skill, files, gatekeeper=gate)

    def call(i: int) -> Any:
        async def once() -> str:
            async with Client(server) as client:
                done = await client.call_tool("call_operation", {"name": "registry_delete"})
                return "".join(getattr(c, "text", "") for c in done.content)

        return asyncio.run(once())

    _attack(settings, registry, call)
