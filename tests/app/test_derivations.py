"""A derivation's files are stored one by one (what versions and runtimes read) and as one pack
(what the next stages read at once): one read brings them all back, checked piece by piece."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from skillpress.services.app.base.context import AppContext
from skillpress.services.app.records.derivations import (
    derivation_files,
    load_derivation,
    store_derivation,
)
from skillpress.services.derive import derive_package
from skillpress.services.platform.blobs import BlobCorrupt, sha256_hex
from tests.app.specs import money_spec


def _counting(ctx: AppContext) -> list[str]:
    reads: list[str] = []
    get, get_many = ctx.blobs.get, ctx.blobs.get_many
    ctx.blobs.get = lambda k: reads.append(k) or get(k)  # type: ignore[method-assign]
    ctx.blobs.get_many = lambda ks: reads.extend(ks) or get_many(ks)  # type: ignore[method-assign]
    return reads


def test_every_file_comes_back_from_one_read_of_the_pack(ctx: AppContext) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    stored = store_derivation(ctx, package)
    assert len(package.files) > 2
    for path, key in stored.files.items():  # each file is a blob of its own as well
        assert ctx.blobs.get(key) == package.files[path]
    loaded = load_derivation(ctx, stored.manifest)
    assert loaded == stored
    reads = _counting(ctx)
    assert derivation_files(ctx, loaded) == dict(package.files)
    assert reads == [stored.pack]
    # the same package stored again: the same manifest, byte for byte
    assert store_derivation(ctx, package) == stored


def test_a_pack_that_does_not_hold_its_files_whole_is_refused(ctx: AppContext) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    stored = store_derivation(ctx, package)
    shifted = (stored.sizes[0] + 1, stored.sizes[1] - 1, *stored.sizes[2:])
    with pytest.raises(BlobCorrupt, match="does not hold"):
        derivation_files(ctx, replace(stored, sizes=shifted))


def test_a_derivation_stored_before_packs_is_read_file_by_file(ctx: AppContext) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    stored = store_derivation(ctx, package)
    older = ctx.blobs.put(json.dumps({"files": stored.files, "grouping": stored.grouping}).encode())
    loaded = load_derivation(ctx, older)
    assert loaded.pack is None
    reads = _counting(ctx)
    assert derivation_files(ctx, loaded) == dict(package.files)
    assert sorted(reads) == sorted(stored.files.values())
    assert stored.pack == sha256_hex(b"".join(package.files[p] for p in sorted(package.files)))
