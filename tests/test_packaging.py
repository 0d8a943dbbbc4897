"""skillpress installs under one import name: every module lives in the one package `skillpress/`,
so an application with its own `services` or `schemas` package (a common layout) neither shadows
ours nor is shadowed by it. Shown for a wheel built from the tree, installed into a fresh
virtualenv, and for the editable install the suite runs in (the two identical in content); both
next to a user's own `services` and `schemas`."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import skillpress

pytestmark = pytest.mark.integration  # builds a wheel and installs it into fresh virtualenvs

ROOT = Path(__file__).parents[1]

# run beside the user's own packages: import every module of ours, then check theirs is intact
# and nothing of ours was loaded under a generic name
_PROBE = """
import importlib, json, pkgutil, sys
import services, schemas
from skillpress import SkillHost, SkillpressError, GateClosed
import skillpress

mine = [m.name for m in pkgutil.walk_packages(skillpress.__path__, "skillpress.")
        if ".migrations" not in m.name]
for name in mine:
    importlib.import_module(name)
print(json.dumps({
    "services": services.WHO, "schemas": schemas.WHO,
    "generic": sorted(m for m in sys.modules
                      if m.split(".")[0] in ("services", "schemas") and m not in ("services", "schemas")),
    "imported": len(mine), "host": SkillHost.__module__,
    "errors": [SkillpressError.__module__, GateClosed.__module__],
    "home": skillpress.__file__,
}))
"""


def _user_app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    for name in ("services", "schemas"):
        (app / name).mkdir(parents=True)
        (app / name / "__init__.py").write_text(f'WHO = "the user\'s own {name}"\n')
    return app


def _probe(python: Path, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(python), "-c", _PROBE],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _expected(probed: dict[str, object]) -> None:
    assert probed["services"] == "the user's own services"
    assert probed["schemas"] == "the user's own schemas"
    assert probed["generic"] == []
    assert probed["host"] == "skillpress.host"
    assert probed["errors"] == [
        "skillpress.errors",
        "skillpress.runtime.calling.calls",
    ]
    assert isinstance(probed["imported"], int) and probed["imported"] > 100


def test_the_public_surface_is_one_import_away() -> None:
    assert set(skillpress.__all__) == set(skillpress._HOMES)
    for name, home in skillpress._HOMES.items():
        assert getattr(skillpress, name) is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match="no attribute 'services_please'"):
        skillpress.services_please  # noqa: B018


def test_the_editable_install_beside_a_users_services(tmp_path: Path) -> None:
    probed = _probe(Path(sys.executable), _user_app(tmp_path))
    _expected(probed)
    assert probed["home"] == str(ROOT / "skillpress" / "__init__.py")


def test_a_built_wheel_in_a_fresh_virtualenv_beside_a_users_services(tmp_path: Path) -> None:
    # the tree as a clone has it, built offline
    tree = tmp_path / "tree"
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "skillpress", tree / "skillpress", symlinks=True, ignore=junk)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(dist), str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("skillpress-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.startswith("skillpress-")} == {"skillpress"}
    for data in (
        "skillpress/py.typed",
        "skillpress/schemas/openapi.json",
        "skillpress/api/templates/base.html",
        "skillpress/examples/hollowbrook.yaml",
        "skillpress/platform/migrations/env.py",
        "skillpress/platform/migrations/versions/0005_submission_outcomes.py",
    ):
        assert data in names, data
    # the wheel holds what the tree's package holds: the editable install and it are one content
    shipped = {n for n in names if n.startswith("skillpress/") and n.endswith(".py")}
    tree_py = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "skillpress").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert shipped == tree_py, sorted(shipped ^ tree_py)[:5]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True, timeout=240)
    # the dependencies come from the suite's environment (its site-packages on the path, not its
    # .pth files, so the editable skillpress there is not seen)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    app = _user_app(tmp_path)
    probed = _probe(python, app)
    _expected(probed)
    assert probed["home"] == str(site / "skillpress" / "__init__.py")

    # the command the wheel installs works from the user's folder and uses its own package data
    skill = subprocess.run(
        [str(venv / "bin" / "skillpress"), "derive", "--help"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert skill.returncode == 0 and "Usage: skillpress derive" in skill.stdout, skill.stderr
    spec = site / "skillpress" / "examples" / "hollowbrook.yaml"
    derived = subprocess.run(
        [str(venv / "bin" / "skillpress"), "derive", str(spec), "--out", str(app / "out")],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert derived.returncode == 0, derived.stderr
    assert json.loads((app / "out" / "skill.json").read_text())["slug"] == "hollowbrook"
