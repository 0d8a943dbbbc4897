"""The link between a running `skillpress up` / `serve` and command lines on the same home.

A server that serves the HTTP API writes `<home>/api.json` (mode 0600): where it listens, its
process id, a token of its own made for this run (never written to the operator-token file), and
a fingerprint of the storage settings it was started with. A command on the same home and the
same storage can then read and change through the API instead of opening the records itself:
importing the records stack alone (SQLAlchemy, SQLModel, Alembic) takes longer than the whole
request. Standard library only, so reading the link costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Container, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LocalApi",
    "home_dir",
    "local_operator",
    "read_link",
    "remove_link",
    "storage_fingerprint",
    "write_link",
]

LINK_FILE = "api.json"
# settings that choose which records and blobs a process works on: a command whose own differ
# from the server's must not read through it
_STORAGE = (
    "SKILLPRESS_DATABASE_URL",
    "SKILLPRESS_S3_ENDPOINT",
    "SKILLPRESS_S3_BUCKET",
    "SKILLPRESS_S3_SECURE",
)


@dataclass(frozen=True)
class LocalApi:
    url: str
    token: str
    operator: str  # the name changes made through the link are recorded under
    pid: int


def local_operator(taken: Container[str]) -> str:
    """The operator name changes made through the link are recorded under: `cli`, as a command
    line's own are (or `cli-local` where a person's token already has that name)."""
    return "cli" if "cli" not in taken else "cli-local"


def home_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """`SKILLPRESS_HOME` as the settings read it (default `~/.skillpress`), without loading them."""
    given = environ.get("SKILLPRESS_HOME")
    return Path(given) if given else Path.home() / ".skillpress"


def storage_fingerprint(environ: Mapping[str, str] = os.environ) -> str:
    text = "\n".join(f"{key}={environ.get(key, '')}" for key in _STORAGE)
    return hashlib.sha256(text.encode()).hexdigest()


def write_link(home: Path, url: str, token: str, operator: str) -> Path:
    path = home / LINK_FILE
    home.mkdir(parents=True, exist_ok=True)
    body = {
        "url": url,
        "token": token,
        "operator": operator,
        "pid": os.getpid(),
        "storage": storage_fingerprint(),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(body, f)
    return path


def remove_link(home: Path) -> None:
    """Remove the link if this process wrote it (a second server on the home may have since)."""
    path = home / LINK_FILE
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def read_link(environ: Mapping[str, str] = os.environ) -> LocalApi | None:
    """The API a live server on this home serves, when it works on the same storage as this
    process would; None otherwise (no server, a stale file, other settings)."""
    try:
        raw = json.loads((home_dir(environ) / LINK_FILE).read_text())
        pid = int(raw["pid"])
        os.kill(pid, 0)
        if raw["storage"] != storage_fingerprint(environ):
            return None
        return LocalApi(str(raw["url"]), str(raw["token"]), str(raw["operator"]), pid)
    except (OSError, ValueError, KeyError, TypeError):
        return None
