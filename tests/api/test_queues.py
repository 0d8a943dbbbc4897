"""Is it behind? (#57.3) Each stage's queue is in the scrape, read from its durable consumer at
each scrape by skillpress's own process (README's question needed the `nats` CLI, which nothing
installs): messages pending, messages held unacknowledged, and the oldest one's age. Here the
fetch stage's consumer exists and no worker takes from it: a submission waits in it, and the
scrape says so; the ordered consumers clients follow events with are not stages, never a label."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from skillpress.app.base.context import open_app
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings

pytestmark = pytest.mark.integration  # starts a real nats-server

PETSTORE = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


async def _fetch_consumer(url: str) -> None:
    """The fetch stage's durable consumer, as a worker makes it, with no worker behind it."""
    from nats.js.api import AckPolicy, ConsumerConfig

    from skillpress.platform.broker import connect
    from skillpress.schemas.subjects import EVENTS, STREAM

    nc = await connect(url, name="test")
    try:
        config = ConsumerConfig(
            durable_name="fetch",
            filter_subject=EVENTS.spec_submitted,
            ack_policy=AckPolicy.EXPLICIT,
        )
        await nc.jetstream().add_consumer(STREAM, config=config)
    finally:
        await nc.close()


def _gauge(text: str, name: str) -> dict[str, float]:
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(rf'^{name}\{{consumer="([^"]+)"\}} (\S+)$', text, re.M)
    }


def test_a_stage_that_is_behind_says_so_in_the_scrape(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    from skillpress.api.app import create_app
    from skillpress.api.auth import load_operators

    settings = Settings(home=tmp_path / "home", nats_url=nats_server.url)
    ctx = open_app(settings)
    operators = load_operators(settings.home, None, "127.0.0.1")
    auth = {"Authorization": f"Bearer {operators.generated}"}
    try:
        with TestClient(create_app(ctx, operators, nats_server.url)) as client:
            asyncio.run(_fetch_consumer(nats_server.url))
            idle = client.get("/metrics").text
            assert _gauge(idle, "skillpress_consumer_pending") == {"fetch": 0.0}
            assert _gauge(idle, "skillpress_consumer_oldest_seconds") == {"fetch": 0.0}
            files = {"file": ("petstore.yaml", PETSTORE.read_bytes(), "application/yaml")}
            taken = client.post("/v1/skills", data={"slug": "pets"}, files=files, headers=auth)
            assert taken.status_code == 202, taken.text
            with client.stream("GET", taken.json()["events"], headers=auth):
                time.sleep(1.2)  # a client following the submission: an ordered consumer
                behind = client.get("/metrics").text
            assert _gauge(behind, "skillpress_consumer_pending") == {"fetch": 1.0}
            assert _gauge(behind, "skillpress_consumer_unacknowledged") == {"fetch": 0.0}
            oldest = _gauge(behind, "skillpress_consumer_oldest_seconds")["fetch"]
            assert oldest >= 1.0, oldest  # it has waited at least the second slept above
    finally:
        ctx.close()
