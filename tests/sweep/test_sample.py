"""The sweep's fixed sample, in CI (#54.1): a few hundred specs of the public directory chosen by
the traits that broke derive before (`sample.txt`, made by `python -m tests.sweep.choose`),
each derived, loaded as publish loads it, every tool called with valid arguments and judged.

No crash, no timeout, nothing unloadable, none over 2,000 tokens before an agent's first call;
every refusal one line. A spec with findings of ours
still open is listed in `known.json` with how many and why: a new one, or more of them, fails;
so does a listed one that is now right (take it out: the list only shrinks). The whole
directory is `just sweep`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sweep.directory import PINNED, directory
from tests.sweep.sample import sample
from tests.sweep.sweeping import run_sweep, summarize

KNOWN = Path(__file__).with_name("known.json")


@pytest.mark.corpus
def test_the_sample_of_the_public_directory_derives_loads_and_calls_what_its_spec_admits() -> None:
    api = directory(PINNED)  # fetched from npm once, into the cache
    chosen = sample()
    assert len(chosen) >= 150
    results = run_sweep(api, chosen, jobs=2, derive_limit=120.0, limit=300.0)
    summary = summarize(results, {"version": PINNED})
    assert summary["specs"] == len(chosen)
    assert summary["crashes"] == [], "\n".join(summary["crashes"])
    assert summary["timeouts"] == [], "\n".join(summary["timeouts"])
    assert summary["unloadable"] == [], "\n".join(summary["unloadable"])
    # #58.1: what an agent is sent before its first call, as the server sends it
    assert summary["up_front"]["over"] == [], summary["up_front"]
    assert 0 < summary["up_front"]["largest"] <= summary["up_front"]["budget"]
    for r in results:
        if r["status"] == "refused":  # derive's one-line refusal
            assert r["reason"] and "\n" not in r["reason"], r
    known: dict[str, dict[str, object]] = json.loads(KNOWN.read_text())
    found = {
        r["spec"]: len(r["violations"])
        + len(r["refused_args"])
        + len(r["failed"])
        + len(r["ungenerated"])
        for r in results
        if r["status"] == "findings"
    }
    grown = {
        spec: {"findings": n, "first": _first(results, spec)}
        for spec, n in found.items()
        if n > int(known.get(spec, {}).get("findings", 0))  # type: ignore[call-overload]
    }
    assert grown == {}, "new findings (fix them, or list them in known.json with why):\n" + (
        json.dumps(grown, indent=1)
    )
    fixed = sorted(spec for spec in known if spec in chosen and spec not in found)
    assert fixed == [], f"right now: take these out of known.json: {fixed}"


def _first(results: list[dict[str, object]], spec: str) -> str:
    r = next(r for r in results if r["spec"] == spec)
    for name in ("violations", "refused_args", "failed", "ungenerated"):
        items = r[name]
        if isinstance(items, list) and items:
            return str(items[0])[:600]
    return ""
