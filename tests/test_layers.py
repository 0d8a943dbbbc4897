"""The layer rules hold (import-linter, as CI runs it) and would catch a breach: the same check
over a copy of the tree with one forbidden import added fails, naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "250"},
    )


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "static", "templates", "examples")
    for part in ("services", "schemas"):
        shutil.copytree(ROOT / part, tree / part, ignore=ignore)
    shutil.copytree(ROOT / "skillpress", tree / "skillpress", symlinks=True, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_the_layer_rules_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("where", "line", "broken"),
    [
        (
            "services/derive/breach.py",
            "from skillpress.services.platform import settings\n",
            "skillpress.services.derive.breach -> skillpress.services.platform.settings",
        ),
        (
            "services/app/breach.py",
            "def later() -> None:\n    import skillpress.services.workers.app\n",
            "skillpress.services.app.breach -> skillpress.services.workers.app",
        ),
        (
            "services/cli/breach.py",
            "import skillpress.services.api.v1\n",
            "skillpress.services.cli.breach -> skillpress.services.api.v1",
        ),
        (
            "services/derive/breach.py",
            "import httpx\n",
            "skillpress.services.derive.breach -> httpx",
        ),
        (
            "services/cli/breach.py",
            "def later() -> None:\n    from skillpress.services.runtime.skill import load_skill\n",
            "skillpress.services.cli.breach -> skillpress.services.runtime.skill",
        ),
        (
            "services/workers/breach.py",
            "from skillpress.services.derive.approvals import guess_suggestions\n",
            "skillpress.services.workers.breach -> skillpress.services.derive.approvals",
        ),
        (
            "services/app/serving/breach.py",
            "from skillpress.services.app.operator.exports import overlay\n",
            "skillpress.services.app.serving.breach -> skillpress.services.app.operator.exports",
        ),
        (
            "services/app/records/breach.py",
            "from skillpress.services.app.stages.fetch import take_submission\n",
            "skillpress.services.app.records.breach -> skillpress.services.app.stages.fetch",
        ),
        (
            "services/host.py",
            "from skillpress.services.runtime.skill import load_skill\n",
            "skillpress.services.host -> skillpress.services.runtime.skill",
        ),
        (
            "services/app/operator/breach.py",
            "from sqlmodel import select\n",
            "skillpress.services.app.operator.breach -> sqlmodel",
        ),
    ],
    ids=[
        "core-to-platform",
        "app-to-workers-inside-a-function",
        "face-to-face",
        "core-io",
        "face-to-runtime-past-app",
        "worker-to-core-past-app",
        "room-to-room",
        "records-to-a-room",
        "host-face-to-runtime-past-app",
        "sql-outside-the-records-room",
    ],
)
def test_a_deliberate_breach_fails_naming_it(
    tmp_path: Path, where: str, line: str, broken: str
) -> None:
    tree = _copy(tmp_path)
    (tree / where).write_text(line)
    done = _lint(tree)
    assert done.returncode != 0
    assert "BROKEN" in done.stdout and broken in done.stdout, done.stdout


def test_the_runtime_imports_in_one_direction() -> None:
    """No circle among the runtime's modules at import time (the types a workflow is made of
    live in a leaf, `workflow_model`, that every module shares)."""
    import ast

    graph: dict[str, set[str]] = {}
    for path in (ROOT / "services" / "runtime").glob("*.py"):
        deps = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "skillpress.services.runtime."
            ):
                deps.add(str(node.module).rsplit(".", 1)[-1])
        graph[path.stem] = deps
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            circles.append(path[path.index(module) :] + [module])
            return
        for dep in sorted(graph.get(module, ())):
            visit(dep, [*path, module])

    for module in sorted(graph):
        visit(module, [])
    assert circles == []
