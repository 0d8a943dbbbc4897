"""A submission while JetStream cannot take it (#57.1): the issue saw `POST /v1/skills` answer
500 `unexpected NoStreamResponseError` while a cluster elected its leader, and with two of three
nodes down. The face's publish now waits as a worker's does (bounded, asking again every half
second), then answers 503 with `Retry-After`: a wait, never a crash. Here the stream is taken
away under a running API (a real nats-server): what a client sees is the same as in an election
that outlasts the wait; given back, the same request is taken. Readiness (#57.2) asks the stream
itself, not only the connection: 503 while it is away."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from skillpress.app.base import bus
from skillpress.app.base.context import open_app
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings

pytestmark = pytest.mark.integration  # starts a real nats-server

PETSTORE = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


async def _stream(url: str, present: bool) -> None:
    from skillpress.platform.broker import connect, ensure_stream
    from skillpress.schemas.subjects import STREAM

    nc = await connect(url, name="test")
    try:
        if present:
            await ensure_stream(nc, 1)
        else:
            await nc.jetstream().delete_stream(STREAM)
    finally:
        await nc.close()


def test_a_submission_jetstream_cannot_take_is_a_503_with_retry_after(
    nats_server: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators

    monkeypatch.setattr(bus, "SEND_PATIENCE", 1.5)  # the wait, shortened (10 s by default)
    settings = Settings(home=tmp_path / "home", nats_url=nats_server.url)
    ctx = open_app(settings)
    operators = load_operators(settings.home, None, "127.0.0.1")
    token = operators.generated
    assert token is not None
    try:
        with TestClient(create_app(ctx, operators, nats_server.url)) as client:
            assert client.get("/readyz").json()["checks"]["nats"] == "ok"
            asyncio.run(_stream(nats_server.url, present=False))
            # #57.2: connected is not ready; the stream must answer
            away = client.get("/readyz")
            assert away.status_code == 503
            assert away.json()["checks"] == {
                "records": "ok",
                "blobs": "ok",
                "nats": "JetStream has no stream SKILLPRESS",
            }
            form = {"slug": "pets"}
            files = {"file": ("petstore.yaml", PETSTORE.read_bytes(), "application/yaml")}
            auth = {"Authorization": f"Bearer {token}"}
            started = time.monotonic()
            refused = client.post("/v1/skills", data=form, files=files, headers=auth)
            waited = time.monotonic() - started
            assert refused.status_code == 503, refused.text
            assert refused.headers["Retry-After"] == "5"
            said = refused.json()
            assert said["type"] == "urn:skillpress:problem:unavailable", said
            assert "JetStream did not take the message for 1.5 s" in said["detail"]
            assert "try again shortly" in said["detail"]
            assert waited >= 1.5, "it waited before answering"  # a lower bound, never an upper
            asyncio.run(_stream(nats_server.url, present=True))
            taken = client.post("/v1/skills", data=form, files=files, headers=auth)
            assert taken.status_code == 202, taken.text
            assert client.get("/readyz").status_code == 200
    finally:
        ctx.close()
