"""#59.1: a large JSON document is parsed by orjson while a forked child reads it as
`load_document` does; the child's reading is final. Each case orjson reads otherwise than
`load_document` (a duplicate key, an integer past 64 bits, an invisible character, a document
it cannot read, a child that dies) ends as the one-process derivation ends: the same bytes, or
the same refusal in the same words."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from skillpress.derive import DeriveOptions, derive_package, read_aside
from skillpress.derive.package import derive_bytes
from skillpress.format.errors import SpecRefused

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"


def _doc(description: str = "Things.") -> dict[str, Any]:
    """A document over a megabyte (the size the second reading pays at)."""
    paths = {
        f"/things{i}/{{id}}": {
            "get": {
                "operationId": f"getThing{i}",
                "summary": f"Get thing {i}",
                "description": description,
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {"type": "object"},
                                "example": {"note": "x" * 2_000, "n": 7},
                            }
                        },
                    }
                },
            }
        }
        for i in range(500)
    }
    return {"openapi": "3.0.3", "info": {"title": "Things", "version": "1"}, "paths": paths}


def _both(data: bytes) -> tuple[Any, Any]:
    """What one process and two make of `data`: a package's files, or a refusal's words."""
    assert len(data) >= read_aside.MIN_BYTES
    out = []
    for processes in (1, 2):
        try:
            out.append(derive_package(data, DeriveOptions(processes=processes)).files)
        except SpecRefused as exc:
            out.append(str(exc))
    return out[0], out[1]


def test_githubs_description_is_read_aside_into_the_same_bytes() -> None:
    data = gzip.decompress((SPECS / "github.json.gz").read_bytes())
    seen = read_aside.read_json_aside(data, DeriveOptions().limits)
    assert seen is not None  # the fast reading was taken, and the child agrees
    document, aside = seen
    assert aside.agrees() is True
    alone, shared = _both(data)
    assert shared == alone


def test_a_duplicate_key_is_refused_in_load_documents_words() -> None:
    text = json.dumps(_doc())
    data = text.replace('"summary": "Get thing 7"', '"summary": "A", "summary": "B"', 1).encode()
    alone, shared = _both(data)
    assert isinstance(alone, str) and alone.startswith("duplicate key 'summary'")
    assert shared == alone


def test_an_integer_past_64_bits_is_derived_again_as_load_document_reads_it() -> None:
    doc = _doc()
    doc["paths"]["/things3/{id}"]["get"]["parameters"][0]["schema"] = {
        "type": "integer",
        "maximum": 2**70,
    }
    alone, shared = _both(json.dumps(doc).encode())
    assert isinstance(alone, dict) and shared == alone
    assert str(2**70).encode() in alone["get_thing3.md"]  # an integer, not 1.1805916207174113e+21


def test_invisible_characters_are_taken_out_of_the_prose_here_as_there() -> None:
    for hidden in ("Things\u202e.", "Things\\u200b."):
        text = json.dumps(_doc("DESC"), ensure_ascii=False).replace("DESC", hidden)
        alone, shared = _both(text.encode())
        assert isinstance(alone, dict) and shared == alone
        assert b"Things." in alone["get_thing1.md"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t: t.replace('"n": 7', '"n": NaN', 1), "non-finite number NaN"),
        (lambda t: t.replace('"n": 7', '"n": 1e999', 1), "out of range"),
        (lambda t: t.replace('"Things."', '"\\ud800"', 1), None),  # a lone surrogate: kept
        (lambda t: t + " x", "not valid JSON"),
        (lambda t: t.replace('"openapi": "3.0.3"', '"openapi": "4.0"'), "unsupported OpenAPI"),
        (lambda t: t.replace('"Things."', '"\x00"', 1), "NUL character"),
        # the top as the child keeps it (it holds no tree): what the refusals quote is read again
        (lambda t: t.replace('"3.0.3"', '{"v": {"w": 3}}', 1), "version {'v': {'w': 3}}"),
        (lambda t: t.replace('"3.0.3"', '[3, {"v": 0}]', 1), "version [3, {'v': 0}]"),
        (lambda t: t.replace('"openapi": "3.0.3"', '"swagger": {"v": 2}', 1), "{'v': 2}"),
        (lambda t: t.replace('"openapi": "3.0.3"', '"x": 1', 1), "no 'openapi' or 'swagger'"),
    ],
)
def test_a_document_the_fast_reading_takes_otherwise_ends_as_load_document_ends(
    change: Any, said: str | None
) -> None:
    alone, shared = _both(change(json.dumps(_doc())).encode())
    assert shared == alone
    assert (said is None) == isinstance(alone, dict), alone if said is None else said
    if said is not None:
        assert said in alone


def test_the_child_holds_no_tree() -> None:
    """The child reads every object (a duplicate key anywhere is refused) but keeps only what
    may be the top: its memory is reused object to object, not the whole document's again (the
    tree would be eight times the text; GitHub's child went from 270 to 120 ms)."""
    items = [
        {"name": f"n{i}", "in": "query", "schema": {"type": "string", "enum": ["a", "b"]}}
        for i in range(12_000)
    ]
    op = {"parameters": items, "responses": {"200": {"description": "ok"}}}
    doc = {"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/x": {"get": op}}}
    data = json.dumps(doc).encode()
    tracemalloc.start()
    try:
        said = read_aside._check(data, DeriveOptions().limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert said == b"="
    assert peak < 2 * len(data), peak
    # and what it does not keep still answers: a duplicate deep down, the top's refusals
    deep = data.replace(b'"in": "query"', b'"in": "query", "in": "path"', 1)
    assert read_aside._check(deep, DeriveOptions().limits) == b"!duplicate key 'in'" + (
        b": a document with duplicate keys is ambiguous; remove one"
    )
    nameless = data.replace(b'"openapi": "3.0.3"', b'"x": 1', 1)
    assert read_aside._check(nameless, DeriveOptions().limits) == b"!" + (
        b"not an OpenAPI document: no 'openapi' or 'swagger' field at the top level"
    )
    quoted = data.replace(b'"3.0.3"', b'{"v": 3}', 1)  # its refusal quotes what was dropped
    assert read_aside._check(quoted, DeriveOptions().limits) == b"~"


def test_a_child_that_dies_is_not_agreement(monkeypatch: pytest.MonkeyPatch) -> None:
    def dies(*_: object) -> None:
        os._exit(3)

    data = json.dumps(_doc()).encode()
    alone = derive_package(data, DeriveOptions(processes=1)).files
    monkeypatch.setattr(read_aside, "_check", dies)
    seen = read_aside.read_json_aside(data, DeriveOptions().limits)
    assert seen is not None and seen[1].agrees() is False
    package, _ = derive_bytes(data, DeriveOptions(processes=2))
    assert package.files == alone  # derived again from load_document's reading


def test_a_child_that_dies_before_its_first_word_leaves_the_invisible_characters_to_this_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The child says first whether the bytes may hold invisible characters; where it dies
    before saying, this process looks itself, and the prose is cleaned all the same."""

    def dies(*_: object) -> None:
        os._exit(3)

    data = json.dumps(_doc("DESC"), ensure_ascii=False).replace("DESC", "Things\u200b.").encode()
    monkeypatch.setattr(read_aside, "may_have_invisible", dies)  # (only the child asks it)
    seen = read_aside.read_json_aside(data, DeriveOptions().limits)
    assert seen is not None
    document, aside = seen
    assert document["paths"]["/things1/{id}"]["get"]["description"] == "Things."
    assert aside.sha256 == hashlib.sha256(data).hexdigest()  # (the child's other first word)
    assert aside.agrees() is False


def test_a_refusal_of_the_childs_comes_before_the_fast_readings_own() -> None:
    """The top is refused here (no 'openapi'), but the child refuses a duplicate key first:
    its words, as `load_document` would say them."""
    doc = _doc()
    del doc["openapi"]
    text = json.dumps(doc).replace('"title": "Things"', '"title": "A", "title": "B"', 1)
    alone, shared = _both(text.encode())
    assert isinstance(alone, str) and alone.startswith("duplicate key 'title'")
    assert shared == alone


def test_the_byte_screen_for_invisible_characters_misses_none() -> None:
    from skillpress.format.load import has_invisible, may_have_invisible

    for c in [*range(0x1FF0, 0x2100), *range(0xFE00, 0x10000), 0x3000, 0x00AD, 0x1F600]:
        if 0xD800 <= c <= 0xDFFF:
            continue
        text = f"a {chr(c)} b"
        assert may_have_invisible(text.encode()) == has_invisible(text), hex(c)
    for escaped in ("\\u200b", "\\u200B", "\\uFEFF", "\\u2066"):
        assert may_have_invisible(f'"{escaped}"'.encode())
    assert not may_have_invisible("’ — “quoted” ✓".encode())
