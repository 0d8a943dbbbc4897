"""Content-addressed blob storage: a local directory, or any S3 server through `minio`.

Keys are the sha256 of the bytes, so storing the same bytes twice gives one object, and every
read is checked against its key.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from skillpress.errors import NotFound, Permanent, Unavailable

__all__ = [
    "BlobStore",
    "BlobStoreError",
    "BlobNotFound",
    "BlobCorrupt",
    "BlobStoreUnavailable",
    "LocalBlobStore",
    "CachedBlobs",
    "S3BlobStore",
    "sha256_hex",
]

_KEY = re.compile(r"^[0-9a-f]{64}$")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BlobStoreError(Exception):
    """Base of the blob store's errors."""


class BlobNotFound(BlobStoreError, NotFound):
    """No blob has this key."""


class BlobCorrupt(BlobStoreError, Permanent):
    """The bytes read back do not hash to their key."""

    problem = "blob-corrupt"
    status = 500


class BlobStoreUnavailable(BlobStoreError, Unavailable):
    """The store cannot be reached (connection refused, timeout, bad credentials)."""


class BlobStore(Protocol):
    def put(self, data: bytes) -> str: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def put_many(self, datas: Sequence[bytes]) -> list[str]: ...
    def get_many(self, keys: Sequence[str]) -> list[bytes]: ...
    def get_range(self, key: str, offset: int, length: int) -> bytes: ...


def _check_key(key: str) -> None:
    if not _KEY.match(key):
        raise BlobNotFound(f"{key!r} is not a blob key (64 lower-case hex digits)")


def _verified(key: str, data: bytes, where: str) -> bytes:
    actual = sha256_hex(data)
    if actual != key:
        raise BlobCorrupt(
            f"blob {key[:16]}… in {where} reads back as {actual[:16]}…: the stored bytes are damaged"
        )
    return data


class LocalBlobStore:
    """Blobs as files `<root>/<ab>/<sha256>`, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def put(self, data: bytes) -> str:
        key = sha256_hex(data)
        path = self._path(key)
        if path.exists():
            return key
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return key

    def get(self, key: str) -> bytes:
        _check_key(key)
        try:
            data = self._path(key).read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(f"no blob {key[:16]}… in {self.root}") from None
        return _verified(key, data, str(self.root))

    def exists(self, key: str) -> bool:
        return bool(_KEY.match(key)) and self._path(key).exists()

    def put_many(self, datas: Sequence[bytes]) -> list[str]:
        return [self.put(d) for d in datas]

    def get_many(self, keys: Sequence[str]) -> list[bytes]:
        return [self.get(k) for k in keys]

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        """`length` bytes of a blob from `offset`: unchecked (only the whole blob hashes to its
        key), so the caller checks the piece against a hash of its own."""
        _check_key(key)
        try:
            with self._path(key).open("rb") as fh:
                fh.seek(offset)
                return _whole_range(key, fh.read(length), length, str(self.root))
        except FileNotFoundError:
            raise BlobNotFound(f"no blob {key[:16]}… in {self.root}") from None


def _whole_range(key: str, data: bytes, length: int, where: str) -> bytes:
    if len(data) != length:
        raise BlobCorrupt(
            f"blob {key[:16]}… in {where} is shorter than the range asked: the stored bytes are damaged"
        )
    return data


class S3BlobStore:
    """Blobs as objects `sha256/<ab>/<sha256>` in one bucket of an S3 server."""

    def __init__(
        self,
        endpoint: str,
        access_key: str,
        secret_key: str,
        bucket: str = "skillpress",
        *,
        secure: bool = False,
        timeout: float = 5.0,
    ) -> None:
        import urllib3
        from minio import Minio

        self.endpoint = endpoint
        self.bucket = bucket
        http = urllib3.PoolManager(
            maxsize=CONCURRENT,  # a connection kept for each request sent at once (put_many)
            timeout=urllib3.Timeout(connect=timeout, read=timeout * 4),
            retries=urllib3.Retry(total=1, backoff_factor=0.1, status_forcelist=[502, 503, 504]),
        )
        self.client = Minio(
            endpoint, access_key=access_key, secret_key=secret_key, secure=secure, http_client=http
        )
        self._bucket_ready = False
        self._down: str | None = None  # why S3 stopped answering, while it does not

    def _state(self, down: str | None) -> None:
        """One log line when S3 stops answering and one when it answers again, not one a call
        (a probe every few seconds made 141 lines of urllib3's retries)."""
        if (down is None) == (self._down is None):
            return
        from skillpress.platform.logging import get_logger

        log = get_logger("blobs", endpoint=self.endpoint, bucket=self.bucket)
        if down is not None:
            log.warning("blobs.unreachable", error=down)
        else:
            log.info("blobs.answering_again", after=self._down)
        self._down = down

    @classmethod
    def from_env(
        cls,
        endpoint: str,
        access_key_env: str,
        secret_key_env: str,
        bucket: str,
        *,
        secure: bool = False,
    ) -> S3BlobStore:
        access = os.environ.get(access_key_env)
        secret = os.environ.get(secret_key_env)
        if not access or not secret:
            raise BlobStoreUnavailable(
                f"set {access_key_env} and {secret_key_env} to the S3 credentials for {endpoint}"
            )
        return cls(endpoint, access, secret, bucket, secure=secure)

    def _object(self, key: str) -> str:
        return f"sha256/{key[:2]}/{key}"

    def _call(self, what: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        import urllib3
        from minio.error import MinioException, S3Error

        try:
            done = fn(*args, **kwargs)
        except S3Error as exc:
            self._state(None)  # it answered, with an error of the request's own
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                raise BlobNotFound(
                    f"no blob {args[1][-64:][:16]}… in s3://{self.bucket} at {self.endpoint}"
                ) from None
            if exc.code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"):
                raise BlobStoreUnavailable(
                    f"S3 at {self.endpoint} refused the credentials ({exc.code}) during {what}"
                ) from None
            raise BlobStoreError(
                f"S3 {what} failed at {self.endpoint}: {exc.code}: {exc.message}"
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self._state(type(exc).__name__)
            raise BlobStoreUnavailable(
                f"S3 at {self.endpoint} is unreachable during {what}: {type(exc).__name__}"
            ) from None
        except MinioException as exc:
            raise BlobStoreError(f"S3 {what} failed at {self.endpoint}: {exc}") from None
        self._state(None)
        return done

    def _ensure_bucket(self) -> None:
        if self._bucket_ready:
            return
        if not self._call("bucket check", self.client.bucket_exists, self.bucket):
            try:
                self._call("bucket create", self.client.make_bucket, self.bucket)
            except BlobStoreError as exc:
                if "BucketAlreadyOwnedByYou" not in str(exc) and "BucketAlreadyExists" not in str(
                    exc
                ):
                    raise
        self._bucket_ready = True

    def put(self, data: bytes) -> str:
        """Store `data` under its hash. A blob is content-addressed, so writing one that is
        there already rewrites the same bytes: only a large one is asked about first (a HEAD
        costs a round trip; a small PUT costs about the same, and most puts are new)."""
        key = sha256_hex(data)
        self._ensure_bucket()
        if len(data) > HEAD_FIRST_BYTES and self.exists(key):
            return key
        self._call(
            "put",
            self.client.put_object,
            self.bucket,
            self._object(key),
            io.BytesIO(data),
            len(data),
            content_type="application/octet-stream",
        )
        return key

    def _read(self, key: str, offset: int = 0, length: int = 0) -> bytes:
        """The object's bytes (a `length` > 0: that many from `offset`), in one GET."""
        _check_key(key)
        self._ensure_bucket()

        def read() -> bytes:
            resp = self.client.get_object(
                self.bucket, self._object(key), offset=offset, length=length
            )
            try:
                return resp.read()
            finally:
                resp.close()
                resp.release_conn()

        data: bytes = self._call("get", lambda _b, _k: read(), self.bucket, self._object(key))
        return data

    def get(self, key: str) -> bytes:
        return _verified(key, self._read(key), f"s3://{self.bucket}")

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        """`length` bytes of a blob from `offset`, in one ranged GET: unchecked (only the whole
        blob hashes to its key), so the caller checks the piece against a hash of its own."""
        if length == 0:
            _check_key(key)
            return b""
        data = self._read(key, offset, length)
        return _whole_range(key, data, length, f"s3://{self.bucket}")

    def exists(self, key: str) -> bool:
        if not _KEY.match(key):
            return False
        self._ensure_bucket()
        try:
            self._call("stat", self.client.stat_object, self.bucket, self._object(key))
            return True
        except BlobNotFound:
            return False

    def put_many(self, datas: Sequence[bytes]) -> list[str]:
        """Each blob put, CONCURRENT requests at a time: a derivation writes hundreds of small
        files, and the time goes to the round trips, not to this process."""
        self._ensure_bucket()
        return _concurrently(self.put, datas)

    def get_many(self, keys: Sequence[str]) -> list[bytes]:
        self._ensure_bucket()
        return _concurrently(self.get, keys)


CONCURRENT = 8  # requests one put_many or get_many has in flight at once
HEAD_FIRST_BYTES = 256 * 1024  # a blob larger than this is looked for before it is sent
A = TypeVar("A")
R = TypeVar("R")
_POOL: list[Any] = []  # one thread pool per process, made when first needed
_POOL_LOCK = threading.Lock()


def _pool() -> Any:
    from concurrent.futures import ThreadPoolExecutor

    with _POOL_LOCK:
        if not _POOL:  # enough for a few handlers' put_many at once (SKILLPRESS_WORKER_CONCURRENCY)
            _POOL.append(ThreadPoolExecutor(CONCURRENT * 4, thread_name_prefix="blobs"))
        return _POOL[0]


def _concurrently(fn: Callable[[A], R], items: Sequence[A]) -> list[R]:
    """`fn` over `items` in order, CONCURRENT at a time (a few alone: in turn); the first error
    any raised is raised. The threads are the process's, kept between calls."""
    if len(items) <= 2:
        return [fn(i) for i in items]
    slots = threading.BoundedSemaphore(CONCURRENT)  # this call's requests in flight

    def one(item: A) -> R:
        try:
            return fn(item)
        finally:
            slots.release()

    futures = []
    for item in items:
        slots.acquire()
        futures.append(_pool().submit(one, item))
    return [f.result() for f in futures]


STORED_KEYS = 65_536  # the keys a cache remembers are stored: at most ~10 MB


class CachedBlobs:
    """A blob store with the blobs this process wrote or read lately held in memory: blobs are
    addressed by their content and never deleted, so what is held is always right. The parse
    worker writes an API's operations and the categorize, guess and render steps each read them
    all; in one process they are read from here (a stripe import: 1,547 reads of the store
    become 1). Bounded: the least recently used go past `max_bytes`; a blob over an eighth of
    it is not held, and it remembers which keys the store holds for the last STORED_KEYS of them
    (a long-lived worker sees millions)."""

    def __init__(self, inner: BlobStore, max_bytes: int) -> None:
        import threading
        from collections import OrderedDict

        self.inner = inner
        self.max_bytes = max_bytes
        self._held: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        # keys the store is known to hold, the most recent STORED_KEYS of them (~150 bytes each)
        self._stored: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = self.writes = 0  # what reached the store

    def _hold(self, key: str, data: bytes) -> None:
        with self._lock:
            self._stored[key] = None
            self._stored.move_to_end(key)
            if len(self._stored) > STORED_KEYS:
                self._stored.popitem(last=False)
            if key in self._held or len(data) > self.max_bytes // 8:
                return
            self._held[key] = data
            self._size += len(data)
            while self._size > self.max_bytes:
                _, gone = self._held.popitem(last=False)
                self._size -= len(gone)

    def put(self, data: bytes) -> str:
        key = sha256_hex(data)
        if key in self._stored:
            self._hold(key, data)
            return key
        self.writes += 1
        self.inner.put(data)
        self._hold(key, data)
        return key

    def get(self, key: str) -> bytes:
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                self._held.move_to_end(key)
                return held
        self.reads += 1
        data = self.inner.get(key)  # verified against its key as it is read
        self._hold(key, data)
        return data

    def exists(self, key: str) -> bool:
        return key in self._stored or self.inner.exists(key)

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        """A piece of a held blob, or one ranged read of the store (the piece is not held: the
        blob it is part of is what is addressed)."""
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                self._held.move_to_end(key)
                return _whole_range(key, held[offset : offset + length], length, "the cache")
        self.reads += 1
        return self.inner.get_range(key, offset, length)

    def put_many(self, datas: Sequence[bytes]) -> list[str]:
        keys = [sha256_hex(d) for d in datas]
        new = [d for k, d in zip(keys, datas, strict=True) if k not in self._stored]
        if new:
            self.writes += len(new)
            self.inner.put_many(new)
        for k, d in zip(keys, datas, strict=True):
            self._hold(k, d)
        return keys

    def get_many(self, keys: Sequence[str]) -> list[bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for k in keys:
                held = self._held.get(k)
                if held is not None:
                    self._held.move_to_end(k)
                    found[k] = held
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            self.reads += len(missing)
            for k, data in zip(missing, self.inner.get_many(missing), strict=True):
                self._hold(k, data)
                found[k] = data
        return [found[k] for k in keys]
