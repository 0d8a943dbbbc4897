"""The parts that make derivation fast keep its output exact: shared type expansions, the measured,
early-ending readable layout, the chunks two processes claim, and the paused collector."""

from __future__ import annotations

import gc
import json
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from skillpress.derive import DeriveOptions
from skillpress.derive.package import read_api
from skillpress.derive.split import fork_map
from skillpress.format.errors import SchemaTooLarge
from skillpress.format.expand import REDUCTIONS, ExpandedSizes, compact_json, expand_types
from skillpress.format.gc_pause import gc_paused, held_in_caches
from skillpress.format.jsonfmt import readable_json
from skillpress.format.load import load_document
from skillpress.format.manifest import AnnotationState, Manifest, OperationEntry, Stats
from skillpress.format.provider_names import provider_names
from tests.conftest import corpus, spec_bytes
from tests.derive.test_corpus import REFUSED

TYPES: dict[str, Any] = {
    "Node": {
        "type": "object",
        "description": "A node. " * 30,
        "properties": {
            "child": {"$ref": "#/types/Node"},
            "leaf": {"$ref": "#/types/Leaf"},
            "leaves": {"type": "array", "items": {"$ref": "#/types/Leaf"}},
        },
    },
    "Leaf": {
        "type": "object",
        "description": "A leaf, described at length. " * 20,
        "properties": {f"f{i}": {"type": "string", "description": "x" * 200} for i in range(12)},
    },
}


def _expansions_agree(schema: Any, types: dict[str, Any]) -> int:
    """For every reduction: the counted size is the built one's, and the shared build is the
    plain one. Returns how many reductions fit."""
    sizes, plain_sizes = ExpandedSizes(types), ExpandedSizes(types, renamed=False)
    fitting = 0
    for depth, nested, _ in REDUCTIONS:
        reduced = sizes.reduced(depth, nested, 120)
        unrenamed = plain_sizes.reduced(depth, nested, 120)
        try:
            plain = expand_types(
                schema, types, max_depth=depth, descriptions=nested, description_chars=120
            )
        except SchemaTooLarge:
            assert not reduced.fits(schema)
            continue
        assert unrenamed.size(schema) == len(compact_json(plain).encode())
        # a renamed property's cost is counted at its bound, never under what renaming adds
        assert reduced.size(schema) >= len(compact_json(provider_names(plain)[0]).encode())
        assert reduced.expand(schema) == plain
        fitting += 1
    return fitting


def test_a_shared_expansion_is_the_plain_one_under_every_reduction() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/types/Node"}, "b": {"$ref": "#/types/Leaf"}},
    }
    assert _expansions_agree(schema, TYPES) >= 3


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_shared_expansions_agree_over_a_real_spec(spec: Path) -> None:
    api = read_api(load_document(spec_bytes(spec)), DeriveOptions(), [])
    types = api.translator.types
    for name in list(types)[:150]:
        _expansions_agree(
            {"type": "object", "properties": {"x": {"$ref": f"#/types/{name}"}}}, types
        )


@pytest.mark.parametrize("width", [20, 88])
def test_the_readable_layout_ends_early_only_past_its_line_limit(width: int) -> None:
    values = [
        {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(n)}}
        for n in (1, 5, 40, 140, 160, 400)
    ] + [{"deep": [{"a": [1, 2, {"b": "x" * 50}]}] * n} for n in (10, 60, 100)]
    for value in values:
        full = readable_json(value, width=width)
        assert full is not None
        limited = readable_json(value, width=width, max_lines=300)
        assert limited == (full if full.count("\n") <= 300 else None)


def _plain_layout(value: Any, width: int, level: int = 0) -> str:
    """The readable layout written the obvious way: serialise each node, keep it if it fits."""
    one = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(value, dict | list) or not value or len(one) + 2 * level <= width:
        return one
    inner, pad = " " * (2 * level + 2), " " * (2 * level)
    if isinstance(value, dict):
        items = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {_plain_layout(v, width, level + 1)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    kids = [f"{inner}{_plain_layout(v, width, level + 1)}" for v in value]
    return "[\n" + ",\n".join(kids) + "\n" + pad + "]"


def test_the_measured_layout_is_the_plainly_serialised_one() -> None:
    """Fitting is decided by measuring, stopping at the width: random values with escapes,
    non-ASCII text, numbers of every kind and empty containers lay out as the plain way does."""
    rnd = random.Random(7)
    scalars = ["", "x" * 30, 'q"\\\n\t', "é" * 12, "\u2028", 0, -17, 2.5, 1e22, True, False, None]

    def grow(depth: int) -> Any:
        roll = rnd.random()
        if depth > 5 or roll < 0.4:
            return rnd.choice(scalars)
        if roll < 0.7:
            return {
                "k" * rnd.randint(1, 9) + str(i): grow(depth + 1) for i in range(rnd.randint(0, 6))
            }
        return [grow(depth + 1) for _ in range(rnd.randint(0, 6))]

    for _ in range(3000):
        value = grow(0)
        for width in (12, 40, 88):
            plain = _plain_layout(value, width)
            assert readable_json(value, width=width) == plain
            limited = readable_json(value, width=width, max_lines=20)
            assert limited == (plain if plain.count("\n") <= 20 else None)


def test_the_readable_layout_is_json_indent_where_nothing_fits_one_line() -> None:
    value = {"a": {"b": ["x" * 100, {"c": "y" * 100}]}, "d": "z" * 100}
    assert readable_json(value, width=10) == json.dumps(value, indent=2, ensure_ascii=False)


def _manifest_as_json_writes_it(manifest: Manifest) -> bytes:
    return (
        json.dumps(manifest.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    ).encode()


def _index_as_json_writes_it(manifest: Manifest) -> bytes:
    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    head = json.loads(manifest.to_index().split(b',"operations":[', 1)[0] + b"}")
    rows = [
        compact([o.name, o.method, o.path, o.tool, o.not_tool_reason]) for o in manifest.operations
    ]
    return (compact(head)[:-1] + ',"operations":[\n' + ",\n".join(rows) + "\n]}\n").encode()


def test_a_manifest_is_written_byte_for_byte_as_json_writes_it() -> None:
    """skill.json is written by orjson: the same bytes `json.dumps(indent=2, sort_keys=True,
    ensure_ascii=False)` writes, over random text of every escape, non-ASCII and astral keys
    sorted, empty lists and objects, and the integers at 64 bits' edges; past them, as before."""
    rnd = random.Random(11)
    alphabet = [chr(c) for c in range(0, 0x80)] + [
        "é",
        "\u2028",
        "\ufeff",
        "\uff01",
        "😀",
        "\u00ad",
    ]

    def text() -> str:
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12)))

    for _ in range(300):
        ops = tuple(
            OperationEntry(
                name=text() or "n",
                file=text() or "f",
                method=text(),
                path=text(),
                category=rnd.choice([None, text()]),
                tags=tuple(text() for _ in range(rnd.randint(0, 3))),
                deprecated=rnd.random() < 0.5,
                required_headers=tuple(text() for _ in range(rnd.randint(0, 2))),
            )
            for _ in range(rnd.randint(0, 4))
        )
        edge = rnd.choice([0, 2**63 - 1, -(2**63), 2**64 - 1, -1])
        manifest = Manifest(
            slug=text(),
            title=text(),
            description=text(),
            hosts=tuple(text() for _ in range(rnd.randint(0, 2))),
            operations=ops,
            stats=Stats(
                operations=edge, not_tools=tuple((text(), rnd.randint(0, 9)) for _ in range(2))
            ),
            derived_from=tuple(
                (text(), rnd.choice([None, text()])) for _ in range(rnd.randint(0, 3))
            ),
            warnings=tuple(text() for _ in range(rnd.randint(0, 3))),
            annotations=rnd.choice([None, AnnotationState(applied=(text(),))]),
        )
        assert manifest.to_json() == _manifest_as_json_writes_it(manifest)
        assert manifest.to_index() == _index_as_json_writes_it(manifest)
    past = Manifest(slug="s", title="t", stats=Stats(operations=2**64, body_bytes=-(2**64)))
    assert past.to_json() == _manifest_as_json_writes_it(past)
    assert b'"operations": 18446744073709551616' in past.to_json()
    with pytest.raises(UnicodeEncodeError):
        Manifest(slug="s", title="\ud800").to_json()


@pytest.mark.corpus
def test_an_operation_with_its_tool_is_the_copy_replace_makes() -> None:
    from dataclasses import fields, replace

    from skillpress.derive.tools import declare_tool
    from tests.conftest import SPECS

    doc = load_document((SPECS / "stripe.json").read_bytes())
    ops = read_api(doc, DeriveOptions(), []).ops
    for op in ops[:200]:
        op.tool_name = f"tool_{op.name}"
        tool, reason = declare_tool(op, {})
        for given in ((tool, reason), (None, "no call can be declared")):
            made = op.with_tool(*given)
            plain = replace(
                op,
                tool=given[0],
                not_tool_reason=given[1],
                tool_name=op.tool_name if given[0] is not None else None,
            )
            assert made == plain and made is not op
            assert all(getattr(made, f.name) is getattr(plain, f.name) for f in fields(plain))
        assert op.tool is None and op.tool_name == f"tool_{op.name}"  # (itself unchanged)


@pytest.mark.parametrize("count", [300, 1001, 20_011])
def test_chunks_claimed_by_both_processes_merge_in_order(count: int) -> None:
    parent = os.getpid()
    items = list(range(count))

    def work(x: int) -> tuple[int, bool]:  # about 10 µs: long enough for both to take part
        return x * 3 + sum(range(200)) * 0, os.getpid() == parent

    forked = fork_map(work, items, 2)
    assert forked.pid is not None
    time.sleep(0.01 if count < 20_000 else 0)  # the child claims first, as it does in use
    results = forked.results()
    assert [value for value, _ in results] == [x * 3 for x in items]
    if count == 20_011:  # a long map: both processes computed a part of it
        assert {here for _, here in results} == {True, False}


def test_the_collector_is_paused_for_the_outermost_derivation_only() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_the_caches_a_derivation_fills_are_empty_once_none_runs() -> None:
    """A worker derives API after API: what one derivation cached is not kept for the next."""
    from skillpress.derive import derive_package
    from skillpress.derive.categories import _segments
    from skillpress.format.expand import _str_bytes
    from skillpress.format.names import snake
    from skillpress.format.text import _full_text, _short_text

    caches = [_segments, _str_bytes, snake, _short_text, _full_text]
    spec = spec_bytes(next(p for p in corpus() if p.name == "oai-petstore-expanded.yaml"))
    with gc_paused():
        derive_package(spec)  # nested in an outer derivation: the caches serve it still
        assert all(c.cache_info().currsize > 0 for c in caches)
    assert [c.cache_info().currsize for c in caches] == [0, 0, 0, 0, 0]


def test_a_load_and_a_publish_check_leave_the_derivation_caches_empty(tmp_path: Path) -> None:
    """#61.3: publishing 10,000 skills in `up` left the caches a derivation fills full (85 MB of
    names and texts: the publish check loads each version with no derivation running, so
    nothing emptied them); a package's load and a publish check now empty them as a
    derivation does. (A cached call outside all of them still fills them: the count is real.)"""
    from skillpress.app.base.context import open_app
    from skillpress.app.records import publish_check, versions
    from skillpress.app.stages.publish import publish_version
    from skillpress.derive import derive_package
    from skillpress.format.gc_pause import held_in_caches
    from skillpress.format.names import snake
    from skillpress.platform.settings import Settings
    from skillpress.runtime.package.skill import load_skill
    from tests.app.test_live_set import _proposed

    files = derive_package(
        spec_bytes(next(p for p in corpus() if p.name == "oai-petstore-expanded.yaml"))
    ).files
    assert held_in_caches() == 0
    snake("SomeOperationName")
    assert held_in_caches() == 1
    with gc_paused():
        pass
    assert held_in_caches() == 0
    load_skill(files)
    assert held_in_caches() == 0
    ctx = open_app(Settings(home=tmp_path, refresh_interval=0))
    try:
        version_id = _proposed(ctx, "pets")  # derived: empty after
        assert held_in_caches() == 0
        publish_check.check_publish_request(ctx, "pets", version_id, False)
        assert held_in_caches() == 0
        publish_version(ctx, "pets", version_id, False, "ops")
        assert held_in_caches() == 0
        assert versions.find_skill(ctx, "pets").live_version_id == version_id
    finally:
        ctx.close()


def test_derivations_in_threads_leave_the_collector_on() -> None:
    entered = threading.Barrier(2)

    def derive_like() -> None:
        with gc_paused():
            entered.wait(timeout=10)

    threads = [threading.Thread(target=derive_like) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gc.isenabled()


def test_overlapping_derivations_still_collect_what_the_process_leaves_in_cycles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#61.3: `up` derives six APIs at once, so some derivation is nearly always running; the
    cycles its requests and sessions leave are collected once the pause has lasted long enough,
    by a derivation ending while another still runs."""
    import weakref

    from skillpress.format import gc_pause

    class Node:
        other: Any = None

    monkeypatch.setattr(gc_pause, "LONGEST_PAUSE", 0.0)
    outer_entered, inner_done = threading.Event(), threading.Event()

    def outer() -> None:  # the derivation that outlasts the other
        with gc_paused():
            outer_entered.set()
            inner_done.wait(timeout=30)

    def inner_with_garbage() -> weakref.ref[Node]:
        with gc_paused():
            a, b = Node(), Node()
            a.other, b.other = b, a  # a cycle: reference counting alone never frees it
            left = weakref.ref(a)
            del a, b
            time.sleep(0.01)
        return left

    running = threading.Thread(target=outer)
    running.start()
    assert outer_entered.wait(timeout=30)
    try:
        left = inner_with_garbage()  # ends while `outer` still derives
        assert not gc.isenabled()  # still paused for the one running
        assert left() is None  # yet the cycle was collected
    finally:
        inner_done.set()
        running.join()
    assert gc.isenabled()


LARGE = ["kubernetes.json", "stripe.json", "jira.json"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", LARGE)
def test_a_large_real_api_derives_to_the_same_bytes_on_one_core_or_two(name: str) -> None:
    from skillpress.derive import derive_package
    from tests.conftest import SPECS

    data = (SPECS / name).read_bytes()
    alone = derive_package(data, DeriveOptions(processes=1))
    assert len(alone.manifest.operations) >= 300  # enough for both shares to be forked
    shared = derive_package(data, DeriveOptions(processes=2))
    assert shared.files == alone.files and shared.version_id == alone.version_id


@pytest.mark.corpus
@pytest.mark.parametrize("processes", [1, 2])
def test_a_derivation_is_one_pause_from_the_read_to_the_package(processes: int) -> None:
    """No collection runs anywhere in a derivation: resuming the collector between reading the
    document and deriving from it would walk the whole document at the next allocation."""
    from skillpress.derive.package import derive_bytes
    from tests.conftest import SPECS

    data = (SPECS / "kubernetes.json").read_bytes()  # large enough to be read aside on two
    events: list[str] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            events.append("collection")

    gc.collect()
    gc.callbacks.append(seen)
    try:
        derive_bytes(data, DeriveOptions(processes=processes, on_stage=events.append))
    finally:
        gc.callbacks.remove(seen)
    last_stage = max(i for i, e in enumerate(events) if e != "collection")
    assert events[last_stage].startswith("rendered ")
    assert "collection" not in events[:last_stage]  # (one may run once the pause ends)
    assert gc.isenabled()


def test_a_command_about_to_exit_keeps_the_collector_paused_and_the_caches_full() -> None:
    """`held_to_exit`: a derivation inside it ends with neither resumed nor emptied (the process
    exits with its heap as it is); left by a failure, both are as after any derivation."""
    from skillpress.app.operator.offline import held_to_exit
    from skillpress.derive import derive_package

    spec = spec_bytes(next(p for p in corpus() if p.name == "oai-petstore-expanded.yaml"))
    kept: list[object] = []
    with pytest.raises(RuntimeError), held_to_exit():
        package = derive_package(spec, DeriveOptions(on_done_with=kept.append))
        assert not gc.isenabled() and held_in_caches() > 0
        raise RuntimeError("the command failed")
    assert gc.isenabled() and held_in_caches() == 0
    # what it built on the way was handed over to be kept, and the package is the same
    assert len(kept) == 1 and isinstance(kept[0], dict) and "layout" in kept[0]
    assert derive_package(spec).files == package.files


def _said_once_plainly(words: list[str]) -> list[str]:
    """The rule as first written, every position tried: the oracle for the faster search."""
    changed = True
    while changed:
        changed = False
        for n in range(min(8, len(words) // 2), 1, -1):
            seen: dict[tuple[str, ...], int] = {}
            for i in range(len(words) - n + 1):
                gram = tuple(words[i : i + n])
                if gram in seen and seen[gram] + n <= i:
                    words = words[: seen[gram]] + words[seen[gram] + n :]
                    changed = True
                    break
                seen.setdefault(gram, i)
            if changed:
                break
    return words


def test_words_said_twice_are_found_where_a_pair_repeats_exactly_as_everywhere() -> None:
    import random

    from skillpress.derive.naming import _said_once

    rng = random.Random(7)
    for _ in range(20_000):
        words = [rng.choice("abcde"[: rng.randint(1, 5)]) for _ in range(rng.randint(0, 18))]
        assert _said_once(list(words)) == _said_once_plainly(list(words)), words
    graph_like = [
        "users",
        "user",
        "onenote",
        "notebooks",
        "notebook",
        "section",
        "groups",
        "section",
        "group",
        "sections",
    ]
    assert _said_once(graph_like) == _said_once_plainly(list(graph_like))
