"""`skillpress derive` and `skillpress tools` as a person runs them: real processes, exact outputs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # the command line as a process (tests/conftest.py)

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_derive_writes_the_package_and_prints_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "pets"
    result = run("derive", str(SPECS / "oai-petstore-expanded.yaml"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("derived petstore: 4 operations, 4 tools (all)")
    assert "body      " in result.stdout and "hosts     petstore.swagger.io" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "add_pet.md",
        "body.md",
        "delete_pet.md",
        "find_pet_by_id.md",
        "find_pets.md",
        "index.json",
        "skill.json",
        "types.json",
    ]


def test_derive_json_summary_and_overrides(tmp_path: Path) -> None:
    result = run(
        "derive",
        str(SPECS / "airflow-v1.yaml"),
        "--out",
        str(tmp_path / "a"),
        "--slug",
        "airflow",
        "--base-url",
        "https://airflow.example.com/",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["slug"] == "airflow"
    assert summary["base_url"] == "https://airflow.example.com/api/v1"
    assert summary["hosts"] == ["airflow.example.com"]
    assert summary["auth_header"] == "Authorization"
    assert summary["operations"] == 89


def test_refused_input_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"openapi": "3.0.0", "info": {"title": "a", "title": "b"}}')
    result = run("derive", str(bad), "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert (
        result.stderr
        == "error: duplicate key 'title': a document with duplicate keys is ambiguous; remove one\n"
    )
    assert not (tmp_path / "o").exists(), "nothing is written for a refused spec"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"], "nor left aside"


def test_webhooks_only_is_refused_with_a_reason() -> None:
    result = run(
        "derive",
        str(SPECS / "adyen-management-notification-v3.json"),
        "--out",
        "/tmp/never-written-skillpress",
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: the document describes only webhooks (8)")
    assert "Traceback" not in result.stderr


def test_missing_file_and_foreign_out_dir(tmp_path: Path) -> None:
    result = run("derive", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and result.stderr.startswith("error: cannot read")
    assert list(tmp_path.iterdir()) == [], "the folder made aside for the package is removed"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    result = run("derive", str(SPECS / "oai-petstore.swagger2.yaml"), "--out", str(foreign))
    assert (
        result.returncode == 2
        and "is not empty and holds no skill.json; choose another --out" in result.stderr
    )
    assert (foreign / "notes.txt").read_text() == "mine"


def test_rederive_replaces_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "p"
    assert (
        run("derive", str(SPECS / "oai-petstore-expanded.yaml"), "--out", str(out)).returncode == 0
    )
    assert (
        run("derive", str(SPECS / "oai-petstore.swagger2.yaml"), "--out", str(out)).returncode == 0
    )
    assert "add_pet.md" not in {p.name for p in out.iterdir()}
    assert "list_pets.md" in {p.name for p in out.iterdir()}


def test_the_replaced_package_and_older_leftovers_are_removed_without_waiting(
    tmp_path: Path,
) -> None:
    """The command does not wait for the old package's unlinks: a detached process removes it,
    and any `.out.old-*` a killed removal left behind (but nothing else beside it)."""
    out = tmp_path / "p"
    spec = str(SPECS / "oai-petstore-expanded.yaml")
    assert run("derive", spec, "--out", str(out)).returncode == 0
    leftover = tmp_path / ".p.old-99999999"
    (leftover / "deep").mkdir(parents=True)
    (leftover / "deep" / "skill.json").write_text("{}")
    kept = tmp_path / ".q.old-1"
    kept.mkdir()
    assert run("derive", spec, "--out", str(out)).returncode == 0
    assert (out / "skill.json").is_file() and (out / "add_pet.md").is_file()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(p.name.startswith(".p.") for p in tmp_path.iterdir()):
        time.sleep(0.05)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".q.old-1", "p"]


def test_tools_in_each_provider_shape(tmp_path: Path) -> None:
    out = tmp_path / "p"
    assert (
        run("derive", str(SPECS / "oai-petstore-expanded.yaml"), "--out", str(out)).returncode == 0
    )
    anthropic = json.loads(run("tools", str(out), "--format", "anthropic").stdout)
    openai = json.loads(run("tools", str(out), "--format", "openai").stdout)
    mcp = json.loads(run("tools", str(out), "--format", "mcp").stdout)
    assert [t["name"] for t in anthropic] == [
        "petstore_find_pets",
        "petstore_add_pet",
        "petstore_find_pet_by_id",
        "petstore_delete_pet",
    ]
    only = json.loads(run("tools", str(out), "--only", "add_pet", "--only", "find_pets").stdout)
    assert [t["name"] for t in only] == ["petstore_add_pet", "petstore_find_pets"]
    unknown = run("tools", str(out), "--only", "add_pets")
    assert unknown.returncode == 2 and unknown.stderr.strip() == (
        "error: petstore has no operation or tool named 'add_pets'; did you mean add_pet, find_pets?"
    ), unknown.stderr
    add = anthropic[1]
    assert add == {
        "name": "petstore_add_pet",
        "description": "Creates a new pet in the store. (create pet: POST /api/pets)",
        "input_schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "tag": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    }
    assert openai[1] == {
        "type": "function",
        "function": {
            "name": "petstore_add_pet",
            "description": add["description"],
            "parameters": add["input_schema"],
        },
    }
    assert mcp[1] == {
        "name": "petstore_add_pet",
        "description": add["description"],
        "inputSchema": add["input_schema"],
    }
    bad = run("tools", str(out), "--format", "gemini-ultra")
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown format 'gemini-ultra'")
    not_pkg = run("tools", str(tmp_path))
    assert (
        not_pkg.returncode == 2
        and "holds neither skill.json nor operation files (*.md): not a skill package"
        in not_pkg.stderr
    )


def test_help_lists_the_commands() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("derive", "tools", "up", "demo"):
        assert command in result.stdout


def test_an_offline_derive_loads_no_database_broker_or_settings_module(tmp_path: Path) -> None:
    spec = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
    loaded = _modules_loaded(
        ["derive", str(spec), "--out", str(tmp_path / "out")], Path(__file__).parents[2]
    )
    assert (tmp_path / "out" / "skill.json").is_file()
    unneeded = {
        "sqlalchemy",
        "sqlmodel",
        "alembic",
        "psycopg",
        "nats",
        "faststream",
        "minio",
        "pydantic_settings",
        "httpx",
        "skillpress.platform.settings",
        "skillpress.platform.records",
        "skillpress.app.base.context",
        "rich.markdown",
    }
    assert sorted(unneeded & loaded) == []


def _modules_loaded(args: list[str], cwd: Path) -> set[str]:
    """The modules a command had loaded when it ended (however it ended: `derive` leaves through
    os._exit, so the list is written from there too)."""
    probe = (
        "import os, sys\n"
        "def dump():\n    print('\\n'.join(sorted(sys.modules)), file=sys.stderr, flush=True)\n"
        "leave = os._exit\n"
        "os._exit = lambda code: (dump(), leave(code))\n"
        "from skillpress.cli.main import main\n"
        f"sys.argv = ['skillpress', *{args!r}]\n"
        "try:\n    main()\n"
        "except SystemExit:\n    pass\n"
        "dump()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=cwd, input=""
    )
    loaded = set(done.stderr.split())
    assert "skillpress.cli.main" in loaded, done.stdout + done.stderr  # the list was written
    return loaded


def test_a_call_and_an_mcp_server_on_a_package_directory_open_no_records(
    tmp_path: Path,
) -> None:
    spec = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
    root = Path(__file__).parents[2]
    assert run("derive", str(spec), "--out", str(tmp_path / "pets")).returncode == 0
    records = {"sqlalchemy", "sqlmodel", "alembic", "skillpress.app.base.context"}
    call = ["call", str(tmp_path / "pets"), "find_pets", "--dry-run"]
    assert sorted(records & _modules_loaded(call, root)) == []
    # an MCP server started and given no request (stdin closed): what its start loaded
    assert sorted(records & _modules_loaded(["mcp", str(tmp_path / "pets")], root)) == []


def test_call_base_url_moves_every_request_and_says_so_and_the_slug_stays(tmp_path: Path) -> None:
    spec = SPECS / "stripe.json"
    # each folder named for its skill: a folder binds its package by its name
    plain, moved = tmp_path / "plain" / "stripe", tmp_path / "moved" / "stripe"
    assert run("derive", str(spec), "--out", str(plain)).returncode == 0
    again = run("derive", str(spec), "--out", str(moved), "--base-url", "http://127.0.0.1:4010")
    assert again.returncode == 0, again.stderr
    slugs = {json.loads((p / "skill.json").read_text())["slug"] for p in (plain, moved)}
    assert slugs == {"stripe"}  # another base URL is the same API: the same tool names
    dry = run(
        "call",
        str(plain),
        "get_customers",
        "--args",
        '{"limit": 3}',
        "--dry-run",
        "--base-url",
        "http://127.0.0.1:4010",
    )
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["url"] == "http://127.0.0.1:4010/v1/customers?limit=3"
    assert (
        "note: --base-url: every request of stripe goes to http://127.0.0.1:4010 (its credential"
        " too), not to the hosts the skill declares"
    ) in dry.stderr


def test_version_and_errors_as_json_when_json_is_asked_for(tmp_path: Path) -> None:
    shown = run("--version")
    assert shown.returncode == 0 and shown.stdout.startswith("skillpress 0.")
    missing = run("derive", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o"), "--json")
    assert missing.returncode == 2
    said = json.loads(missing.stderr.strip().splitlines()[-1])
    assert said["code"] == 2 and said["error"].startswith("cannot read ")
