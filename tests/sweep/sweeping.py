"""The sweep (#54): every spec of a directory derived (within a time limit), its package loaded
as publish loads it, every tool given valid arguments built from its own schema and called, and
each request judged by openapi-core against the spec: in worker processes, with progress, into
a summary that two runs compare.

A spec ends as one of: `ok` (derived, loads, every tool called, no request the spec refuses),
`refused` (derive's one-line refusal: a document that is not an API it can serve), `findings`
(ours: valid arguments refused, a call that failed, a request the judge refuses), `unloadable`
(derived, but the runtime would not load it), `timeout`, or `crash` (a traceback: never right).
What openapi-core itself cannot judge, or a spec that contradicts itself, is counted apart as
`explained`, by kind.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import re
import shutil
import signal
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["Outcome", "compared", "kind_of", "run_sweep", "slug_for", "summarize", "sweep_one"]

STATUSES = ("ok", "refused", "findings", "unloadable", "timeout", "crash")
# what a finding of each kind keeps in the summary (the count is always whole)
KEPT = 5
# requests of one spec openapi-core judges (spread over its tools; every tool is still called)
JUDGED_AT_MOST = 400
UP_FRONT = 2_000  # the tokens an agent may be sent before its first call (#58.1)
# seconds past a spec's limit before its worker is killed (the limit is checked in the worker;
# this is for code that never returns to it)
GRACE = 60.0


class TimeLimit(BaseException):
    """The spec's time is up (a BaseException: no `except Exception` on the way swallows it)."""


@dataclass
class Outcome:
    spec: str
    status: str = "ok"
    reason: str = ""  # the refusal, the crash's last line, the limit that was reached
    where: str = ""  # a crash's place: the innermost frame in skillpress (else in the sweep)
    phase: str = ""  # where a crash or timeout happened: derive, load, judge
    operations: int = 0
    called: int = 0
    judged_requests: int = 0
    elsewhere: int = 0  # tools whose server is another host: not sent
    judged: bool = True
    unjudged: str = ""
    ungenerated: list[str] = field(default_factory=list)
    refused_args: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    explained: dict[str, int] = field(default_factory=dict)  # "kind: reason" → tools
    derive_seconds: float = 0.0
    seconds: float = 0.0
    up_front: int = 0  # cl100k tokens an MCP client is sent before its first call (#58.1)


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimit(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    # again every second after: an event loop's callback swallows what it raises (asyncio logs a
    # BaseException from a callback), and the next one lands in plain code
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/skillpress/" in f.filename.replace(os.sep, "/")]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return ""
    path = frame.filename.replace(os.sep, "/")
    for root in ("/skillpress/", "/tests/"):
        if root in path:
            path = root.strip("/") + "/" + path.rsplit(root, 1)[1]
            break
    return f"{path}:{frame.lineno} in {frame.name}"


def slug_for(spec: str) -> str:
    """The slug a person submitting the file would get (`1password.com/events.json` →
    `1password-com-events`): the intake's own rule, digits first included."""
    from skillpress.format.names import slugify

    return slugify(spec.removesuffix(".json").replace("/", " ").replace(".", " "))


def sweep_one(
    api: Path, spec: str, server: Any, derive_limit: float, limit: float, work: Path
) -> Outcome:
    """One spec of the directory at `api`, judged on `server` (a HostileApi)."""
    from skillpress.derive import DeriveOptions, derive_package
    from skillpress.errors import Refused
    from skillpress.format.errors import SpecRefused
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.package.skill import load_skill
    from tests.runtime.judging import judge_base, judge_files
    from tests.up_front import up_front_tokens

    out = Outcome(spec)
    started = time.perf_counter()
    data = (api / spec).read_bytes()
    slug = slug_for(spec)
    phase = "derive"
    try:
        with _time_limit(derive_limit):
            try:
                base = judge_base(data, server)
                files = derive_package(data, DeriveOptions(slug=slug, base_url=base)).files
            except (Refused, SpecRefused) as e:
                out.status, out.reason = "refused", str(e).splitlines()[0][:300]
                return out
        out.derive_seconds = round(time.perf_counter() - started, 2)
        out.operations = len(json.loads(files["skill.json"]).get("operations") or [])
        rest = max(1.0, limit - (time.perf_counter() - started))
        with _time_limit(rest):
            phase = "load"
            try:
                load_skill(files)  # as the publish check loads it: every tool built
            except PackageError as e:
                out.status, out.reason = "unloadable", str(e)[:500]
                return out
            out.up_front = up_front_tokens(files)
            phase = "judge"
            server.seen.clear()
            verdict = judge_files(files, data, spec, work, server, slug, JUDGED_AT_MOST)
    except TimeLimit as e:
        out.status, out.phase, out.reason = "timeout", phase, f"{phase} {e}"
        return out
    except Exception as e:  # noqa: BLE001 - a traceback is the finding
        out.status, out.phase = "crash", phase
        out.reason = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        out.where = _where(e)
        return out
    finally:
        out.seconds = round(time.perf_counter() - started, 2)
    out.called, out.elsewhere = verdict.called, len(verdict.elsewhere)
    out.judged_requests = verdict.judged_requests
    out.judged, out.unjudged = verdict.judged, verdict.unjudged
    out.ungenerated, out.refused_args = verdict.ungenerated, verdict.refused
    out.failed, out.violations = verdict.failed, verdict.violations
    out.explained = {f"{e.kind}: {e.reason}": len(tools) for e, tools in verdict.explained.items()}
    over = out.up_front > UP_FRONT
    if out.ungenerated or out.refused_args or out.failed or out.violations or over:
        out.status = "findings"
    return out


def kind_of(violation: str) -> str:
    """A judge's finding reduced to its kind: the message with the tool, the request and every
    value taken out, so findings of one cause count together."""
    said = violation.split(": ", 1)[1] if ": " in violation else violation
    said = re.sub(r"'[^']*'|\"[^\"]*\"", "…", said)
    said = re.sub(r"\b\d+(\.\d+)?\b", "N", said)
    said = re.sub(r"(value|schema)=[^,)]*", r"\1=…", said)
    return said[:160]


# -- in parallel ------------------------------------------------------------------------------


def _worker(
    api: Path, tasks: Any, results: Any, derive_limit: float, limit: float, index: int
) -> None:
    from tests.runtime.hostile_api import Answer, HostileApi

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the sweep
    warnings.simplefilter("ignore")  # openapi-core warns per unsupported scheme: noise here
    server = HostileApi({"/": lambda seen: Answer(body={})})
    try:
        while True:
            spec = tasks.get()
            if spec is None:
                return
            results.put(("start", index, spec))
            work = Path(tempfile.mkdtemp(prefix="sweep-"))
            try:
                outcome = sweep_one(api, spec, server, derive_limit, limit, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            results.put(("done", index, asdict(outcome)))
    finally:
        server.close()


def run_sweep(
    api: Path,
    specs: list[str],
    *,
    jobs: int = 2,
    derive_limit: float = 120.0,
    limit: float = 600.0,
    progress: Callable[[int, int, Counter[str]], None] | None = None,
    kept: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every one of `specs` (paths under `api`) swept in `jobs` worker processes, each outcome
    handed to `kept` as it comes; a worker that dies (out of memory, a signal) or outlives its
    spec's limit by GRACE is replaced, its spec counted a crash or a timeout."""
    # spawned, not forked: a test session's threads (its servers) are not copied half-way
    context = multiprocessing.get_context("spawn")
    tasks: Any = context.Queue()
    results: Any = context.Queue()
    for spec in specs:
        tasks.put(spec)
    workers: dict[int, Any] = {}
    current: dict[int, tuple[str, float]] = {}  # worker → (its spec, when it began)
    spawned = 0
    done: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()

    def spawn() -> None:
        nonlocal spawned
        index = spawned
        spawned += 1
        proc = context.Process(
            target=_worker, args=(api, tasks, results, derive_limit, limit, index), daemon=True
        )
        proc.start()
        workers[index] = proc

    def finish(outcome: dict[str, Any]) -> None:
        done.append(outcome)
        counts[outcome["status"]] += 1
        if kept:
            kept(outcome)
        if progress:
            progress(len(done), len(specs), counts)

    def replace_lost() -> None:
        now = time.monotonic()
        for index, proc in list(workers.items()):
            spec, began = current.get(index, ("", now))
            overdue = bool(spec) and now - began > limit + GRACE
            if proc.is_alive() and not overdue:
                continue
            if overdue:
                proc.kill()
                proc.join(timeout=5)
            del workers[index]
            if current.pop(index, None) is not None:
                why = (
                    f"killed after {now - began:.0f} s (over {limit:g} s)"
                    if overdue
                    else f"the worker died (exit {proc.exitcode})"
                )
                finish(asdict(Outcome(spec, "timeout" if overdue else "crash", why)))
            if len(done) < len(specs):
                spawn()

    for _ in range(max(1, min(jobs, len(specs)))):
        spawn()
    try:
        while len(done) < len(specs):
            try:
                what, index, value = results.get(timeout=1.0)
            except queue.Empty:
                replace_lost()
                continue
            if what == "start":
                current[index] = (value, time.monotonic())
            else:
                current.pop(index, None)
                finish(value)
            replace_lost()
    finally:
        for _ in workers:
            tasks.put(None)
        for proc in workers.values():
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    return sorted(done, key=lambda r: r["spec"])


def summarize(results: list[dict[str, Any]], about: dict[str, Any]) -> dict[str, Any]:
    """What a sweep found, as a table: each status counted, refusals by reason, crashes with
    their place, findings by kind, what is explained by kind, and the time taken."""
    statuses = Counter(r["status"] for r in results)
    refusals = Counter(r["reason"] for r in results if r["status"] == "refused")
    kinds: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for r in results:
        for name in ("violations", "refused_args", "failed"):
            for found in r[name]:
                kind = f"{name}: {kind_of(found)}"
                kinds[kind] += 1
                kept = examples.setdefault(kind, [])
                if len(kept) < KEPT:
                    kept.append(f"{r['spec']}: {found[:400]}")
    explained: Counter[str] = Counter()
    for r in results:
        explained.update(r["explained"])
    seconds = sorted(r["seconds"] for r in results)
    return {
        **about,
        "specs": len(results),
        "statuses": {s: statuses.get(s, 0) for s in STATUSES},
        "operations": sum(r["operations"] for r in results),
        "called": sum(r["called"] for r in results),
        "judged_requests": sum(r["judged_requests"] for r in results),
        "ungenerated": sum(len(r["ungenerated"]) for r in results),
        "refused_args": sum(len(r["refused_args"]) for r in results),
        "failed": sum(len(r["failed"]) for r in results),
        "violations": sum(len(r["violations"]) for r in results),
        "not_judged": sorted(f"{r['spec']}: {r['unjudged']}" for r in results if r["unjudged"]),
        "crashes": [
            f"{r['spec']} ({r['phase'] or '?'}): {r['reason']} at {r['where']}"
            for r in results
            if r["status"] == "crash"
        ],
        "timeouts": [f"{r['spec']}: {r['reason']}" for r in results if r["status"] == "timeout"],
        "unloadable": [
            f"{r['spec']}: {r['reason']}" for r in results if r["status"] == "unloadable"
        ],
        "refusals": dict(refusals.most_common()),
        "findings_by_kind": {
            k: {"count": n, "examples": examples[k]} for k, n in kinds.most_common()
        },
        "explained": dict(explained.most_common()),
        "up_front": {
            "budget": UP_FRONT,
            "largest": max((r.get("up_front", 0) for r in results), default=0),
            "over": [
                f"{r['spec']}: {r['up_front']}"
                for r in sorted(results, key=lambda r: -r.get("up_front", 0))
                if r.get("up_front", 0) > UP_FRONT
            ],
        },
        "seconds": {
            "total": round(sum(seconds), 1),
            "median": seconds[len(seconds) // 2] if seconds else 0,
            "slowest": [
                f"{r['spec']}: {r['seconds']}"
                for r in sorted(results, key=lambda r: -r["seconds"])[:10]
            ],
        },
        "results": results,
    }


def compared(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The specs whose status changed between two summaries, as lines."""
    old = {r["spec"]: r["status"] for r in before.get("results", [])}
    lines = []
    for r in after.get("results", []):
        was = old.get(r["spec"])
        if was is not None and was != r["status"]:
            lines.append(f"{r['spec']}: {was} → {r['status']}")
    return lines
