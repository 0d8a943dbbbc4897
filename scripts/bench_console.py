"""The operator's loop on a real-sized API, timed through the console as a person meets it:
GitHub's description (the fixture, 1,100+ operations) imported into a fresh home, then the skill
and review pages' first byte (cold and warm), a whole suggestion group confirmed in one request,
and the skill page again once that proposal exists (the gate-drop check it shows).

    python scripts/bench_console.py [runs]

Every figure is a median over `runs` requests (the group confirm runs once: it changes the
state); the machine is shared, so read them as ratios against the other loads of the same run.
"""

from __future__ import annotations

import gzip
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench import before_cli

ROOT = Path(__file__).parents[1]
GITHUB = ROOT / "tests" / "fixtures" / "specs" / "github.json.gz"
SKILLPRESS = str(Path(sys.executable).with_name("skillpress"))


def _first_byte(client: httpx.Client, url: str) -> tuple[float, int, int]:
    """Seconds to the response's first byte, its status and its size."""
    t0 = time.perf_counter()
    with client.stream("GET", url) as r:
        first = time.perf_counter() - t0
        size = len(r.read())
    return first, r.status_code, size


def _median(client: httpx.Client, url: str, runs: int) -> tuple[float, int]:
    seen = [_first_byte(client, url) for _ in range(runs)]
    assert all(s == 200 for _, s, _ in seen), [s for _, s, _ in seen]
    return statistics.median(t for t, _, _ in seen), seen[-1][2]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    # BENCH_BEFORE=DIR: an earlier checkout, measured the same way after this one
    before = before_cli()
    measure([SKILLPRESS], ROOT, "", runs)
    if before:
        measure(*before, "before ", runs)


def measure(cli: list[str], cwd: Path, label: str, runs: int) -> None:
    """The console's rows for one command line (run from `cwd`), each line starting with
    `label`."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "SKILLPRESS_HOME": str(home), "SKILLPRESS_LOG_LEVEL": "warning"}
        spec = Path(tmp) / "github.json"
        spec.write_bytes(gzip.decompress(GITHUB.read_bytes()))
        t0 = time.perf_counter()
        subprocess.run(
            [*cli, "import", str(spec), "--skill", "github", "--json"],
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
        )
        print(
            f"{label}github import (embedded stack, submit to proposed)  {time.perf_counter() - t0:6.2f} s"
        )
        proc = subprocess.Popen(
            [*cli, "serve", "--port", "0"],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            sign_in = None
            while sign_in is None:
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit("skillpress serve stopped before printing its sign-in URL")
                found = re.search(r"sign in: (http://\S+/sign-in\?token=\S+)", line)
                sign_in = found.group(1) if found else None
            base = sign_in.split("/sign-in")[0]
            with httpx.Client(base_url=base, timeout=600, follow_redirects=True) as client:
                client.get(sign_in).raise_for_status()
                for name, url in (
                    ("skill page", "/skills/github"),
                    ("review page", "/skills/github/review"),
                ):
                    cold = _first_byte(client, url)
                    warm, size = _median(client, url, runs)
                    print(
                        f"{label}github {name:12s} first byte cold {cold[0]:6.3f} s  warm median {warm:6.3f} s"
                        f"  ({size / 1024:,.0f} KB)"
                    )
                page = client.get("/skills/github/review").text
                csrf = re.search(r'name="csrf" value="([^"]+)"', page)
                assert csrf is not None
                counts = {g: int(n) for n, g in re.findall(r">Confirm all (\d+) (\w+)<", page)}
                group = "deletes"  # the group the issue timed: GitHub's 190-odd DELETEs
                t0 = time.perf_counter()
                done = client.post(
                    "/skills/github/review",
                    data={"csrf": csrf.group(1), "group": group},
                    headers={"HX-Request": "true"},
                )
                took = time.perf_counter() - t0
                done.raise_for_status()
                notice = re.search(r"confirmed \d+; \d+ left[^<]*", done.text)
                print(
                    f"{label}github confirm group {group!r} ({counts.get(group, '?')} suggestions) in one request"
                    f" {took:6.2f} s: {notice.group(0)[:120] if notice else done.text[:200]}"
                )
                cold = _first_byte(client, "/skills/github")
                warm, size = _median(client, "/skills/github", runs)
                print(
                    f"{label}github skill page after the proposal  first byte cold {cold[0]:6.3f} s"
                    f"  warm median {warm:6.3f} s  ({size / 1024:,.0f} KB)"
                )
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
