"""The runtime API for agent hosts: the README's example runs as written; a swapped folder is
reloaded; a gated call is not sent."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.app.host import GateClosed, SkillHost
from services.app.package_dir import write_package_dir
from services.derive import derive_package

ROOT = Path(__file__).parents[2]
PETSTORE = ROOT / "tests" / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## In your own agent host", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    write_package_dir(derive_package(PETSTORE.read_bytes()).files, tmp_path / "skills" / "petstore")
    done = subprocess.run(
        [sys.executable, "-c", code.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "4 petstore_find_pets\nGET http://petstore.swagger.io/api/pets?tags=dog&limit=5\n"
    )


def test_a_folder_swapped_by_a_follower_is_reloaded_and_gates_hold(tmp_path: Path) -> None:
    skills = tmp_path / "live"
    text = PETSTORE.read_text()
    for name, spec in (
        ("a", text),
        ("b", text.replace("operationId: addPet", "operationId: adoptPet")),
    ):
        write_package_dir(derive_package(spec.encode()).files, skills / ".versions" / name)
    os.symlink(".versions/a", skills / "petstore")
    host = SkillHost(skills)
    assert "petstore_add_pet" in [t["name"] for t in host.tools()]
    os.replace(_link(skills, ".versions/b"), skills / "petstore")
    names = [t["name"] for t in host.tools()]
    assert "petstore_adopt_pet" in names and "petstore_add_pet" not in names
    shutil.copytree(ROOT / "services" / "examples" / "hollowbrook-skill", skills / "hollowbrook")
    with pytest.raises(GateClosed, match=r"^not sent: cancel_booking is gated \(risk high\)"):
        host.call("hollowbrook_cancel_booking", {"booking_id": "bk-1"})


def _link(folder: Path, target: str) -> Path:
    swap = folder / ".swap"
    os.symlink(target, swap)
    return swap


def test_two_folders_of_one_skill_are_refused_so_a_call_cannot_reach_the_wrong_gates(
    tmp_path: Path,
) -> None:
    from services.runtime.skill import PackageError

    files = derive_package(PETSTORE.read_bytes()).files
    write_package_dir(files, tmp_path / "skills" / "payments")
    write_package_dir(files, tmp_path / "skills" / "pets")
    host = SkillHost(tmp_path / "skills")
    with pytest.raises(PackageError, match=r"pets is skill petstore, which another folder"):
        host.tools()
    only = SkillHost(tmp_path / "skills", skills=("pets",))
    names = [t["name"] for t in only.tools()]
    assert len(names) == len(set(names)) == 4
