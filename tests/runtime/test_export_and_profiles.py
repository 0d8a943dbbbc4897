"""Skills outside skillpress: the Agent Skills folder, the tool contract and its verification,
and the provider profiles of `skillpress tools --format`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.app.operator.exports import write_agent_skills
from skillpress.derive import derive_package
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.interop.contract_check import verify_folder
from skillpress.runtime.interop.contracts import (
    ContractError,
    agent_skill_name,
    agent_skills_folder,
)
from skillpress.runtime.package.profiles import adapt
from skillpress.runtime.package.skill import load_skill
from tests.cli_process import skillpress
from tests.conftest import corpus
from tests.derive.test_corpus import REFUSED
from tests.derived import derived, spread
from tests.npm_tools import npm_binary

ROOT = Path(__file__).parents[2]
SPECS = ROOT / "tests" / "fixtures" / "specs"


def skills_ref() -> Path:
    """The Agent Skills reference validator (`skills-ref validate DIR`), from npm."""
    return npm_binary("skills-ref", "0.1.5", "skills-ref")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return skillpress(*args, timeout=60, cwd=ROOT)


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_the_agent_skills_folder_of_a_real_spec_is_complete_and_verifies(tmp_path: Path) -> None:
    package = derive_package((SPECS / "harbor.swagger2.yaml").read_bytes())
    pkg = tmp_path / "derived" / "harbor"  # a folder binds its package by its name
    write_package_dir(package.files, pkg)
    skills = tmp_path / "skills"  # not named as the skill: the folder goes in it, named so
    done = _cli("export", str(pkg), "--format", "agent-skills", "--out", str(skills))
    assert done.returncode == 0, done.stderr
    out = skills / "harbor"
    assert done.stderr == (
        f"note: an Agent Skills folder bears its skill's name: written to {out}"
        f" (give --out {out} to write there directly)\n"
    )
    assert done.stdout.startswith(f"wrote {out}: SKILL.md, tools.json (")
    again = _cli("export", str(pkg), "--format", "agent-skills", "--out", str(out))
    assert (again.returncode, again.stderr, sorted(skills.iterdir())) == (0, "", [out])
    validated = subprocess.run(
        [str(skills_ref()), "validate", str(out)], capture_output=True, text=True, timeout=60
    )
    assert validated.returncode == 0, validated.stderr
    skill_md = (out / "SKILL.md").read_text()
    front, text = skill_md.split("\n---\n", 1)
    name = re.search(r"^name: (.+)$", front, re.M)
    description = re.search(r"^description: (.+)$", front, re.M)
    assert (
        name
        and re.fullmatch(r"[a-z0-9-]{1,64}", name.group(1))
        and description
        and 0 < len(json.loads(description.group(1))) <= 1024
    )
    body = package.files["body.md"].decode()
    assert text.lstrip().startswith(body.split("\n", 1)[0]) and "## Categories" in text
    # the export's own verbs and paths, not the body's (no tool builds a request there)
    assert "load_tools" not in text and "call one by its name" not in text
    assert "Read a category's file (references/<category>.md) to see its operations." in text
    assert "The credential is the host's to attach (`user:password`" in text
    assert 'each one\'s file spells out its request under "The call"' in text
    categories = re.findall(r"^- `([a-z0-9_]+)` — ", text.split("## Tool Use Rules")[0], re.M)
    assert categories and all((out / "references" / f"{c}.md").is_file() for c in categories)
    listings = "".join((out / "references" / f"{c}.md").read_text() for c in categories)
    assert "references/<name>.md" in listings
    details = {f"{n}.md" for n in re.findall(r"^- `([a-z0-9_]+)` — ", listings, re.M)}
    assert len(details) == len(package.manifest.to_dict()["operations"]) and all(
        (out / "references" / d).is_file() for d in details
    )
    contract = json.loads((out / "tools.json").read_text())
    meta = json.loads(package.files["skill.json"])
    assert len(contract) == meta["stats"]["tools"]
    for op in meta["operations"]:
        ref = (out / "references" / op["file"]).read_text()
        if op["tool"]:
            assert "\n## The call\n`" + op["method"] + " " in ref, op["name"]
    kinds = {t["name"]: t for t in contract}
    assert (
        kinds["harbor_delete_project"]["type"] == "write"
        and kinds["harbor_list_projects"]["type"] == "read"
    )
    assert kinds["harbor_delete_project"]["inputSchema"]["required"][-1] == "user_confirmed"
    assert "user_confirmed" not in kinds["harbor_list_projects"]["inputSchema"]["properties"]
    verified = _cli("verify", str(out))
    assert verified.returncode == 0 and verified.stdout.startswith(f"ok: {len(contract)} tools, ")


def _folder() -> dict[str, bytes]:
    files = {
        p.name: p.read_bytes()
        for p in (ROOT / "skillpress" / "examples" / "hollowbrook-skill").iterdir()
    }
    return agent_skills_folder(load_skill(files), files)


def _tamper(change: Any) -> dict[str, bytes]:
    folder = _folder()
    contract = json.loads(folder["tools.json"])
    change(contract)
    folder["tools.json"] = json.dumps(contract).encode()
    return folder


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c[0].update(requiresConfirmation=False),
            "hollowbrook_cancel_booking: a write tool without requiresConfirmation",
        ),
        (
            lambda c: c[2]["inputSchema"]["required"].remove("user_confirmed"),
            "hollowbrook_create_booking: requires confirmation but its schema does not require user_confirmed",
        ),
        (
            lambda c: c[2]["inputSchema"]["properties"].pop("idempotency_key"),
            "hollowbrook_create_booking: idempotent but its schema does not require idempotency_key",
        ),
        (
            lambda c: c[1].update(
                type="write",
                requiresConfirmation=True,
                inputSchema={
                    **c[1]["inputSchema"],
                    "properties": {"user_confirmed": {}},
                    "required": ["user_confirmed"],
                },
            ),
            "hollowbrook_check_availability: SKILL.md calls it something other than write",
        ),
        (
            lambda c: c.remove(next(t for t in c if t["name"] == "hollowbrook_list_rooms")),
            "hollowbrook_list_rooms: in SKILL.md's Tool Use Rules but not in tools.json",
        ),
        (
            lambda c: c.remove(next(t for t in c if t.get("workflow") == "book_room")),
            "hollowbrook_book_room: references/workflows.yaml declares it, but tools.json does not list it",
        ),
        (
            lambda c: next(t for t in c if t.get("workflow") == "book_room").update(
                type="read", requiresConfirmation=False
            ),
            "hollowbrook_book_room: typed read, but its steps make it write",
        ),
    ],
)
def test_verify_fails_when_the_two_surfaces_disagree_or_a_write_lacks_confirmation(
    change: Any, message: str, tmp_path: Path
) -> None:
    assert verify_folder(_folder())["write"] == 3  # two operations, and the booking workflow
    tampered = _tamper(change)
    with pytest.raises(ContractError) as failed:
        verify_folder(tampered)
    assert message in str(failed.value)
    out = tmp_path / "t"
    for name, data in tampered.items():  # the whole folder, as an export writes it
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    cli = _cli("verify", str(out))
    assert cli.returncode == 1 and message in cli.stderr


def _walk(node: Any, path: str = "$") -> Any:
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_provider_profiles_hold_their_rules_on_every_tool(spec: Path) -> None:
    skill = load_skill(derived(spec, "https://api.example.test").files)
    for tool in spread(skill.tools):
        strict, _ = adapt(tool.schema, "openai-strict")
        for where, node in _walk(strict):
            if where.endswith(".properties"):  # a map of names to schemas, not a schema
                continue
            if isinstance(node.get("properties"), dict):
                assert node.get("additionalProperties") is False, (tool.name, where)
                assert sorted(node.get("required", [])) == sorted(node["properties"]), (
                    tool.name,
                    where,
                )
            assert not {"minLength", "maxLength", "default", "uniqueItems"} & set(node), (
                tool.name,
                where,
            )
            if node.get("type") == "array":
                assert "items" in node
        gemini, _ = adapt(tool.schema, "gemini")
        for where, node in _walk(gemini):
            if where.endswith(".properties"):
                continue
            assert "additionalProperties" not in node and not isinstance(node.get("type"), list), (
                tool.name,
                where,
            )
            assert "const" not in node and "default" not in node, (tool.name, where)


def test_a_strict_call_with_nulls_for_optional_arguments_is_the_call_without_them() -> None:
    skill = load_skill(derive_package((SPECS / "oai-petstore-expanded.yaml").read_bytes()).files)
    tool = skill.tool("find_pets")
    strict, notes = adapt(tool.schema, "openai-strict")
    assert (
        strict["required"] == ["tags", "limit"]
        and "$.tags: optional, so required and nullable (null means left out)" in notes
    )
    assert build_request(tool, {"tags": None, "limit": None}, skill.hosts) == build_request(
        tool, {}, skill.hosts
    )
    assert build_request(tool, {"tags": ["a"], "limit": None}, skill.hosts).url.endswith(
        "/pets?tags=a"
    )


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_tools_format_gemini_reports_what_changed(tmp_path: Path) -> None:
    out = _cli(
        "tools",
        str(ROOT / "skillpress" / "examples" / "hollowbrook-skill"),
        "--format",
        "gemini",
        "--report",
    )
    assert out.returncode == 0, out.stderr
    tools = json.loads(out.stdout)
    assert {t["name"] for t in tools} >= {"hollowbrook_create_booking"} and all(
        "parameters" in t for t in tools
    )
    # the operations need nothing changed; the book_room workflow's formats and default go
    assert out.stderr.strip().splitlines() == [
        "hollowbrook_book_room: $.arrival: dropped format date; $.departure: dropped format date;"
        " $.guests: dropped default",
        "gemini: 1 of 6 tools adapted",
    ]


def _tamper_both(change_md: Any, change_contract: Any = None) -> dict[str, bytes]:
    folder = _folder()
    folder["SKILL.md"] = change_md(folder["SKILL.md"].decode()).encode()
    if change_contract is not None:
        contract = json.loads(folder["tools.json"])
        change_contract({t["name"]: t for t in contract})
        folder["tools.json"] = json.dumps(contract).encode()
    return folder


def _relabel_cancel_as_read(tools: dict[str, Any]) -> None:
    cancel = tools["hollowbrook_cancel_booking"]
    cancel.update(type="read", requiresConfirmation=False)
    cancel["inputSchema"]["properties"].pop("user_confirmed")
    cancel["inputSchema"]["required"].remove("user_confirmed")


@pytest.mark.parametrize(
    ("change_md", "change_contract", "message"),
    [
        (
            lambda md: md.replace(
                "\nWrite operations are never executed without explicit confirmation in the"
                " current conversation.\n",
                "\n",
            ),
            None,
            "SKILL.md's Tool Use Rules lack the rule that writes need confirmation",
        ),
        (
            lambda md: md.replace("Only the tools listed below may be used.", "Use any tool."),
            None,
            "SKILL.md's Tool Use Rules lack the rule that only the listed tools",
        ),
        (
            lambda md: md.replace("\n---\n", "\n", 1),
            None,
            "SKILL.md has no name/description frontmatter",
        ),
        (
            lambda md: md,
            lambda tools: tools["hollowbrook_create_booking"]["inputSchema"]["properties"][
                "user_confirmed"
            ].update(type="string", const="yes"),
            "hollowbrook_create_booking: user_confirmed is not typed boolean, const true",
        ),
        (
            lambda md: md.replace(
                "- `hollowbrook_cancel_booking` (write): requires explicit user confirmation"
                " before every call; set `user_confirmed` only after it.",
                "- `hollowbrook_cancel_booking` (read): may be called without confirmation.",
            ),
            _relabel_cancel_as_read,
            "hollowbrook_cancel_booking: typed read, but references/cancel_booking.md declares"
            " DELETE /bookings/{booking_id} behind an approval gate",
        ),
        (
            lambda md: md,
            lambda tools: tools["hollowbrook_get_booking"]["inputSchema"]["properties"].update(
                booking_id={"type": "integer"}
            ),
            "hollowbrook_get_booking: its inputSchema is not the schema"
            " references/get_booking.md declares",
        ),
    ],
)
def test_verify_holds_both_files_to_the_reference_files(
    change_md: Any, change_contract: Any, message: str
) -> None:
    with pytest.raises(ContractError) as failed:
        verify_folder(_tamper_both(change_md, change_contract))
    assert message in str(failed.value)


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_the_exported_tools_call_through_the_runtime_as_their_contract_says(
    tmp_path: Path,
) -> None:
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.request import CallRefused

    out = tmp_path / "skills" / "hollowbrook"
    for name, data in _folder().items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    host = SkillHost(tmp_path / "skills")
    contract = {t["name"]: t for t in json.loads((out / "tools.json").read_text())}
    assert sorted(t["name"] for t in host.tools()) == sorted(contract)
    booking = {
        "room_id": "oak",
        "guest_name": "Ada",
        "arrival": "2026-12-24",
        "departure": "2026-12-27",
        "user_confirmed": True,
        "idempotency_key": "booking-ada-oak",
    }
    request = host.prepare("hollowbrook_create_booking", booking)
    assert dict(request.headers)["Idempotency-Key"] == "booking-ada-oak"
    assert json.loads(request.body or b"{}") == {
        k: v for k, v in booking.items() if k not in ("user_confirmed", "idempotency_key")
    }
    keyed = host.prepare(
        "hollowbrook_create_booking", {k: v for k, v in booking.items() if k != "idempotency_key"}
    )
    assert len(dict(keyed.headers)["Idempotency-Key"]) == 64  # derived from the identity fields
    with pytest.raises(CallRefused, match="user_confirmed must be true"):
        host.prepare("hollowbrook_create_booking", {**booking, "user_confirmed": False})
    with pytest.raises(CallRefused, match="takes no idempotency_key"):
        host.prepare(
            "hollowbrook_check_availability",
            {
                "room_id": "oak",
                "arrival": "2026-12-24",
                "departure": "2026-12-27",
                "idempotency_key": "k",
            },
        )
    # a hardened workflow is a tool of the contract too: typed by its steps, run by the host
    flow = contract["hollowbrook_book_room"]
    assert (flow["type"], flow["workflow"], flow["requiresConfirmation"]) == (
        "write",
        "book_room",
        True,
    )
    assert flow["inputSchema"]["required"][-1] == "user_confirmed"
    from skillpress.runtime.workflows.run import StepFailed

    stay = {k: booking[k] for k in ("room_id", "guest_name", "arrival", "departure")}
    with pytest.raises(StepFailed, match="user_confirmed must be true"):
        host.call("hollowbrook_book_room", {**stay, "user_confirmed": False})
    verified = _cli("verify", str(out))
    assert verified.returncode == 0, verified.stderr


def test_a_write_without_user_confirmed_is_refused_like_false_on_every_face(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Agent Skills folder's contract requires `user_confirmed` of every write: left out, the
    write is refused as `false` is, by SkillHost, over MCP, by the command line and in a
    workflow; the schema every face offers requires it too."""
    import asyncio

    from mcp import Client
    from typer.testing import CliRunner

    from skillpress.app.serving.calling import open_package
    from skillpress.cli.main import app
    from skillpress.host import SkillHost
    from skillpress.mcp.server import build_mcp_server
    from skillpress.runtime.calling.request import CallRefused
    from skillpress.runtime.workflows.run import StepFailed

    out = tmp_path / "skills" / "hollowbrook"
    for name, data in _folder().items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    host = SkillHost(tmp_path / "skills")
    offered = {t["name"]: t["input_schema"] for t in host.tools()}
    assert offered["hollowbrook_create_booking"]["required"][-1] == "user_confirmed"
    assert offered["hollowbrook_book_room"]["required"][-1] == "user_confirmed"
    assert "user_confirmed" not in offered["hollowbrook_list_rooms"].get("properties", {})
    booking = {
        "room_id": "oak",
        "guest_name": "Ada",
        "arrival": "2026-12-24",
        "departure": "2026-12-27",
    }
    with pytest.raises(CallRefused, match="user_confirmed must be true"):
        host.call("hollowbrook_create_booking", booking)
    with pytest.raises(CallRefused, match="user_confirmed must be true"):
        host.call("hollowbrook_cancel_booking", {"booking_id": "bk-1"})
    with pytest.raises(StepFailed, match="user_confirmed must be true"):
        host.call("hollowbrook_book_room", booking)
    host.prepare("hollowbrook_list_rooms", {})  # a read needs no confirmation
    skill, files = open_package(out)

    async def over_mcp() -> tuple[Any, Any]:
        async with Client(build_mcp_server(skill, files)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed  # the fixed tools
            described = await client.call_tool("describe_operation", {"name": "create_booking"})
            called = await client.call_tool(
                "call_operation", {"name": "create_booking", "arguments": booking}
            )
            return described, called

    described, called = asyncio.run(over_mcp())
    assert json.loads(described.content[0].text)["input_schema"]["required"][-1] == "user_confirmed"
    assert called.is_error and "user_confirmed must be true" in called.content[0].text
    monkeypatch.setenv("SKILLPRESS_HOME", str(tmp_path / "home"))
    done = CliRunner().invoke(
        app, ["call", str(out), "create_booking", "--args", json.dumps(booking), "--dry-run"]
    )
    assert done.exit_code == 2 and "user_confirmed must be true" in done.output
    # a contract that cannot be read is refused, never ignored
    (out / "tools.json").write_text('{"not": "a list"}')
    with pytest.raises(Exception, match="tools.json: not a list of tools"):
        SkillHost(tmp_path / "skills").tools()


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_every_export_verifies_loads_back_as_the_same_tools_and_passes_the_reference_validator(
    spec: Path, tmp_path: Path
) -> None:
    """The folder an agent elsewhere gets says what the package says: every tool, its schema,
    its kind (verify loads the reference files as the runtime does); and the Agent Skills
    reference validator (skills-ref, npm) takes the folder as it is written."""
    package = derived(spec, "https://api.example.test")
    skill = load_skill(package.files, lazy=True)
    folder = agent_skills_folder(skill, package.files)
    counts = verify_folder(folder)
    assert counts["tools"] == package.manifest.stats.tools
    written = write_agent_skills(skill, package.files, tmp_path)
    assert written.folder == tmp_path / agent_skill_name(skill.slug)
    assert (written.folder / "SKILL.md").read_bytes() == folder["SKILL.md"]
    validated = subprocess.run(
        [str(skills_ref()), "validate", str(written.folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert validated.returncode == 0, validated.stderr
    assert validated.stdout.strip() == f"Valid skill: {written.folder}"


def test_the_agent_skills_export_carries_the_workflows_as_procedures_over_its_tools() -> None:
    folder = _folder()
    text = folder["SKILL.md"].decode()
    section = text[text.index("## Workflows") : text.index("## Tool Use Rules")]
    lines = section.splitlines()
    assert "### book_room (hardened)" in lines
    assert (
        "Parameters: `arrival` (required), `departure` (required), `guest_name` (required),"
        " `guests` (default 2), `room_id` (required)." in lines
    )
    assert lines[lines.index("### book_room (hardened)") + 4] == (
        '1. `check`: call `hollowbrook_check_availability` with `{"room_id": "{{room_id}}",'
        ' "arrival": "{{arrival}}", "departure": "{{departure}}"}`; keep its answer as'
        " `availability`."
    )
    assert "2. `if_free`: if `availability.available`:" in lines
    assert "   otherwise:" in lines
    tools = {t["name"] for t in json.loads(folder["tools.json"])}
    named = set(re.findall(r"call `([a-z_]+)`", section))
    assert named and named <= tools, "every step names a tool of tools.json"
    assert verify_folder(folder)["write"] == 3  # the rules still close SKILL.md
