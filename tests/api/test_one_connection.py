"""The bus is the server's port (#53.4): what the API asks of the pipeline (a submission, a
publish, an annotation's proposal, a dead letter's replay) is sent and followed on the server's
one NATS connection, never on a connection opened per request. The nats-server itself is asked
(its monitoring endpoint lists every connection it took, closed ones too), so the test sees what
a busy server would: before the port, each publish and annotate opened and closed a
`skillpress-cli` connection of its own."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from skillpress.app.base.context import open_app
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings
from tests.workers.conftest import workers

pytestmark = pytest.mark.integration  # a real nats-server, every worker

PETSTORE = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


def _connections(server: NatsServer) -> list[dict[str, Any]]:
    """Every client connection the server took, open or closed."""
    found = httpx.get(f"{server.monitor_url}/connz", params={"state": "all", "limit": 1024})
    return list(found.json().get("connections") or [])


class _Workers:
    """Every worker, in a thread of its own (the API's test client runs its own loop)."""

    def __init__(self, settings: Settings, url: str) -> None:
        self._done = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(settings, url),))

    async def _run(self, settings: Settings, url: str) -> None:
        ctx = open_app(settings)
        try:
            async with workers(ctx, url):
                self._ready.set()
                await asyncio.to_thread(self._done.wait)
        finally:
            ctx.close()

    def __enter__(self) -> _Workers:
        self._thread.start()
        assert self._ready.wait(60), "the workers never started"
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(60)


def _proposed(client: TestClient, status: str, auth: dict[str, str]) -> dict[str, Any]:
    deadline = time.monotonic() + 120  # a hang guard
    while time.monotonic() < deadline:
        said = client.get(status, headers=auth).json()
        stages = said.get("stages") or [{}]
        if stages[-1].get("stage") in ("proposed", "unchanged", "rejected"):
            return dict(stages[-1])
        time.sleep(0.2)
    raise AssertionError(f"no proposal: {said}")


def test_the_apis_requests_send_on_the_servers_one_connection(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators

    settings = Settings(home=tmp_path / "home", nats_url=nats_server.url)
    ctx = open_app(settings)
    operators = load_operators(settings.home, None, "127.0.0.1")
    assert operators.generated is not None
    auth = {"Authorization": f"Bearer {operators.generated}"}
    try:
        with (
            _Workers(settings, nats_server.url),
            TestClient(create_app(ctx, operators, nats_server.url)) as client,
        ):
            before = {c["cid"] for c in _connections(nats_server)}
            files = {"file": ("petstore.yaml", PETSTORE.read_bytes(), "application/yaml")}
            taken = client.post("/v1/skills", data={"slug": "pets"}, files=files, headers=auth)
            assert taken.status_code == 202, taken.text
            assert _proposed(client, taken.json()["status"], auth)["stage"] == "proposed"
            published = client.post(
                "/v1/skills/pets/versions/newest/publish", json={}, headers=auth
            )
            assert published.status_code == 200, published.text
            noted = client.post(
                "/v1/skills/pets/annotations",
                json={"kind": "note", "operation": "find_pets", "value": "paged by limit"},
                headers=auth,
            )
            assert noted.status_code == 201, noted.text
            assert noted.json()["proposal"]["created"] is True
            again = client.post("/v1/skills/pets/versions/newest/publish", json={}, headers=auth)
            assert again.status_code == 200, again.text
            assert again.json()["version_id"] == noted.json()["proposal"]["version_id"]
            made = [c for c in _connections(nats_server) if c["cid"] not in before]
    finally:
        ctx.close()
    # a submission, two publishes and an annotation: not one connection of their own
    assert [c.get("name") for c in made] == [], made
