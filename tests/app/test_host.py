"""The runtime API for agent hosts: the README's example runs as written; a swapped folder is
reloaded; a gated call is not sent."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive import derive_package
from skillpress.host import GateClosed, SkillHost
from tests.fake_api import FakeApi, Reply

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
    shutil.copytree(ROOT / "skillpress" / "examples" / "hollowbrook-skill", skills / "hollowbrook")
    with pytest.raises(GateClosed, match=r"^not sent: cancel_booking is gated \(risk high\)"):
        host.call("hollowbrook_cancel_booking", {"booking_id": "bk-1"})


def _link(folder: Path, target: str) -> Path:
    swap = folder / ".swap"
    os.symlink(target, swap)
    return swap


def test_a_folder_binds_its_package_by_its_own_name_so_a_call_cannot_reach_the_wrong_gates(
    tmp_path: Path,
) -> None:
    """The package (slug `petstore`) in two folders is two skills, each named for its folder:
    its tools, its credential variable and its gates' records are the folder's, never what a
    file inside says."""
    from skillpress.runtime.package.model import UnknownOperation

    files = derive_package(PETSTORE.read_bytes()).files
    write_package_dir(files, tmp_path / "skills" / "payments")
    write_package_dir(files, tmp_path / "skills" / "pets")
    host = SkillHost(tmp_path / "skills")
    names = sorted(t["name"] for t in host.tools())
    assert names == sorted(
        f"{slug}_{op}"
        for slug in ("payments", "pets")
        for op in ("add_pet", "delete_pet", "find_pet_by_id", "find_pets")
    )
    assert [s.slug for s in host.bound()] == ["payments", "pets"]
    with pytest.raises(UnknownOperation, match="petstore_find_pets"):
        host.prepare("petstore_find_pets", {})  # the name the file's own slug would give


def _echo() -> FakeApi:
    """Answers every request with what it was sent: the path and the credential header (which
    the runtime takes out of the answer: `seen` keeps what arrived)."""
    return FakeApi(lambda r: Reply(200, {"path": r.path, "key": r.header("X-Hollowbrook-Key")}))


def _keys(echo: FakeApi) -> list[str | None]:
    return [r.header("X-Hollowbrook-Key") for r in echo.seen]


def test_a_multi_tenant_host_passes_base_url_credentials_timeout_and_its_own_approvals(
    tmp_path: Path,
) -> None:
    import asyncio

    from skillpress.errors import SkillpressError
    from skillpress.runtime.calling.gates import GateCheck

    echo = _echo()
    try:
        relative = PETSTORE.read_text().replace("url: http://petstore.swagger.io/api", "url: /api")
        assert relative != PETSTORE.read_text()
        write_package_dir(derive_package(relative.encode()).files, tmp_path / "skills" / "petstore")
        shutil.copytree(
            ROOT / "skillpress" / "examples" / "hollowbrook-skill",
            tmp_path / "skills" / "hollowbrook",
        )
        bare = SkillHost(tmp_path / "skills", skills=("petstore",))
        with pytest.raises(SkillpressError, match="declares no host"):
            bare.call("petstore_find_pets", {})
        decided: list[GateCheck] = []

        def approve_small(check: GateCheck) -> None:
            decided.append(check)
            if check.bound.get("booking_id") != "bk-1":
                raise GateClosed("not sent: waits for request #7", request=7)

        host = SkillHost(
            tmp_path / "skills",
            base_urls={"petstore": echo.url, "hollowbrook": echo.url},
            gatekeeper=approve_small,
        )
        assert host.call("petstore_find_pets", {"limit": 1}).body_value() == {
            "path": "/api/pets?limit=1",
            "key": None,
        }
        one = host.call("hollowbrook_list_rooms", {}, environ={"HOLLOWBROOK_API_KEY": "tenant-1"})
        two = asyncio.run(
            host.acall("hollowbrook_list_rooms", {}, environ={"HOLLOWBROOK_API_KEY": "tenant-2"})
        )
        assert _keys(echo)[1:] == ["tenant-1", "tenant-2"]  # each call its own tenant's key
        # and an API that echoes a key gives the agent none of it
        assert (one.body_value()["key"], two.body_value()["key"]) == ("[redacted]", "[redacted]")
        cancelled = host.call("hollowbrook_cancel_booking", {"booking_id": "bk-1"}, timeout=5)
        assert cancelled.body_value()["path"] == "/bookings/bk-1"
        with pytest.raises(GateClosed) as waiting:
            host.call("hollowbrook_cancel_booking", {"booking_id": "bk-2"})
        assert waiting.value.request == 7 and isinstance(waiting.value, SkillpressError)
        assert [c.bound for c in decided] == [{"booking_id": "bk-1"}, {"booking_id": "bk-2"}]
    finally:
        echo.close()


def test_a_host_with_a_model_offers_and_runs_a_guided_workflow_as_a_tool(tmp_path: Path) -> None:
    import yaml

    echo = _echo()
    try:
        skill = tmp_path / "skills" / "hollowbrook"
        shutil.copytree(ROOT / "skillpress" / "examples" / "hollowbrook-skill", skill)
        flows = yaml.safe_load((skill / "workflows.yaml").read_text())
        flows["workflows"].append(
            {
                "name": "find_booking",
                "description": "Find a booking by its id.",
                "execution": "guided",
                "tool": "get_booking",
                "parameters": {
                    "type": "object",
                    "properties": {"booking_id": {"type": "string"}},
                    "required": ["booking_id"],
                },
            }
        )
        (skill / "workflows.yaml").write_text(yaml.safe_dump(flows, sort_keys=False))
        asked: list[object] = []

        def model(messages: list[dict], tools: list[dict], choice: object) -> dict:
            # the host's model stand-in: it calls the tool it is made to, with the user's value
            asked.append(choice)
            given = json.loads(messages[-1]["content"])
            call = {"name": tools[0]["function"]["name"], "arguments": json.dumps(given)}
            return {"tool_calls": [{"id": "c1", "type": "function", "function": call}]}

        bases = {"hollowbrook": echo.url}
        without = SkillHost(tmp_path / "skills", base_urls=bases)
        names = [t["name"] for t in without.tools()]
        assert "hollowbrook_book_room" in names and "hollowbrook_find_booking" not in names
        host = SkillHost(tmp_path / "skills", base_urls=bases, chat=model)
        assert "hollowbrook_find_booking" in [t["name"] for t in host.tools()]
        done = host.call("hollowbrook_find_booking", {"booking_id": "bk-7"}).body_value()
        assert done["workflow"] == "find_booking"
        assert done["result"]["path"] == "/bookings/bk-7"
        assert asked == [{"type": "function", "function": {"name": "hollowbrook_get_booking"}}]
    finally:
        echo.close()
