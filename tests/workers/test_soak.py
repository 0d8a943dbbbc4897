"""Memory over time: a worker process taking revision after revision, on PostgreSQL, S3 and
NATS as production runs it, keeps nothing per revision. Bounded (125 revisions, then it stops),
each one real: five APIs of 6 to 174 operations in turn, each time with another description, so
every stage runs and a version is proposed. After a warm-up of 25, the process's resident memory
grows by less than a leak's worth a window of 25 (the issue saw 23-51 MB in ten minutes,
60-130 KB a revision). Measured (KB over 25 revisions, two windows): +436 and +372 before the
derivation caches were emptied after each derivation, +420 and +148 after; the blob cache is
held to 2 MB here so that it is full by the end of the warm-up (its bound is its own test).

A leak grows every window; the allocator does not. Once, on a loaded CI machine, one window grew
by 2.9 MB and then nothing (glibc taking another arena or a fragment it keeps, a step and not a
slope), so the rule is on four windows after the warm-up: at least half of them grow by less than
a leak's worth. A leak of the issue's size (60 KB a revision, 1.5 MB a window) fails every window
(shown with one put in derive_package: grew 1480, 1888, 1740, 1780 KB); one step of the
allocator's fails one."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from skillpress.app.base.context import open_app
from skillpress.platform.embedded_nats import NatsServer
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.subjects import EVENTS
from skillpress.workers.app import WORKERS
from tests.workers.conftest import SPECS, settings_env, submit, watching

pytestmark = pytest.mark.integration  # starts real servers

APIS = {  # five APIs of 6 to 174 operations, taken in turn
    slug: json.loads((SPECS / name).read_bytes())
    for slug, name in [
        ("insights", "twilio-insights-v2.json"),
        ("fund", "adyen-fund-v6.json"),
        ("dialogporten", "dialogporten.json"),
        ("slack", "slack.json"),
        ("checkout", "adyen-checkout-v70.json"),
    ]
}
WARM = WINDOW = 25
WINDOWS = 4
LEAK_KB = 1024  # 40 KB a revision over a window: well under the 60-130


def _revision(n: int) -> tuple[str, bytes]:
    """An API of the five, in another revision: its description says which."""
    slug = list(APIS)[n % len(APIS)]
    doc = json.loads(json.dumps(APIS[slug]))
    said = str(doc["info"].get("description", ""))
    doc["info"]["description"] = f"Revision {n} of this API. {said}"
    return slug, json.dumps(doc).encode()


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


async def test_a_worker_process_levels_off_over_many_revisions(
    tmp_path: Path, nats_server: NatsServer, stores: Callable[..., Settings]
) -> None:
    settings = stores(nats_server.url)
    ctx = open_app(settings)
    log = tmp_path / "worker.log"
    with log.open("wb") as err:
        worker = subprocess.Popen(
            [sys.executable, "-m", "skillpress.cli.main", "worker", *WORKERS],
            env=settings_env(settings) | {"SKILLPRESS_BLOB_CACHE_MB": "2"},
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    rss: dict[int, int] = {}
    try:
        async with watching(nats_server.url) as (watcher, nc):
            for n in range(WARM + WINDOWS * WINDOW):
                slug, spec = _revision(n)
                event = SpecSubmitted(
                    submission=f"s{n}", skill=slug, blob=ctx.blobs.put(spec), created_by="soak"
                )
                await submit(nc, event, f"submitted:s{n}")
                await watcher.wait_for(EVENTS.version_proposed, timeout=60, submission=f"s{n}")
                watcher.seen.clear()  # the test keeps nothing per revision either
                if (n + 1) % WINDOW == 0:
                    rss[n + 1] = _rss_kb(worker.pid)
    finally:
        worker.terminate()
        worker.wait(30)
        ctx.records.close()
    marks = sorted(rss)
    grew = [rss[after] - rss[before] for before, after in zip(marks, marks[1:], strict=False)]
    levelled = [kb for kb in grew if kb < LEAK_KB]
    assert len(levelled) * 2 >= len(grew), (
        f"RSS after {marks} revisions: {[rss[k] for k in marks]} KB; grew {grew} KB a window"
    )
