"""A derivation's files are stored as one pack with its index: one read brings them all back, a
ranged read brings one, each checked against its file's hash; nothing is written per file."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.context import AppContext
from skillpress.app.records import versions
from skillpress.app.records.derivations import (
    derivation_file,
    derivation_files,
    load_derivation,
    store_derivation,
)
from skillpress.app.serving.followers import materialize, store_reader
from skillpress.derive import DeriveOptions, derive_package
from skillpress.errors import NotFound
from skillpress.platform.blobs import BlobCorrupt, sha256_hex
from skillpress.schemas.subjects import EVENTS
from tests.app.specs import money_spec


def _options(ctx: AppContext) -> DeriveOptions:
    return DeriveOptions(slug="hollowbrook")


def _recorded(ctx: AppContext, one: str, many: str) -> list[Any]:
    """Every argument the blob store's `one` and `many` methods are given from now on."""
    seen: list[Any] = []
    single, several = getattr(ctx.blobs, one), getattr(ctx.blobs, many)
    setattr(ctx.blobs, one, lambda x: seen.append(x) or single(x))
    setattr(ctx.blobs, many, lambda xs: seen.extend(xs) or several(xs))
    return seen


def _counting(ctx: AppContext) -> list[str]:
    return _recorded(ctx, "get", "get_many")


def _writes(ctx: AppContext) -> list[bytes]:
    return _recorded(ctx, "put", "put_many")


def test_every_file_comes_back_from_one_read_of_the_pack(ctx: AppContext) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    writes = _writes(ctx)
    stored = store_derivation(ctx, package)
    assert len(package.files) > 2
    # three writes, whatever the size: the pack, the grouping, the manifest; no file on its own
    assert [sha256_hex(d) for d in writes] == [stored.pack, stored.grouping, stored.manifest]
    for path, key in stored.files.items():
        assert key == sha256_hex(package.files[path])
        assert not ctx.blobs.exists(key)
    loaded = load_derivation(ctx.blobs, stored.manifest)
    assert loaded == stored
    reads = _counting(ctx)
    assert derivation_files(ctx.blobs, loaded) == dict(package.files)
    assert reads == [stored.pack]
    # the same package stored again: the same manifest, byte for byte
    assert store_derivation(ctx, package) == stored


def test_a_pack_that_does_not_hold_its_files_whole_is_refused(ctx: AppContext) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    stored = store_derivation(ctx, package)
    shifted = (stored.sizes[0] + 1, stored.sizes[1] - 1, *stored.sizes[2:])
    with pytest.raises(BlobCorrupt, match="does not hold"):
        derivation_files(ctx.blobs, replace(stored, sizes=shifted))


def test_one_file_comes_back_from_one_ranged_read_checked_against_its_hash(
    ctx: AppContext,
) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    stored = store_derivation(ctx, package)
    ranges: list[tuple[str, int, int]] = []
    get_range = ctx.blobs.get_range
    ctx.blobs.get_range = lambda k, o, n: ranges.append((k, o, n)) or get_range(k, o, n)  # type: ignore[method-assign]
    reads = _counting(ctx)
    for path in sorted(package.files):
        assert derivation_file(ctx.blobs, stored, path) == package.files[path]
    assert reads == [] and [k for k, _, _ in ranges] == [stored.pack] * len(package.files)
    last = sorted(package.files)[-1]
    assert ranges[-1][1:] == (sum(stored.sizes[:-1]), len(package.files[last]))
    with pytest.raises(NotFound, match="has no file 'nope.md'"):
        derivation_file(ctx.blobs, stored, "nope.md")
    # a pack whose index is off by a byte: the piece read is not the file, and is refused
    shifted = (stored.sizes[0] + 1, stored.sizes[1] - 1, *stored.sizes[2:])
    with pytest.raises(BlobCorrupt, match="does not hold"):
        derivation_file(ctx.blobs, replace(stored, sizes=shifted), sorted(package.files)[1])


def test_a_derivation_stored_before_packs_is_read_file_by_file(ctx: AppContext) -> None:
    package = derive_package(json.dumps(money_spec("https://pay.example")).encode())
    stored = store_derivation(ctx, package)
    ctx.blobs.put_many(list(package.files.values()))  # as a release before packs wrote them
    older = ctx.blobs.put(json.dumps({"files": stored.files, "grouping": stored.grouping}).encode())
    loaded = load_derivation(ctx.blobs, older)
    assert loaded.pack is None
    reads = _counting(ctx)
    assert derivation_files(ctx.blobs, loaded) == dict(package.files)
    assert sorted(reads) == sorted(stored.files.values())
    assert stored.pack == sha256_hex(b"".join(package.files[p] for p in sorted(package.files)))


def test_a_proposal_lives_in_its_pack_and_publishing_writes_what_followers_read_by_key(
    ctx: AppContext, tmp_path: Path
) -> None:
    """#44.7: a proposed version costs no write per file; every face reads it from its pack (all
    files, one file, the archive, a diff). Publishing writes each file as a blob of its own
    before the pointer moves, so a follower reading by key materializes exactly the version."""
    from tests.app.test_use_cases import HOLLOWBROOK, last, publish, submit

    proposed = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    skill = versions.find_skill(ctx, "hollowbrook")
    version = versions.pick_version(ctx, skill, proposed["version_id"])
    expected = dict(derive_package(HOLLOWBROOK.read_bytes(), _options(ctx)).files)
    assert version.derivation_blob is not None
    assert not [k for k in version.files.values() if ctx.blobs.exists(k)]
    assert versions.version_files(ctx.blobs, version) == expected
    for path in expected:
        assert versions.version_file(ctx, "hollowbrook", version.id, path) == expected[path]
    _, archive = versions.version_archive(ctx, "hollowbrook", version.id)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(archive))) as tar:
        assert {m.name: tar.extractfile(m).read() for m in tar} == expected  # type: ignore[union-attr]
    assert versions.diff_versions(ctx, "hollowbrook", None, version.id)["summary"]["added"] > 0

    published = publish(ctx, version.id)
    assert [ctx.blobs.exists(k) for k in published["files"].values()] == [True] * len(expected)
    live = versions.version_pointer(ctx, "hollowbrook", "live")
    assert live.pack == version.derivation_blob and live.files == published["files"]
    assert live.pack is not None
    pack = load_derivation(ctx.blobs, live.pack).pack
    reads = _counting(ctx)
    assert materialize(store_reader(ctx), tmp_path / "out", live, "package")
    assert reads == [live.pack, pack]  # two reads in all: the index and the pack
    out = tmp_path / "out" / "hollowbrook"
    assert {p: (out / p).read_bytes() for p in expected} == expected
    # a pointer written before packs names none: each file read by its key
    reads.clear()
    older = live.model_copy(update={"pack": None, "version_id": "0" * 64})
    assert materialize(store_reader(ctx), tmp_path / "older", older, "package")
    assert sorted(reads) == sorted(live.files.values())
    # a pack whose index lists other files than the pointer: never trusted, read by key
    other = store_derivation(ctx, derive_package(json.dumps(money_spec("https://p.x")).encode()))
    reads.clear()
    forged = live.model_copy(update={"pack": other.manifest, "version_id": "1" * 64})
    assert materialize(store_reader(ctx), tmp_path / "forged", forged, "package")
    assert sorted(reads) == sorted([other.manifest, *live.files.values()])
    assert {p: (tmp_path / "forged" / "hollowbrook" / p).read_bytes() for p in expected} == expected


def test_a_version_whose_derivation_lists_other_files_is_refused(ctx: AppContext) -> None:
    from tests.app.test_use_cases import HOLLOWBROOK, last, submit

    proposed = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    skill = versions.find_skill(ctx, "hollowbrook")
    version = versions.pick_version(ctx, skill, proposed["version_id"])
    other = store_derivation(ctx, derive_package(json.dumps(money_spec("https://p.x")).encode()))
    version.derivation_blob = other.manifest  # detached from its session: never stored
    with pytest.raises(BlobCorrupt, match="lists other files than the version does"):
        versions.version_files(ctx.blobs, version)
