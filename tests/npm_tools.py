"""Other people's command-line tools from the npm registry, installed by the test session into
a cache (~/.cache/skillpress-tests/<package>-<version>, `$XDG_CACHE_HOME`) on first use and
reused after: Prism (the judge of requests against a spec) and skills-ref (the Agent Skills
reference validator)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["NpmToolUnavailable", "npm_binary"]


class NpmToolUnavailable(RuntimeError):
    """The tool could not be installed; the message says what is missing."""


def npm_binary(package: str, version: str, command: str) -> Path:
    """The executable `command` of `package@version`, installed from npm on first use (one
    installer at a time, however many test processes ask)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = base / "skillpress-tests" / f"{package.rsplit('/', 1)[-1]}-{version}"
    binary = target / "node_modules" / ".bin" / command
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise NpmToolUnavailable(
            f"{package} needs Node.js and npm (Debian: apt install nodejs npm)"
        )
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(target),
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    "--loglevel=error",
                    f"{package}@{version}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not binary.exists():
                raise NpmToolUnavailable(
                    f"npm install {package}@{version} failed: {done.stderr.strip()[-2000:]}"
                )
    return binary
