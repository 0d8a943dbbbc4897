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
    shutil.copytree(ROOT / "skillpress", tree / "skillpress", ignore=ignore)
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
            "skillpress/derive/breach.py",
            "from skillpress.platform import settings\n",
            "skillpress.derive.breach -> skillpress.platform.settings",
        ),
        (
            "skillpress/app/breach.py",
            "def later() -> None:\n    import skillpress.workers.app\n",
            "skillpress.app.breach -> skillpress.workers.app",
        ),
        (
            "skillpress/cli/breach.py",
            "import skillpress.api.v1\n",
            "skillpress.cli.breach -> skillpress.api.v1",
        ),
        (
            "skillpress/derive/breach.py",
            "import httpx\n",
            "skillpress.derive.breach -> httpx",
        ),
        (
            "skillpress/cli/breach.py",
            "def later() -> None:\n    from skillpress.runtime.package.skill import load_skill\n",
            "skillpress.cli.breach -> skillpress.runtime.package.skill",
        ),
        (
            "skillpress/cli/pipeline_commands.py",
            "from skillpress.runtime.calling.calls import place_call\n",
            "skillpress.cli.pipeline_commands -> skillpress.runtime.calling.calls",
        ),
        (
            "skillpress/api/breach.py",
            "from skillpress.runtime.package.skill import load_skill\n",
            "skillpress.api.breach -> skillpress.runtime.package.skill",
        ),
        (
            "skillpress/workers/breach.py",
            "from skillpress.derive.approvals import guess_suggestions\n",
            "skillpress.workers.breach -> skillpress.derive.approvals",
        ),
        (
            "skillpress/app/serving/breach.py",
            "from skillpress.app.operator.exports import overlay\n",
            "skillpress.app.serving.breach -> skillpress.app.operator.exports",
        ),
        (
            "skillpress/app/records/breach.py",
            "from skillpress.app.stages.fetch import take_submission\n",
            "skillpress.app.records.breach -> skillpress.app.stages.fetch",
        ),
        (
            "skillpress/host.py",
            "from skillpress.derive.naming import api_slug\n",
            "skillpress.host -> skillpress.derive.naming",
        ),
        (
            "skillpress/runtime/calling/breach.py",
            "from skillpress.derive.render import render_operation\n",
            "skillpress.runtime.calling.breach -> skillpress.derive.render",
        ),
        (
            "skillpress/runtime/calling/breach.py",
            "from skillpress.runtime.workflows.run import run_workflow\n",
            "skillpress.runtime.calling.breach -> skillpress.runtime.workflows.run",
        ),
        (
            "skillpress/format/breach.py",
            "from skillpress.derive.model import Operation\n",
            "skillpress.format.breach -> skillpress.derive.model",
        ),
        (
            "skillpress/cli/breach.py",
            "from skillpress.mcp.server import build_mcp_server\n",
            "skillpress.cli.breach -> skillpress.mcp.server",
        ),
        (
            "skillpress/mcp/breach.py",
            "from skillpress.host import SkillHost\n",
            "skillpress.mcp.breach -> skillpress.host",
        ),
        (
            "skillpress/app/operator/breach.py",
            "from sqlmodel import select\n",
            "skillpress.app.operator.breach -> sqlmodel",
        ),
        (
            "skillpress/workers/breach.py",
            "from sqlmodel import select\n",
            "skillpress.workers.breach -> sqlmodel",
        ),
        (
            "skillpress/api/console.py",
            "from skillpress.api.v1 import router\n",
            "skillpress.api.console -> skillpress.api.v1",
        ),
    ],
    ids=[
        "core-to-platform",
        "app-to-workers-inside-a-function",
        "face-to-face",
        "core-io",
        "face-to-runtime-past-app",
        "operator-command-to-runtime",
        "api-to-runtime-past-app",
        "worker-to-core-past-app",
        "room-to-room",
        "records-to-a-room",
        "agent-face-to-derive",
        "runtime-to-derive",
        "runtime-room-to-a-room-above",
        "format-to-derive",
        "cli-to-the-mcp-face",
        "agent-face-to-agent-face",
        "sql-outside-the-records-room",
        "sql-in-a-worker",
        "console-to-the-json-api",
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
    """No circle among the runtime's modules, counting every import (a function's own too: a
    circle held open by a local import is still a circle)."""
    import ast

    graph: dict[str, set[str]] = {}
    base = ROOT / "skillpress" / "runtime"
    for path in base.rglob("*.py"):
        name = "skillpress." + ".".join(path.relative_to(ROOT / "skillpress").with_suffix("").parts)
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "skillpress.runtime."
            ):
                deps.add(str(node.module))
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("skillpress.runtime.")}
        graph[name.removesuffix(".__init__")] = deps - {name}
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


def test_a_workflow_run_is_assembled_in_one_place() -> None:
    """Every face runs a workflow through `runtime/workflows/runner.run_flow` (the command
    line's `run_here`, the MCP server, `SkillHost`): none assembles its own run from the parts
    (a run written three times let the faces drift: one checked sandboxed writes and another
    did not, one asked the workflow's skill to approve another skill's step)."""
    import ast

    parts = {"journaled", "placed_step", "run_workflow", "guided_run", "draft_run"}
    home = ROOT / "skillpress" / "runtime" / "workflows"
    found = []
    for path in (ROOT / "skillpress").rglob("*.py"):
        if path.parent == home:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                checks = any(  # a dry run that only checks (promoting a workflow) sends nothing
                    isinstance(a, ast.Call) and getattr(a.func, "id", None) == "dry_call"
                    for a in node.args
                )
                if name in parts and not checks:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert found == []


def test_a_circle_between_siblings_fails_naming_it(tmp_path: Path) -> None:
    """The acyclic-siblings contract fires on a circle held open by a function's own import:
    intake importing submissions back (the circle #53 broke) is named."""
    tree = _copy(tmp_path)
    intake = tree / "skillpress" / "app" / "operator" / "intake.py"
    intake.write_text(
        intake.read_text()
        + "\n\ndef later() -> None:\n    from skillpress.app.operator.submissions import submit_spec\n"
    )
    done = _lint(tree)
    assert done.returncode != 0
    assert "No cycles are allowed in skillpress.app.operator" in done.stdout, done.stdout
    assert ".intake -> .submissions" in done.stdout or ".submissions -> .intake" in done.stdout
