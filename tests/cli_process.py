"""The command line as a process, the way a person runs it: `skillpress ARGS`, its output
captured, in an environment the test gives (merged over this one, or instead of it). One
runner for every test that needs the command as a process (these are `integration` tests: see
tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).parents[1]
COMMAND = [sys.executable, "-m", "skillpress.cli.main"]


def skillpress(
    *args: str,
    env: Mapping[str, str] | None = None,
    replace_env: bool = False,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`skillpress ARGS`; `env` merged over this process's environment (`replace_env`: as it is)."""
    given = dict(env or {})
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=given if replace_env else {**os.environ, **given},
        cwd=cwd,
    )
