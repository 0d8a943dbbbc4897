"""A worker process's probes and scrape (#44.1): alive from its own loop, ready only when the
records, the blobs and its NATS connection answer (503 naming the one that does not), and the
Prometheus text counting a submission's trip through every stage."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from skillpress.app.base.context import AppContext
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.subjects import EVENTS
from tests.workers.conftest import SPECS, settings_env, submit, watching

pytestmark = pytest.mark.integration  # starts real servers


def worker_with_probes(
    settings: Settings, extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int, list[str]]:
    """`skillpress worker all` as a process (with `extra` variables), once its probes listen."""
    env = {**settings_env(settings), "SKILLPRESS_PROBE_PORT": "0", **(extra or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillpress.cli.main", "worker", "all"],
        env=env,
        cwd=Path(__file__).parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    port: list[int] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            found = re.search(r'"event": "probes.listening".*"port": (\d+)', line)
            if found:
                port.append(int(found.group(1)))

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 60
    while not port and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if not port:
        proc.kill()
        raise AssertionError(f"the worker never said where its probes listen: {lines[-5:]}")
    return proc, port[0], lines


def _metric(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} ") or (not labels and line.startswith(f"{name} ")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name}{{{wanted}}} in the scrape")


async def test_a_workers_probes_and_scrape_answer_for_it(
    ctx: AppContext, settings: Settings, nats_server: NatsServer
) -> None:
    assert settings.nats_url
    proc, port, lines = worker_with_probes(settings)
    probe = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        assert probe.get("/healthz").json() == {"status": "alive"}
        # ready once its consumers exist (#57.2): alive from the start, ready a moment later
        deadline = time.monotonic() + 60  # a hang guard
        while (ready := probe.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
            said = ready.json()["checks"]["nats"]
            assert said == "ok" or said.startswith("JetStream has no consumer"), said
            await asyncio.sleep(0.1)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"records": "ok", "blobs": "ok", "nats": "ok"}
        blob = ctx.blobs.put((SPECS / "oai-petstore-expanded.yaml").read_bytes())
        event = SpecSubmitted(submission="m1", skill="petstore", blob=blob, created_by="test")
        async with watching(settings.nats_url) as (watcher, nc):
            await submit(nc, event, "submitted:m1")
            await watcher.wait_for(EVENTS.version_proposed, timeout=60, submission="m1")
        await asyncio.sleep(0.5)  # the stage's own count follows the event it published
        scrape = probe.get("/metrics")
        assert scrape.headers["content-type"].startswith("text/plain")
        text = scrape.text
        for stage in ("fetch", "parse", "categorize", "guess-approvals", "render"):
            assert _metric(text, "skillpress_stage_handled_total", stage=stage) == 1.0, stage
            assert _metric(text, "skillpress_stage_duration_seconds_count", stage=stage) == 1.0
        assert _metric(text, "skillpress_submissions_total", outcome="proposed") == 1.0
        # its own stages' queues (#57.3): all taken, nothing waiting
        for consumer in ("fetch", "parse", "render", "render-annotations"):
            assert _metric(text, "skillpress_consumer_pending", consumer=consumer) == 0.0
            assert _metric(text, "skillpress_consumer_oldest_seconds", consumer=consumer) == 0.0
        # #57.4: every series of its stages is there from the start, at 0 while nothing failed
        for stage in ("fetch", "parse", "render"):
            for reaction in ("retrying", "dead_lettered", "permanent", "dependency_gone"):
                failed = _metric(
                    text, "skillpress_stage_failed_total", reaction=reaction, stage=stage
                )
                assert failed == 0.0, (stage, reaction)
        # and approvals waiting are serve's to count: a worker exports no such series
        assert "skillpress_approvals_waiting" not in text
        # one probe server for the process, though `worker all` runs two NATS roles (#57.9:
        # with a fixed SKILLPRESS_PROBE_PORT the second could not listen)
        assert sum('"event": "probes.listening"' in line for line in lines) == 1, lines
        # #57.2: a consumer of this worker's gone (the stream answers): not ready, naming it
        async with watching(settings.nats_url) as (_, nc):
            await nc.jetstream().delete_consumer("SKILLPRESS", "fetch")
        gone = probe.get("/readyz")
        assert gone.status_code == 503
        assert gone.json()["checks"]["nats"] == "JetStream has no consumer fetch"
        # NATS gone: not ready, naming it; still alive (a restart would not bring NATS back)
        nats_server.kill()
        for _ in range(100):
            ready = probe.get("/readyz")
            if ready.status_code == 503:
                break
            await asyncio.sleep(0.1)
        assert ready.status_code == 503
        said: dict[str, Any] = ready.json()["checks"]
        assert (said["records"], said["blobs"]) == ("ok", "ok")
        assert said["nats"] == "the pipeline's connection is down"
        assert probe.get("/healthz").status_code == 200
        assert probe.get("/nothing").status_code == 404
    finally:
        probe.close()
        proc.terminate()
        proc.wait(30)


def test_a_second_worker_on_a_taken_probe_port_refuses_to_start_saying_so(
    settings: Settings, nats_server: NatsServer
) -> None:
    """#57.9: two workers on one host with one SKILLPRESS_PROBE_PORT: the second only logged
    `probes.cannot_listen` and ran unprobed; it now refuses to start, naming the port."""
    from skillpress.platform.local_processes import free_port

    port = free_port()
    first, _, _ = worker_with_probes(settings, {"SKILLPRESS_PROBE_PORT": str(port)})
    try:
        env = {**settings_env(settings), "SKILLPRESS_PROBE_PORT": str(port)}
        second = subprocess.run(
            [sys.executable, "-m", "skillpress.cli.main", "worker", "parse"],
            env=env,
            cwd=Path(__file__).parents[2],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode != 0, second.stderr[-2000:]
        said = second.stderr.strip().splitlines()[-1]
        assert f"the probes cannot listen on 127.0.0.1:{port}" in said, second.stderr[-2000:]
        assert "give each process its own" in said and "Traceback" not in second.stderr
        assert first.poll() is None, "the first worker runs on"
    finally:
        first.terminate()
        first.wait(30)
