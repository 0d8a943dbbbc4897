"""One contract for the blob store, run on the local directory and on a real S3 server."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillpress.platform.blobs import (
    BlobCorrupt,
    BlobNotFound,
    BlobStoreUnavailable,
    LocalBlobStore,
    S3BlobStore,
    sha256_hex,
)
from skillpress.platform.local_processes import free_port


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, object]]:
    if request.param == "local":
        yield "local", LocalBlobStore(tmp_path / "blobs")
    else:
        endpoint, access, secret = request.getfixturevalue("s3_server")
        yield (
            "s3",
            S3BlobStore(
                endpoint,
                access,
                secret,
                bucket=f"t-{tmp_path.name[-20:].lower().replace('_', '-')}",
            ),
        )


def _corrupt(kind: str, store: object, key: str) -> None:
    if kind == "local":
        assert isinstance(store, LocalBlobStore)
        (store.root / key[:2] / key).write_bytes(b"tampered")
    else:
        assert isinstance(store, S3BlobStore)
        store.client.put_object(store.bucket, f"sha256/{key[:2]}/{key}", io.BytesIO(b"tampered"), 8)


def test_same_bytes_twice_is_one_object(store: tuple[str, object]) -> None:
    kind, s = store
    data = b"openapi: 3.1.0\n" * 100
    first = s.put(data)  # type: ignore[attr-defined]
    second = s.put(data)  # type: ignore[attr-defined]
    assert first == second == sha256_hex(data)
    assert s.get(first) == data  # type: ignore[attr-defined]
    if kind == "local":
        assert len([p for p in (s.root).rglob("*") if p.is_file()]) == 1  # type: ignore[attr-defined]
    else:
        objects = list(s.client.list_objects(s.bucket, recursive=True))  # type: ignore[attr-defined]
        assert [o.object_name for o in objects] == [f"sha256/{first[:2]}/{first}"]


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cached"])
def test_many_blobs_at_once_come_back_in_order(store: tuple[str, object], cached: bool) -> None:
    """put_many / get_many (what a derivation's files go through, several requests at a time
    on S3): the keys and bytes in the order given, a repeat as often as given, a missing key
    BlobNotFound as one alone is."""
    from skillpress.platform.blobs import BlobStore, CachedBlobs

    _, inner = store
    s: BlobStore = CachedBlobs(inner, 1024) if cached else inner  # type: ignore[assignment]
    datas = [f"file {n}\n".encode() * (n + 1) for n in range(20)] + [b"file 3\n" * 4]
    keys = s.put_many(datas)
    assert keys == [sha256_hex(d) for d in datas]
    assert s.get_many(list(reversed(keys))) == list(reversed(datas))
    assert s.put_many([]) == [] and s.get_many([]) == []
    with pytest.raises(BlobNotFound):
        s.get_many([keys[0], "0" * 64, keys[1]])


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cached"])
def test_a_range_of_a_blob_comes_back_in_one_read(store: tuple[str, object], cached: bool) -> None:
    """get_range (one file of a version's pack): the bytes asked for, an empty range empty, a
    range past the end refused as damage, a missing key BlobNotFound; through a cache, a held
    blob's piece comes from memory and one not held from one read of the store."""
    from skillpress.platform.blobs import BlobStore, CachedBlobs

    _, inner = store
    s: BlobStore = CachedBlobs(inner, 1 << 20) if cached else inner  # type: ignore[assignment]
    data = bytes(range(256)) * 40
    key = inner.put(data)  # type: ignore[attr-defined]
    assert s.get_range(key, 0, 10) == data[:10]
    assert s.get_range(key, 5000, 1234) == data[5000:6234]
    assert s.get_range(key, len(data) - 3, 3) == data[-3:]
    assert s.get_range(key, 17, 0) == b""
    with pytest.raises(BlobCorrupt, match="shorter than the range asked"):
        s.get_range(key, len(data) - 3, 4)
    with pytest.raises(BlobNotFound):
        s.get_range(sha256_hex(b"never stored"), 0, 1)
    if isinstance(s, CachedBlobs):
        before = s.reads
        s.get(key)  # now held
        assert s.get_range(key, 100, 50) == data[100:150] and s.reads == before + 1


def test_missing_key_is_blob_not_found(store: tuple[str, object]) -> None:
    _, s = store
    key = sha256_hex(b"never stored")
    assert s.exists(key) is False  # type: ignore[attr-defined]
    with pytest.raises(BlobNotFound, match="no blob"):
        s.get(key)  # type: ignore[attr-defined]
    with pytest.raises(BlobNotFound, match="is not a blob key"):
        s.get("../../etc/passwd")  # type: ignore[attr-defined]


def test_wrong_checksum_on_read_is_blob_corrupt(store: tuple[str, object]) -> None:
    kind, s = store
    key = s.put(b"the real bytes")  # type: ignore[attr-defined]
    _corrupt(kind, s, key)
    with pytest.raises(BlobCorrupt, match="damaged"):
        s.get(key)  # type: ignore[attr-defined]


def test_unreachable_s3_is_a_specific_error() -> None:
    dead = S3BlobStore(f"127.0.0.1:{free_port()}", "k", "s", timeout=0.5)
    with pytest.raises(BlobStoreUnavailable, match="unreachable"):
        dead.put(b"x")


@pytest.mark.integration
def test_bad_credentials_are_refused(s3_server: tuple[str, str, str]) -> None:
    endpoint, access, _ = s3_server
    wrong = S3BlobStore(endpoint, access, "not-the-secret")
    with pytest.raises(BlobStoreUnavailable, match="refused the credentials"):
        wrong.put(b"x")


def test_credentials_come_from_named_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SP_TEST_KEY", raising=False)
    with pytest.raises(BlobStoreUnavailable, match="set SP_TEST_KEY and SP_TEST_SECRET"):
        S3BlobStore.from_env("127.0.0.1:9", "SP_TEST_KEY", "SP_TEST_SECRET", "b")


def test_a_cached_store_reads_back_what_it_wrote_or_read_from_memory_within_its_bound(
    tmp_path: Path,
) -> None:
    from skillpress.platform.blobs import CachedBlobs, LocalBlobStore

    inner = LocalBlobStore(tmp_path / "blobs")
    cached = CachedBlobs(inner, max_bytes=8 * 1024)
    small = [bytes([n]) * 900 for n in range(12)]  # 12 × 900 B: more than the 8 KB bound
    keys = [cached.put(b) for b in small]
    assert (cached.writes, cached.reads) == (12, 0)
    assert cached.get(keys[-1]) == small[-1] and cached.reads == 0  # written here: held
    assert cached.get(keys[0]) == small[0] and cached.reads == 1  # the oldest went past the bound
    assert cached.put(small[3]) == keys[3] and cached.writes == 12  # known stored: not sent again
    big = b"x" * 2000  # over an eighth of the bound: stored, never held
    key = cached.put(big)
    assert cached.get(key) == big and cached.get(key) == big and cached.reads == 3
    assert cached.exists(key) and not cached.exists("0" * 64)
    # what another process reads is the store's: the same bytes
    assert LocalBlobStore(tmp_path / "blobs").get(keys[5]) == small[5]


def test_a_cached_store_remembers_which_keys_are_stored_within_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived worker sees millions of blobs: what it remembers of them is bounded too."""
    from skillpress.platform import blobs
    from skillpress.platform.blobs import CachedBlobs, LocalBlobStore

    monkeypatch.setattr(blobs, "STORED_KEYS", 4)
    cached = CachedBlobs(LocalBlobStore(tmp_path / "blobs"), max_bytes=0)  # holds no bytes
    keys = [cached.put(bytes([n])) for n in range(6)]
    assert cached.writes == 6 and len(cached._stored) == 4
    assert cached.put(bytes([5])) == keys[5] and cached.writes == 6  # remembered: not sent again
    assert cached.put(bytes([0])) == keys[0] and cached.writes == 7  # forgotten: sent again
    assert all(cached.exists(k) for k in keys)  # the store still answers for the forgotten


@pytest.mark.integration
def test_a_small_blob_is_sent_without_asking_and_a_large_one_is_asked_about_first(
    s3_server: tuple[str, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A HEAD before every PUT doubled a derivation's round trips: a small blob is written
    (again, the same bytes under the same key), a large one only if S3 does not hold it."""
    from skillpress.platform.blobs import HEAD_FIRST_BYTES

    endpoint, access, secret = s3_server
    s = S3BlobStore(
        endpoint, access, secret, bucket=f"h-{tmp_path.name[-20:].lower()}".replace("_", "-")
    )
    asked: list[str] = []
    sent: list[str] = []
    stat, put = s.client.stat_object, s.client.put_object
    monkeypatch.setattr(s.client, "stat_object", lambda b, o: asked.append(o) or stat(b, o))
    monkeypatch.setattr(
        s.client, "put_object", lambda b, o, *a, **k: sent.append(o) or put(b, o, *a, **k)
    )
    small, large = b"s" * 1000, b"L" * (HEAD_FIRST_BYTES + 1)
    s.put(small), s.put(small)
    assert (len(asked), len(sent)) == (0, 2)
    s.put(large), s.put(large)
    assert (len(asked), len(sent)) == (2, 3)  # the second large put found it stored
    assert s.get(sha256_hex(small)) == small and s.get(sha256_hex(large)) == large


@pytest.mark.integration  # a real S3 server behind a cable the test cuts
def test_s3_down_and_back_is_one_line_each_not_one_a_probe(
    s3_server: tuple[str, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """#57.9: an S3 probe every few seconds logged urllib3's "Retrying" warning each time (141
    lines in the drill); the store now says once that S3 stopped answering and once that it is
    back, and urllib3's retries are quiet."""
    import structlog

    from skillpress.platform.logging import configure_logging
    from tests.local_servers import Cable

    endpoint, access, secret = s3_server
    host, port = endpoint.rsplit(":", 1)
    cable = Cable(host, int(port)).mend()
    configure_logging("json", "info")
    store = S3BlobStore(f"127.0.0.1:{cable.port}", access, secret, bucket="t-state-lines")
    try:
        with structlog.testing.capture_logs() as said, caplog.at_level("WARNING"):
            assert not store.exists("0" * 64)
            cable.cut()
            for _ in range(5):  # five probes while it is down
                with pytest.raises(BlobStoreUnavailable):
                    store.exists("0" * 64)
            cable.mend()
            assert not store.exists("0" * 64)
        events = [e["event"] for e in said if e["event"].startswith("blobs.")]
        assert events == ["blobs.unreachable", "blobs.answering_again"], said
        assert not [r for r in caplog.records if r.name.startswith("urllib3")], caplog.records
    finally:
        cable.cut()
