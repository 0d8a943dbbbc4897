"""Workflows: refused at load with the remedy, and a hardened one run with no model against the
guesthouse test server — exactly the expected requests in order, nothing sent on a dry run, the
failing step named, destructive steps held back in the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.run import WorkflowRefused
from tests.cli_process import skillpress
from tests.runtime.guesthouse import (
    EXAMPLE,
    KEY,
    GuesthouseServer,
    example_skill,
)

STAY = {
    "room_id": "oak",
    "guest_name": "Ada Lovelace",
    "arrival": "2026-12-24",
    "departure": "2026-12-27",
}


def _files(workflows: str | None = None) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    if workflows is not None:
        files["workflows.yaml"] = workflows.encode()
    return files


def _one(steps: list[dict], **extra: object) -> str:
    return yaml.safe_dump(
        {
            "workflows": [
                {
                    "name": "flow",
                    "execution": "hardened",
                    "parameters": {
                        "type": "object",
                        "properties": {"room_id": {"type": "string"}},
                        "required": ["room_id"],
                    },
                    "steps": steps,
                    **extra,
                }
            ]
        }
    )


CHECK = {
    "id": "check",
    "tool": "check_availability",
    "args": {"room_id": "{{room_id}}", "arrival": "2026-01-01", "departure": "2026-01-02"},
    "save_as": "availability",
}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _one([{"id": "a", "tool": "book_a_spa"}]),
            "workflows.yaml: flow step a: 'book_a_spa' is not an operation of hollowbrook",
        ),
        (
            _one([{"id": "a", "tool": "get_booking", "args": {"booking_id": "{{booking}}"}}]),
            "workflows.yaml: flow step a: {{booking}} names no parameter or saved value; declare it or save it first",
        ),
        (
            _one(
                [
                    {"id": "a", "tool": "get_booking", "args": {"booking_id": "{{later.id}}"}},
                    {"id": "b", "tool": "list_rooms", "save_as": "later"},
                ]
            ),
            "workflows.yaml: flow step a: {{later}} names a value saved only by a later step; declare it or save it first",
        ),
        (
            _one(
                [
                    CHECK,
                    {
                        "id": "free",
                        "if": "availability.available",
                        "then": [{"id": "rooms", "tool": "list_rooms", "save_as": "rooms"}],
                    },
                    {"id": "after", "tool": "get_booking", "args": {"booking_id": "{{rooms.0}}"}},
                ]
            ),
            "workflows.yaml: flow step after: {{rooms}} names a value saved only on one way of an"
            " if (by step rooms), and this step is reached without it; save it on every way that"
            " leads here, or read it on that way only",
        ),
        (
            _one([CHECK, {**CHECK, "id": "again"}]),
            "workflows.yaml: flow step again: save_as 'availability' is used already; name it anew",
        ),
        (
            _one([{"id": "a", "if": "rooms.0", "then": [{"return": "x"}]}]),
            "workflows.yaml: flow step a: if 'rooms.0': 'rooms' is never saved before it",
        ),
        (
            _one([]),
            "workflows.yaml: flow: a hardened workflow runs its steps: give it steps",
        ),
        (
            _one(
                [CHECK],
                parameters={
                    "type": "object",
                    "properties": {
                        "room_id": {"type": "string", "enum": ["oak"], "default": "elm"}
                    },
                },
            ),
            "workflows.yaml: flow parameter room_id: default 'elm' is not one of its enum ['oak']",
        ),
        (
            _one([{"id": f"s{n}", "tool": "list_rooms"} for n in range(51)]),
            "workflows.yaml: flow: 51 steps, over the cap of 50",
        ),
        (
            yaml.safe_dump(
                {
                    "workflows": [
                        {"name": "one", "execution": "hardened", "steps": [{"workflow": "two"}]},
                        {"name": "two", "execution": "hardened", "steps": [{"workflow": "one"}]},
                    ]
                }
            ),
            "workflows.yaml: one: workflows call each other in a cycle: one → two → one",
        ),
        (
            _one([CHECK], execution="sometimes"),
            "workflows.yaml: flow: execution 'sometimes': one of draft, guided, hardened",
        ),
        (
            _one([CHECK], execuiton="hardened"),
            "workflows.yaml: flow: unknown key 'execuiton'; did you mean `execution`? (it takes name, description, execution, parameters, steps, tool, defaults, procedure, uses)",
        ),
        (
            _one([CHECK], tool_schema={"type": "object"}),
            "workflows.yaml: flow: unknown key 'tool_schema' (it takes name, description, execution, parameters, steps, tool, defaults, procedure, uses)",
        ),
        (
            _one([{**CHECK, "timeout": 5}]),
            "workflows.yaml: flow step check: a tool step: unknown key 'timeout' (it takes id, tool, args, save_as, status_as, headers_as, on_error, on_failure, success, retry)",
        ),
        (
            _one([{**CHECK, "retry": {"limit": 3, "wait": 1}}]),
            "workflows.yaml: flow step check: retry is {limit: N, after: SECONDS, when: [STATUS TESTS]} (unknown key 'wait' (it takes limit, after, when))",
        ),
        (
            _one([{"id": "a", "tol": "list_rooms"}]),
            "workflows.yaml: flow step a: a step is exactly one of tool, workflow, if, return, fail (unknown key 'tol'; did you mean `tool`? (it takes args, else, fail, headers_as, id, if, on_error, on_failure, retry, return, save_as, status_as, success, then, tool, workflow))",
        ),
        (
            _one([CHECK]) + "workflow: {}\n",
            "workflows.yaml: the file: unknown key 'workflow'; did you mean `workflows`? (it takes workflows)",
        ),
        (
            _one([{**CHECK, "args": {**CHECK["args"], "room_id": "{{ $inputs.room_id }}"}}]),
            "workflows.yaml: flow step check: '{{ $inputs.room_id }}' is not a template: write {{name}} or {{name.field}} (a parameter or a saved value; nothing is evaluated)",
        ),
        (
            _one([{**CHECK, "args": {**CHECK["args"], "room_id": "{{room_id | upper}}"}}]),
            "workflows.yaml: flow step check: '{{room_id | upper}}' is not a template: write {{name}} or {{name.field}} (a parameter or a saved value; nothing is evaluated)",
        ),
        (
            _one([CHECK, {"id": "done", "return": "room {{room_id"}]),
            "workflows.yaml: flow step done: '{{room_id' is not a template: write {{name}} or {{name.field}} (a parameter or a saved value; nothing is evaluated)",
        ),
        (
            _one(
                [CHECK],
                parameters={
                    "type": "object",
                    "properties": {"room_id": {"type": "string"}, "note": {"type": "string"}},
                },
            ),
            "workflows.yaml: flow parameter note: no step reads it; use it in a step or leave it out",
        ),
        (
            _one([CHECK], parameters={"type": "object", "properties": {"room_id": {}}}),
            "workflows.yaml: flow parameter room_id: is optional with no default, but a step reads it; give it a default or make it required",
        ),
        (
            _one([CHECK, {"id": "done", "return": "ok"}, {"id": "late", "tool": "list_rooms"}]),
            "workflows.yaml: flow step late: comes after the return of step done, so it would never run",
        ),
    ],
    ids=[
        "unknown operation",
        "undeclared parameter",
        "step not yet run",
        "saved on one way of an if",
        "save_as reused",
        "if on something never saved",
        "hardened without steps",
        "default outside enum",
        "step cap",
        "cycle",
        "unknown execution",
        "misspelled execution",
        "tool_schema",
        "step timeout",
        "step retry",
        "misspelled step kind",
        "file-level key",
        "expression template",
        "filter template",
        "unclosed template",
        "unused parameter",
        "optional without default",
        "step after return",
    ],
)
def test_what_cannot_run_is_refused_at_load_with_the_remedy(text: str, message: str) -> None:
    files = _files(text)
    with pytest.raises(WorkflowRefused) as refused:
        load_workflows(files, load_skill(files))
    assert str(refused.value) == message


def test_the_example_workflow_loads_as_written() -> None:
    files = _files()
    flows = load_workflows(files, load_skill(files))
    assert list(flows) == ["book_room"] and flows["book_room"].execution == "hardened"
    assert flows["book_room"].parameters["required"] == [
        "room_id",
        "guest_name",
        "arrival",
        "departure",
    ]


@pytest.fixture
def server() -> Iterator[GuesthouseServer]:
    with GuesthouseServer() as running:
        yield running


@pytest.fixture
def skill_dir(tmp_path: Path, server: GuesthouseServer) -> Path:
    return example_skill(tmp_path, server)


@pytest.fixture(autouse=True)
def _operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home of this test's own, and an operator's token: `--approve` is an operator's."""
    from skillpress.app.base.roles import OPERATOR_TOKEN_ENV, add_operator
    from skillpress.platform.settings import Settings

    home = tmp_path / "operator-home"
    monkeypatch.setenv("SKILLPRESS_HOME", str(home))
    monkeypatch.setenv(OPERATOR_TOKEN_ENV, add_operator(Settings(home=home), "ops"))


def _guided(execution: str = "guided") -> str:
    return yaml.safe_dump(
        {
            "workflows": [
                {
                    "name": "find_booking",
                    "description": "Find a booking by its id.",
                    "execution": execution,
                    "parameters": {
                        "type": "object",
                        "properties": {"booking_id": {"type": "string", "minLength": 3}},
                        "required": ["booking_id"],
                    },
                    **(
                        {"tool": "get_booking"}
                        if execution == "guided"
                        else {"procedure": "Look it up."}
                    ),
                }
            ]
        }
    )


def test_a_slash_line_fills_a_workflows_one_required_parameter_and_help_lists_workflows() -> None:
    from skillpress.runtime.workflows.run import StepFailed, workflow_arguments
    from skillpress.runtime.workflows.slash import help_text

    files = _files(_guided())
    skill = load_skill(files)
    flows = load_workflows(files, skill)
    wf = flows["find_booking"]
    assert workflow_arguments(wf, "bk-123") == {"booking_id": "bk-123"}
    assert workflow_arguments(wf, '{"booking_id": "bk-9"}') == {"booking_id": "bk-9"}
    with pytest.raises(
        StepFailed, match=r"^find_booking: step arguments failed: arguments are not valid JSON"
    ):
        workflow_arguments(wf, "{nope")
    book = load_workflows(_files(), load_skill(_files()))["book_room"]
    with pytest.raises(StepFailed) as several:
        workflow_arguments(book, "oak")
    assert str(several.value) == (
        "book_room: step arguments failed: plain text fills a workflow's one required"
        " parameter, and this one has 4; give JSON: it takes arrival, departure, guest_name,"
        " guests, room_id"
    )
    listed = help_text(skill, None, flows).splitlines()
    assert listed[-2:] == [
        "  /find_booking  guided: Find a booking by its id.",
        'Call one with /name {"arg": "value"}, a workflow with /run name {...} or /name {...};'
        " /help name shows its arguments.",
    ]
    assert "Workflows (1):" in listed
    one = help_text(skill, "find_booking", flows).splitlines()
    assert one[:4] == [
        "/find_booking — Find a booking by its id.",
        "  workflow   guided (a model runs it)",
        "  tool       hollowbrook_find_booking",
        "  arguments  booking_id; plain text fills booking_id",
    ]


@pytest.mark.parametrize("execution", ["guided", "draft"])
def test_a_model_run_checks_its_arguments_before_the_model_is_asked(execution: str) -> None:
    from skillpress.runtime.workflows.model_runs import draft_run, guided_run
    from skillpress.runtime.workflows.run import StepFailed

    files = _files(_guided(execution))
    skill = load_skill(files)
    wf = load_workflows(files, skill)["find_booking"]
    asked: list[object] = []

    def chat(*args: object) -> dict[str, object]:
        asked.append(args)
        return {"content": "done"}

    run = guided_run if execution == "guided" else draft_run
    with pytest.raises(StepFailed) as refused:
        run(wf, skill, files, {"booking_id": "b"}, chat, lambda *a: None)
    assert str(refused.value) == (
        "find_booking: step arguments failed: booking_id: 'b' is too short"
    )
    assert asked == [], "the model was not asked"


def test_a_malformed_model_answer_names_the_workflow() -> None:
    from skillpress.runtime.workflows.model_runs import guided_run
    from skillpress.runtime.workflows.run import StepFailed

    files = _files(_guided())
    skill = load_skill(files)
    wf = load_workflows(files, skill)["find_booking"]

    def chat(*args: object) -> dict[str, object]:
        return {"tool_calls": [{"function": {"name": "x", "arguments": "{not json"}}]}

    with pytest.raises(StepFailed) as failed:
        guided_run(wf, skill, files, {"booking_id": "bk-1"}, chat, lambda *a: None)
    assert str(failed.value) == (
        "find_booking: step model failed: the model's tool call is malformed"
        " (no name or JSON arguments)"
    )


def _run(skill_dir: Path, line: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", "run", str(skill_dir), line, *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOLLOWBROOK_API_KEY": KEY},
    )


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_a_hardened_booking_runs_with_no_model_and_sends_exactly_its_requests(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    line = f"/book_room {json.dumps(STAY)}"
    dry = _run(skill_dir, line, "--dry-run", "--unsafe")
    assert dry.returncode == 0, dry.stderr
    assert server.house.seen == [], "a dry run sends nothing"
    assert [ln for ln in dry.stdout.splitlines() if ln.startswith("# step")] == [
        "# step check: check_availability",
        "# step book: create_booking",
    ]

    sandboxed = _run(skill_dir, line, "--approve")
    assert sandboxed.returncode == 1
    assert sandboxed.stderr.strip().splitlines()[-1] == (
        "error: book_room: step book failed: the booking was not made (create_booking writes,"
        " and a workflow from a package you did not publish runs sandboxed: nothing that writes"
        " is sent unless you give --unsafe)"
    )
    assert [(s.method, s.path) for s in server.house.seen] == [("GET", "/rooms/oak/availability")]
    server.house.seen.clear()

    done = _run(skill_dir, line, "--approve", "--unsafe", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"booking_id": "bk-1", "total_pence": 28500}
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms/oak/availability"),
        ("POST", "/bookings"),
    ]
    posted = server.house.seen[1]
    assert json.loads(posted.body) == {
        **STAY,
        "guests": 2,
        "notes": "Booked by the book_room workflow for Ada Lovelace",
    }
    assert posted.headers["Idempotency-Key"] and posted.headers["X-Hollowbrook-Key"] == KEY
    server.house.seen.clear()

    taken = _run(skill_dir, line, "--approve", "--unsafe")
    assert taken.returncode == 1
    assert taken.stderr.strip().splitlines()[-1] == (
        "error: book_room: step taken failed: oak is taken from 2026-12-24 to 2026-12-27"
    )
    assert [(s.method, s.path) for s in server.house.seen] == [("GET", "/rooms/oak/availability")]

    wrong = _run(skill_dir, '/book_room {"room_id": "elm"}', "--unsafe")
    assert wrong.returncode == 2 and "arguments" in wrong.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return skillpress(*args, timeout=60)


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_a_run_from_the_command_line_is_kept_and_resumes_at_its_gate_once_granted(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    line = f"/book_room {json.dumps(STAY)}"
    held = _run(skill_dir, line, "--unsafe", "--approval-timeout", "0")
    assert held.returncode == 1
    assert (
        held.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "(run #1 is kept waiting here: the same call resumes it, and does not send again what it"
            " sent (check))"
        )
    ), held.stderr
    listed = _cli("runs", "--json")
    (run,) = json.loads(listed.stdout)
    assert (run["workflow"], run["status"], run["approval"], run["step_count"]) == (
        "book_room",
        "waiting",
        1,
        2,
    )
    assert _cli("runs").stdout.startswith("#1 ") and "waiting on approval #1, 2 steps" in (
        _cli("runs", "hollowbrook").stdout
    )
    assert _cli("approve", "1").returncode == 0
    resumed = _run(skill_dir, line, "--unsafe", "--approval-timeout", "0")
    assert resumed.returncode == 0, resumed.stderr
    assert "↺ step check: check_availability (sent before this run resumed: not again)" in (
        resumed.stderr
    )
    assert "✓ step book: create_booking → 201" in resumed.stderr
    assert "run #1: 2 steps (skillpress runs --show 1)" in resumed.stderr
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms/oak/availability"),
        ("POST", "/bookings"),
    ]
    shown = _cli("runs", "--show", "1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("#1 ") and "book_room (hardened): succeeded, 2 steps" in lines[0]
    assert any(
        ln.startswith("  check: check_availability sent → 200 in ")
        and "; GET http://127.0.0.1:" in ln
        for ln in lines
    ), lines
    assert any(ln.startswith("  book: create_booking sent → 201 in ") for ln in lines), lines
    assert lines[-1] == '  result {"booking_id": "bk-1", "total_pence": 28500}'
    assert KEY not in shown.stdout + _cli("runs", "--show", "1", "--json").stdout
    missing = _cli("runs", "--show", "9")
    assert missing.returncode == 2 and "no workflow run #9" in missing.stderr


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_a_direct_slash_call_is_kept_as_a_run_and_a_held_one_resumes_once_granted(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    """Direct use leaves the trace a workflow's call does (#54.5): `run pk '/op …'` is a run of
    one step in `skillpress runs`, its request and answer kept (secrets redacted); held at its
    gate it waits, and the same call takes the run over once the approval is granted."""
    listed = _run(skill_dir, "/list_rooms")
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(_cli("runs", "--json").stdout)
    assert (run["skill"], run["workflow"], run["execution"], run["status"]) == (
        "hollowbrook",
        "list_rooms",
        "direct",
        "succeeded",
    )
    assert run["step_count"] == 1
    shown = _cli("runs", "--show", str(run["id"])).stdout.splitlines()
    assert "list_rooms (direct): succeeded, 1 steps" in shown[0]
    assert any(ln.startswith("  call: list_rooms sent → 200 in ") for ln in shown), shown
    held = _run(skill_dir, "/cancel_booking bk-1", "--approval-timeout", "0")
    assert held.returncode == 1, held.stderr
    waiting = json.loads(_cli("runs", "--json").stdout)[0]
    assert (waiting["workflow"], waiting["status"], waiting["approval"]) == (
        "cancel_booking",
        "waiting",
        1,
    )
    assert [(s.method, s.path) for s in server.house.seen] == [("GET", "/rooms")]
    assert _cli("approve", "1").returncode == 0
    done = _run(skill_dir, "/cancel_booking bk-1", "--approval-timeout", "0")
    assert done.returncode == 1 and "no such booking" in done.stdout  # sent, and answered 404
    after = json.loads(_cli("runs", "--json").stdout)
    assert len(after) == 2 and after[0]["id"] == waiting["id"]  # the same run, taken over
    assert (after[0]["status"], after[0]["step_count"]) == ("failed", 1)
    assert after[0]["error"] == "cancel_booking answered 404"
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms"),
        ("DELETE", "/bookings/bk-1"),
    ]
    full = _cli("runs", "--show", str(waiting["id"]), "--json").stdout
    assert KEY not in full + _cli("runs", "--show", str(run["id"]), "--json").stdout


@pytest.mark.integration  # the command line or a server as a process, beside a server
async def test_a_workflow_is_a_tool_over_mcp_and_waits_for_its_gate(
    skill_dir: Path, server: GuesthouseServer, tmp_path: Path
) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from skillpress.app.base.context import open_app
    from skillpress.app.records import approval_requests as approvals
    from skillpress.app.records import runs
    from skillpress.platform.settings import Settings

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")} | {
        "SKILLPRESS_HOME": str(home),
        "HOLLOWBROOK_API_KEY": KEY,
    }
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "tools",
            str(skill_dir),
            "--format",
            "mcp",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "hollowbrook_book_room" in [t["name"] for t in json.loads(listed.stdout)]

    def params(*flags: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "skillpress.cli.main", "mcp", str(skill_dir), *flags],
            env=env,
        )

    async with Client(params()) as sandboxed:
        held = await sandboxed.call_tool("call_operation", {"name": "book_room", "arguments": STAY})
        assert (
            held.is_error
            and "create_booking writes, and this skill runs sandboxed" in held.content[0].text
        )
    async with Client(params("--unsafe")) as client:
        described = json.loads(
            (await client.call_tool("describe_operation", {"name": "book_room"})).content[0].text
        )
        assert described["workflow"] == "hardened" and described["tool"] == "hollowbrook_book_room"
        waiting = await client.call_tool("call_operation", {"name": "book_room", "arguments": STAY})
        assert waiting.is_error and "approval" in waiting.content[0].text
        # the run is kept, waiting: the same call once it is approved resumes it
        # (run 1 was the sandboxed server's, refused at its write)
        assert waiting.content[0].text.endswith(
            "(run #2 is kept waiting here: the same call resumes it, and does not send again what"
            " it sent (check))"
        ), waiting.content[0].text
        assert [s.method for s in server.house.seen] == ["GET", "GET"]
        ctx = open_app(Settings(home=home))
        try:
            (pending,) = approvals.list_requests(ctx)
            held_run = runs.get_run(ctx, 2)
            approvals.decide(ctx, pending["id"], True, "the test's operator")
        finally:
            ctx.close()
        assert (held_run["status"], held_run["approval"]) == ("waiting", pending["id"])
        assert [(s["step"], s["outcome"]) for s in held_run["steps"]][-1] == ("book", "waiting")
        booked = await client.call_tool("call_operation", {"name": "book_room", "arguments": STAY})
        assert not booked.is_error, booked.content[0].text
        assert json.loads(booked.content[0].text)["result"] == {
            "booking_id": "bk-1",
            "total_pence": 28500,
        }
        assert json.loads(booked.content[0].text)["run"] == 2
        # resumed, not started again: the steps it had sent are not sent twice
        assert [s.method for s in server.house.seen] == ["GET", "GET", "POST"]
        ctx = open_app(Settings(home=home))
        try:
            done_run = runs.get_run(ctx, 2)
            sandboxed_run = runs.get_run(ctx, 1)
        finally:
            ctx.close()
        assert done_run["status"] == "succeeded" and done_run["approval"] is None
        assert [s["outcome"] for s in done_run["steps"]] == ["sent"] * len(done_run["steps"])
        book_step = done_run["steps"][-1]
        assert book_step["tries"] == [{"status": 201}] and book_step["request"]["method"] == "POST"
        assert KEY not in json.dumps(done_run)
        assert sandboxed_run["status"] == "failed" and "runs sandboxed" in (
            sandboxed_run["error"] or ""
        )
        # skill_run, offered because the skill has workflows, runs one by name: the
        # instructions list the workflows it says they list
        assert (client.instructions or "").endswith(
            "\nWorkflows of hollowbrook (run one with skill_run):\n- `book_room` (hardened;"
            " takes room_id, guest_name, arrival, departure): Book a room for a guest if it is"
            " free for those nights; answers the booking id and the total.\n"
        ), client.instructions
        listed_tools = [t.name for t in (await client.list_tools()).tools]
        assert listed_tools[-1] == "skill_run"
        again = await client.call_tool("skill_run", {"workflow": "book_room", "arguments": STAY})
        assert again.is_error and "oak is taken" in again.content[0].text
        nothing = await client.call_tool("skill_run", {"workflow": "nope"})
        assert nothing.is_error and nothing.content[0].text == "hollowbrook has no workflow 'nope'"
        # a fixed tool holds its callers to its own input schema (#45.4)
        misnamed = await client.call_tool("skill_run", {"name": "book_room", "arguments": STAY})
        assert misnamed.is_error and misnamed.content[0].text == (
            "skill_run: 'workflow' is a required property; Additional properties are not"
            " allowed ('name' was unexpected) (it takes arguments, workflow)"
        ), misnamed.content[0].text
        assert [s.method for s in server.house.seen] == ["GET", "GET", "POST", "GET"]
        # a workflow loads as a tool of its own, like an operation, and is called by its name
        loaded = await client.call_tool("load_tools", {"names": ["book_room"]})
        assert json.loads(loaded.content[0].text)["loaded"] == ["hollowbrook_book_room"]
        listed_now = {t.name: t for t in (await client.list_tools()).tools}
        assert listed_now["hollowbrook_book_room"].input_schema["required"] == [
            "room_id",
            "guest_name",
            "arrival",
            "departure",
        ]
        named = await client.call_tool("hollowbrook_book_room", STAY)
        assert named.is_error and "oak is taken" in named.content[0].text
    async with Client(params("--eager")) as eager:
        assert "hollowbrook_book_room" in [t.name for t in (await eager.list_tools()).tools]
    assert [s.method for s in server.house.seen] == ["GET", "GET", "POST", "GET", "GET"]


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_a_workflow_exported_as_arazzo_imports_back_the_same(tmp_path: Path) -> None:
    from skillpress.runtime.interop.arazzo_out import to_arazzo
    from skillpress.runtime.interop.arazzo_schema import problems

    out = tmp_path / "hollowbrook"
    out.mkdir()
    for path in EXAMPLE.iterdir():
        if path.name != "workflows.yaml":
            (out / path.name).write_bytes(path.read_bytes())

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "skillpress.cli.main", "workflow", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    exported = cli("export", str(EXAMPLE), "--out", str(tmp_path / "book.arazzo.yaml"))
    assert exported.returncode == 0, exported.stderr
    doc = yaml.safe_load((tmp_path / "book.arazzo.yaml").read_text())
    assert doc["arazzo"] == "1.0.1" and doc["workflows"][0]["workflowId"] == "book_room"
    steps = doc["workflows"][0]["steps"]
    # a hand-written package knows no spec operationIds: its steps point into the source
    # description by path and method, which any runner resolves
    assert [s["operationPath"] for s in steps] == [
        "{$sourceDescriptions.hollowbrook.url}#/paths/~1rooms~1{room_id}~1availability/get",
        "{$sourceDescriptions.hollowbrook.url}#/paths/~1bookings/post",
    ]
    assert "note: the steps' source description is ./hollowbrook.openapi.json" in exported.stderr
    # #55.8: what holds the booking here travels with the step, and the export says so
    assert steps[1]["x-skillpress-gate"] == {
        "risk": "medium",
        "binds": ["room_id", "arrival", "departure"],
    }
    assert steps[1]["x-skillpress-identity"] == ["room_id", "guest_name", "arrival", "departure"]
    assert "x-skillpress-gate" not in steps[0]
    assert (
        "note: book_room step book: create_booking is gated (a person approves each call) and"
        " sent once (an identity) here; another runner does not hold it" in exported.stderr
    )
    assert steps[0]["parameters"][0] == {
        "name": "room_id",
        "in": "path",
        "value": "$inputs.room_id",
    }
    # a simple condition, which a standard runner evaluates the way skillpress does
    assert steps[0]["onSuccess"][0]["criteria"] == [
        {"condition": "$steps.check.outputs.availability.available == true"}
    ]
    assert (
        doc["workflows"][0]["outputs"]["total_pence"] == "$steps.book.outputs.booking.total_pence"
    )
    assert problems(doc) == []

    imported = cli("import", str(tmp_path / "book.arazzo.yaml"), str(out))
    assert imported.returncode == 0, imported.stderr
    files = _files()
    original = load_workflows(files, load_skill(files))
    back_files = {p.name: p.read_bytes() for p in out.iterdir()}
    again = load_workflows(back_files, load_skill(back_files))
    assert again == original
    assert to_arazzo(again, load_skill(back_files)) == doc
    # export → import → export: the same bytes
    second = cli("export", str(out), "--out", str(tmp_path / "again.arazzo.yaml"))
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "again.arazzo.yaml").read_bytes() == (
        tmp_path / "book.arazzo.yaml"
    ).read_bytes()
    refused_again = cli("import", str(tmp_path / "book.arazzo.yaml"), str(out))
    assert refused_again.returncode == 2 and "give --force" in refused_again.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["workflows"][0].update(inputs={"$ref": "#/components/inputs/stay"}),
            "book_room inputs: '#/components/inputs/stay' names no component",
        ),
        (
            lambda d: d["workflows"][0]["steps"][0].update(
                successCriteria=[{"condition": "$response.header.Location != null"}]
            ),
            "book_room step check: successCriteria {'condition': '$response.header.Location !="
            " null'} is outside the subset",
        ),
        (
            lambda d: d["workflows"][0]["steps"][0]["parameters"][0].update({"in": "header"}),
            "book_room step check: check_availability has no header parameter 'room_id'; it is"
            " a path parameter (header: none)",
        ),
        (
            lambda d: d["workflows"][0]["steps"][1].update(
                onFailure=[{"name": "elsewhere", "type": "goto", "stepId": "check"}]
            ),
            "book_room step book: onFailure goto 'check', an earlier step (a loop), is outside"
            " the subset",
        ),
        (
            lambda d: d["workflows"][0]["steps"][0]["onSuccess"][0].update(type="retry"),
            "book_room step check: onSuccess if_free: a 'retry' action is not one the Arazzo"
            " specification defines on success (goto or end)",
        ),
        (
            lambda d: (
                d["workflows"][0]["steps"][0].update(operationId="bookSpa"),
                d["workflows"][0]["steps"][0].pop("operationPath"),
            ),
            "book_room step check: operationId 'bookSpa' is not an operation of hollowbrook",
        ),
    ],
    ids=[
        "an input component that is not there",
        "criteria",
        "a path parameter given as a header",
        "onFailure goto back",
        "retry action",
        "unknown operation",
    ],
)
def test_an_arazzo_document_outside_the_subset_is_refused_naming_it(
    change: object, message: str
) -> None:
    from skillpress.runtime.interop.arazzo import ArazzoRefused
    from skillpress.runtime.interop.arazzo_in import from_arazzo
    from skillpress.runtime.interop.arazzo_out import to_arazzo

    files = _files()
    skill = load_skill(files)
    doc = to_arazzo(load_workflows(files, skill), skill)
    change(doc)  # type: ignore[operator]
    with pytest.raises(ArazzoRefused) as refused:
        from_arazzo(doc, skill)
    assert message in str(refused.value)


def test_an_arazzo_step_by_the_specs_own_operation_id_maps_to_the_skills_name() -> None:
    from skillpress.runtime.interop.arazzo import ArazzoRefused
    from skillpress.runtime.interop.arazzo_in import from_arazzo
    from skillpress.runtime.interop.arazzo_out import to_arazzo

    files = _files()
    skill = load_skill(files)
    doc = to_arazzo(load_workflows(files, skill), skill)
    book = doc["workflows"][0]["steps"][1]
    book.pop("operationPath")
    for named in ("createBooking", "$sourceDescriptions.hollowbrook.createBooking"):
        book["operationId"] = named  # as in hollowbrook.yaml, plain or qualified
        assert (
            from_arazzo(doc, skill)["workflows"][0]["steps"][1]["then"][0]["tool"]
            == "create_booking"
        )
    book["operationPath"] = "x"
    with pytest.raises(ArazzoRefused, match="exactly one of operationId, operationPath"):
        from_arazzo(doc, skill)
    book.pop("operationPath")
    book["operationId"] = "$sourceDescriptions.elsewhere.createBooking"
    with pytest.raises(ArazzoRefused, match="names source 'elsewhere', not 'hollowbrook'"):
        from_arazzo(doc, skill)


MODEL_FLOWS = """
workflows:
  - name: quick_check
    description: Whether a room is free.
    execution: guided
    tool: check_availability
    defaults: {room_id: ash}
    parameters:
      type: object
      properties: {arrival: {type: string}, departure: {type: string}}
  - name: take_a_room
    execution: draft
    procedure: Check the room is free, then book it for the guest; say the booking id.
    parameters:
      type: object
      properties: {room_id: {type: string}, guest_name: {type: string}}
"""


def _tool_call(name: str, args: object, call_id: str = "c1") -> dict[str, object]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        ],
    }


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_guided_and_draft_runs_go_through_the_same_calls_with_a_stub_model(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    from tests.chat_server import ChatServer

    (skill_dir / "workflows.yaml").write_text(MODEL_FLOWS)
    with ChatServer() as chat:
        env = {
            "SKILLPRESS_LLM_BASE_URL": chat.url,
            "SKILLPRESS_LLM_MODEL": "stub",
            "HOLLOWBROOK_API_KEY": KEY,
        }

        def run(line: str, *flags: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "skillpress.cli.main",
                    "run",
                    str(skill_dir),
                    line,
                    *flags,
                ],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, **env},
            )

        # guided: the tool is forced, and the workflow's default wins over the model's room
        dates = {"arrival": "2026-12-24", "departure": "2026-12-27"}
        chat.answers = [_tool_call("hollowbrook_check_availability", {"room_id": "oak", **dates})]
        guided = run(f"/quick_check {json.dumps(dates)}", "--json")
        assert guided.returncode == 0, guided.stderr
        assert json.loads(guided.stdout) == {
            "room_id": "ash",
            "available": True,
            "total_pence": 21000,
        }
        asked = chat.requests[-1]["body"]
        assert asked["tool_choice"] == {
            "type": "function",
            "function": {"name": "hollowbrook_check_availability"},
        }
        assert [t["function"]["name"] for t in asked["tools"]] == ["hollowbrook_check_availability"]
        assert [(s.method, s.path) for s in server.house.seen] == [
            ("GET", "/rooms/ash/availability")
        ]

        chat.answers = [_tool_call("hollowbrook_check_availability", "{not json")]
        malformed = run(f"/quick_check {json.dumps(dates)}")
        assert malformed.returncode == 1
        assert malformed.stderr.strip().endswith(
            "the model's tool call is malformed (no name or JSON arguments)"
        )
        chat.answers = [{"role": "assistant", "content": "I would rather not."}]
        refusing = run(f"/quick_check {json.dumps(dates)}")
        assert refusing.returncode == 1 and "made 0 tool calls" in refusing.stderr
        assert len(server.house.seen) == 1, "nothing sent for a malformed answer"

        # draft: skill-forward, the model calls tools until it is done
        server.house.seen.clear()
        stay = {"room_id": "oak", "guest_name": "Ada Lovelace", **dates}
        chat.answers = [
            _tool_call("hollowbrook_check_availability", {"room_id": "oak", **dates}, "c1"),
            _tool_call("hollowbrook_create_booking", stay, "c2"),
            {"role": "assistant", "content": "Booked: bk-1."},
        ]
        sandboxed_requests = len(chat.requests)
        draft = run(
            '/take_a_room {"room_id": "oak", "guest_name": "Ada Lovelace"}', "--unsafe", "--approve"
        )
        assert draft.returncode == 0, draft.stderr
        assert json.loads(draft.stdout) == "Booked: bk-1."
        assert [(s.method, s.path) for s in server.house.seen] == [
            ("GET", "/rooms/oak/availability"),
            ("POST", "/bookings"),
        ]
        first, *_, last = chat.requests[sandboxed_requests:]
        system = first["body"]["messages"][0]["content"]
        assert (
            system.startswith("# Hollowbrook") and "Check the room is free, then book it" in system
        )
        assert (
            first["body"]["messages"][1]["content"]
            == '{"room_id": "oak", "guest_name": "Ada Lovelace"}'
        )
        told = [m for m in last["body"]["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in told] == ["c1", "c2"]
        assert json.loads(told[1]["content"])["id"] == "bk-1"

        # sandboxed (no --unsafe) and the model's only call writes: refused, the model told,
        # and the refusal kept in the run's record as that step's, not "0 steps" (#45.4)
        server.house.seen.clear()
        chat.answers = [
            _tool_call("hollowbrook_create_booking", stay, "c3"),
            {"role": "assistant", "content": "I could not book it."},
        ]
        held = run('/take_a_room {"room_id": "oak", "guest_name": "Ada Lovelace"}', "--json")
        assert held.returncode == 0, held.stderr
        assert json.loads(held.stdout) == "I could not book it."
        assert server.house.seen == []
        latest = json.loads(_cli("runs", "--json").stdout)[0]
        assert (latest["workflow"], latest["step_count"]) == ("take_a_room", 1)
        kept = json.loads(_cli("runs", "--show", str(latest["id"]), "--json").stdout)
        assert [(s["step"], s["operation"], s["outcome"]) for s in kept["steps"]] == [
            ("turn1.1", "create_booking", "failed")
        ]
        assert kept["steps"][0]["error"].startswith("create_booking writes, and a workflow from a")

    nomodel = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "run",
            str(skill_dir),
            "/quick_check {}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_LLM")},
    )
    assert nomodel.returncode == 2 and "it needs a model" in nomodel.stderr


def test_guided_workflows_are_refused_at_load_without_their_tool_or_with_a_bad_default() -> None:
    for text, message in [
        (
            "workflows:\n  - name: g\n    execution: guided\n",
            "workflows.yaml: g: a guided workflow names the operation the model calls: give it tool",
        ),
        (
            "workflows:\n  - name: g\n    execution: guided\n    tool: check_availability\n    defaults: {colour: red}\n",
            "workflows.yaml: g: default 'colour': check_availability takes no such argument",
        ),
        (
            "workflows:\n  - name: d\n    execution: draft\n",
            "workflows.yaml: d: a draft workflow tells the model what to do: give it a procedure",
        ),
    ]:
        files = _files(text)
        with pytest.raises(WorkflowRefused) as refused:
            load_workflows(files, load_skill(files))
        assert str(refused.value) == message


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_a_step_can_call_another_skill_the_workflow_uses(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    annex = skill_dir.parent / "annex"  # another skill, its package beside this one
    annex.mkdir()
    for path in skill_dir.iterdir():
        if path.name != "workflows.yaml":
            (annex / path.name).write_text(
                path.read_text().replace("name: hollowbrook", "name: annex")
            )
    (skill_dir / "workflows.yaml").write_text(
        """
workflows:
  - name: first_room_free
    execution: hardened
    uses: [annex]
    parameters:
      type: object
      properties: {arrival: {type: string}, departure: {type: string}}
      required: [arrival, departure]
    steps:
      - id: rooms
        tool: annex.list_rooms
        save_as: rooms
      - id: check
        tool: check_availability
        args: {room_id: "{{rooms.0.id}}", arrival: "{{arrival}}", departure: "{{departure}}"}
        save_as: availability
      - return: {room: "{{rooms.0.id}}", free: "{{availability.available}}"}
"""
    )
    env = {"HOLLOWBROOK_API_KEY": KEY, "ANNEX_API_KEY": KEY}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "run",
            str(skill_dir),
            '/first_room_free {"arrival": "2026-12-24", "departure": "2026-12-27"}',
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"room": "oak", "free": True}
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms"),
        ("GET", "/rooms/oak/availability"),
    ]

    files = {p.name: p.read_bytes() for p in skill_dir.iterdir()}
    skill = load_skill(files)
    with pytest.raises(WorkflowRefused, match="uses 'annex', which is not available here"):
        load_workflows(files, skill)
    unlisted = files["workflows.yaml"].replace(b"uses: [annex]", b"uses: []")
    with pytest.raises(
        WorkflowRefused, match="names skill 'annex', which the workflow's uses does not list"
    ):
        load_workflows({**files, "workflows.yaml": unlisted}, skill)


def test_a_hardened_workflow_is_a_tool_of_skillhost_and_its_gated_step_asks_the_host(
    skill_dir: Path, server: GuesthouseServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillpress.host import GateClosed, SkillHost
    from skillpress.runtime.calling.gates import GateCheck
    from skillpress.runtime.workflows.run import StepFailed

    monkeypatch.setenv("HOLLOWBROOK_API_KEY", KEY)
    asked: list[str] = []
    allow = {"create_booking": False}

    def host_approvals(check: GateCheck) -> None:
        asked.append(check.describe())
        if not allow.get(check.operation, False):
            raise GateClosed("not sent: waits for request #3", request=3)

    host = SkillHost(skill_dir.parent, skills=("hollowbrook",), gatekeeper=host_approvals)
    listed = {t["name"]: t for t in host.tools()}
    assert listed["hollowbrook_book_room"]["input_schema"]["required"] == [
        "room_id",
        "guest_name",
        "arrival",
        "departure",
    ]
    with pytest.raises(StepFailed, match="step book waits: the booking was not made"):
        host.call("hollowbrook_book_room", dict(STAY))
    assert [(s.method, s.path) for s in server.house.seen] == [("GET", "/rooms/oak/availability")]
    assert len(asked) == 1
    server.house.seen.clear()
    allow["create_booking"] = True
    done = host.call("hollowbrook_book_room", dict(STAY))
    body = done.body_value()
    assert body["result"] == {"booking_id": "bk-1", "total_pence": 28500}
    # each step as it ended: its request (the credential as its variable), status and tries
    assert [(s["step"], s["operation"], s["outcome"], s["status"]) for s in body["steps"]] == [
        ("check", "check_availability", "sent", 200),
        ("book", "create_booking", "sent", 201),
    ]
    assert body["steps"][1]["tries"] == [{"status": 201}] and "run" not in body
    assert "<from $HOLLOWBROOK_API_KEY>" in body["steps"][1]["request"]["headers"].values()
    assert KEY not in done.body.decode()
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms/oak/availability"),
        ("POST", "/bookings"),
    ]


def test_a_skillhost_run_kept_in_the_records_resumes_at_its_gate_without_sending_twice(
    skill_dir: Path, server: GuesthouseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.app.records import runs
    from skillpress.host import GateClosed, SkillHost
    from skillpress.platform.settings import Settings
    from skillpress.runtime.calling.gates import GateCheck
    from skillpress.runtime.workflows.run import StepFailed

    monkeypatch.setenv("HOLLOWBROOK_API_KEY", KEY)
    settings = Settings(home=tmp_path / "home")
    allow = {"create_booking": False}

    def host_approvals(check: GateCheck) -> None:
        if not allow.get(check.operation, False):
            raise GateClosed("not sent: waits for request #7", request=7)

    host = SkillHost(
        skill_dir.parent,
        skills=("hollowbrook",),
        gatekeeper=host_approvals,
        runs=runs.RecordedRuns(lambda: open_app(settings)),
        caller="the booking desk",
    )
    with pytest.raises(StepFailed) as held:
        host.call("hollowbrook_book_room", dict(STAY))
    assert str(held.value).endswith(
        "(run #1 is kept waiting here: the same call resumes it, and does not send again what it"
        " sent (check))"
    )
    ctx = open_app(settings)
    try:
        (listed,) = runs.list_runs(ctx, "hollowbrook")
        assert (listed["status"], listed["approval"], listed["started_by"]) == (
            "waiting",
            7,
            "the booking desk",
        )
        assert listed["step_count"] == 2 and "steps" not in listed
    finally:
        ctx.close()
    # another run with other arguments is a run of its own; the same arguments resume run 1
    allow["create_booking"] = True
    done = host.call("hollowbrook_book_room", dict(STAY)).body_value()
    assert done["run"] == 1 and done["result"] == {"booking_id": "bk-1", "total_pence": 28500}
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms/oak/availability"),
        ("POST", "/bookings"),
    ]
    ctx = open_app(settings)
    try:
        run = runs.get_run(ctx, 1)
    finally:
        ctx.close()
    assert run["status"] == "succeeded" and run["result"] == done["result"]
    assert [(s["step"], s["outcome"]) for s in run["steps"]] == [
        ("check", "sent"),
        ("book", "sent"),
    ]
    # a finished run is never resumed: the same call again is a new run, sent anew
    with pytest.raises(StepFailed, match="oak is taken"):
        host.call("hollowbrook_book_room", dict(STAY))
    ctx = open_app(settings)
    try:
        assert [r["id"] for r in runs.list_runs(ctx)] == [2, 1]
        assert runs.get_run(ctx, 2)["status"] == "failed"
    finally:
        ctx.close()


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_help_lists_the_workflows_and_a_run_line_refuses_text_it_cannot_place(
    skill_dir: Path,
) -> None:
    helped = _run(skill_dir, "/help")
    assert helped.returncode == 0, helped.stderr
    assert "Workflows (1):\n  /book_room  hardened: Book a room for a guest" in helped.stdout
    one = _run(skill_dir, "/help book_room")
    assert (
        one.stdout.startswith("/book_room — Book a room") and "  workflow   hardened" in one.stdout
    )
    refused = _run(skill_dir, "/run book_room oak")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: book_room: step arguments failed: plain text fills a workflow's one required"
        " parameter, and this one has 4; give JSON: it takes arrival, departure, guest_name,"
        " guests, room_id"
    )
    # plain text to an operation with three required arguments: one line and exit 2, never a
    # traceback (#45.4)
    plain = _run(skill_dir, "/check_availability oak")
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.strip() == (
        "error: check_availability: plain text fills an operation's one required argument, and"
        " this one has 3; give JSON: it takes room_id (string, required), arrival (string,"
        " required), departure (string, required)"
    )


def test_an_exported_if_without_else_followed_by_a_step_imports_back_and_a_repeated_parameter_is_refused() -> (
    None
):
    from skillpress.runtime.interop.arazzo import ArazzoRefused
    from skillpress.runtime.interop.arazzo_in import from_arazzo
    from skillpress.runtime.interop.arazzo_out import to_arazzo
    from skillpress.runtime.interop.arazzo_schema import problems

    text = yaml.safe_dump(
        {
            "workflows": [
                {
                    "name": "look_then_list",
                    "execution": "hardened",
                    "parameters": {
                        "type": "object",
                        "properties": {"room_id": {"type": "string"}},
                        "required": ["room_id"],
                    },
                    "steps": [
                        {
                            "id": "check",
                            "tool": "check_availability",
                            "args": {
                                "room_id": "{{room_id}}",
                                "arrival": "2026-12-24",
                                "departure": "2026-12-27",
                            },
                            "save_as": "availability",
                        },
                        {
                            "id": "if_free",
                            "if": "availability.available",
                            "then": [{"id": "rooms", "tool": "list_rooms", "args": {}}],
                        },
                        {"id": "again", "tool": "list_rooms", "args": {}},
                    ],
                }
            ]
        }
    )
    files = _files(text)
    skill = load_skill(files)
    flows = load_workflows(files, skill)
    doc = to_arazzo(flows, skill)
    assert problems(doc) == []
    back = from_arazzo(doc, skill)
    assert load_workflows(_files(yaml.safe_dump(back)), skill) == flows
    check = doc["workflows"][0]["steps"][0]
    check["parameters"].append(dict(check["parameters"][0]))
    first = check["parameters"][0]
    with pytest.raises(
        ArazzoRefused, match=f"parameter '{first['name']}' \\({first['in']}\\) is given twice"
    ):
        from_arazzo(doc, skill)


def test_an_export_that_is_not_arazzo_is_caught_by_the_schema() -> None:
    from skillpress.runtime.interop.arazzo_schema import problems

    files = _files()
    from skillpress.runtime.interop.arazzo_out import to_arazzo

    doc = to_arazzo(load_workflows(files, load_skill(files)), load_skill(files))
    step = doc["workflows"][0]["steps"][0]
    step["operationId"] = "both"  # beside its operationPath
    step["onSuccess"][0].pop("stepId")  # a goto going nowhere
    doc["info"].pop("version")
    doc["workflows"][0]["stepz"] = []
    found = problems(doc)
    assert any(p.startswith("info: 'version' is a required property") for p in found), found
    assert "workflows/0: 'stepz' does not match any of the regexes: '^x-'" in found
    assert any(p.startswith("workflows/0/steps/0: {") for p in found), found  # two ways to run
    assert any(p.startswith("workflows/0/steps/0/onSuccess/0: {") for p in found), found
    assert len(found) == 4


def test_a_steps_own_success_tests_and_retry_export_as_arazzo_and_import_back() -> None:
    from skillpress.runtime.interop.arazzo_in import from_arazzo
    from skillpress.runtime.interop.arazzo_out import to_arazzo
    from skillpress.runtime.interop.arazzo_schema import problems

    text = _one(
        [
            {
                **CHECK,
                "success": ["$statusCode == 200"],
                "retry": {"limit": 2, "after": 1.5},
            }
        ]
    )
    files = _files(text)
    skill = load_skill(files)
    flows = load_workflows(files, skill)
    doc = to_arazzo(flows, skill)
    step = doc["workflows"][0]["steps"][0]
    assert step["successCriteria"] == [{"condition": "$statusCode == 200"}]
    assert step["onFailure"] == [
        {"name": "retry", "type": "retry", "retryAfter": 1.5, "retryLimit": 2}
    ]
    assert problems(doc) == []
    assert load_workflows(_files(yaml.safe_dump(from_arazzo(doc, skill))), skill) == flows
    with pytest.raises(WorkflowRefused, match=r"retry.limit 50: a whole number from 1 to 10"):
        load_workflows(_files(_one([{**CHECK, "retry": {"limit": 50}}])), skill)
    with pytest.raises(
        WorkflowRefused, match=r"success '\$statusCode is 200': a status test is like"
    ):
        load_workflows(_files(_one([{**CHECK, "success": "$statusCode is 200"}])), skill)


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_a_workflow_that_depends_on_another_runs_it_first_and_reads_its_outputs(
    skill_dir: Path, server: GuesthouseServer, tmp_path: Path
) -> None:
    from skillpress.app.base.package_dir import read_package_dir
    from skillpress.runtime.interop.arazzo import ArazzoRefused
    from skillpress.runtime.interop.arazzo_in import from_arazzo

    stay = {
        "type": "object",
        "properties": {k: {"type": "string"} for k in ("room_id", "arrival", "departure")},
        "required": ["room_id", "arrival", "departure"],
    }
    path = "{$sourceDescriptions.hollowbrook.url}#/paths/"
    doc = {
        "arazzo": "1.0.1",
        "info": {"title": "t", "version": "1"},
        "sourceDescriptions": [{"name": "hollowbrook", "url": "./h.yaml", "type": "openapi"}],
        "workflows": [
            {
                "workflowId": "checkRoom",
                "inputs": stay,
                "steps": [
                    {
                        "stepId": "check",
                        "operationPath": path + "~1rooms~1{room_id}~1availability/get",
                        "parameters": [
                            {
                                "name": k,
                                "in": "query" if k != "room_id" else "path",
                                "value": f"$inputs.{k}",
                            }
                            for k in ("room_id", "arrival", "departure")
                        ],
                        "outputs": {"availability": "$response.body"},
                    }
                ],
                "outputs": {"free": "$steps.check.outputs.availability.available"},
            },
            {
                "workflowId": "listIfFree",
                "dependsOn": ["checkRoom"],
                "inputs": stay,
                "steps": [
                    {
                        "stepId": "rooms",
                        "operationPath": path + "~1rooms/get",
                    }
                ],
                "outputs": {"free": "$workflows.checkRoom.outputs.free"},
            },
        ],
    }
    flows = from_arazzo(doc, load_skill(read_package_dir(skill_dir, hand_written=True)))
    second = flows["workflows"][1]
    assert second["steps"][0] == {
        "id": "first-checkRoom",
        "workflow": "checkRoom",
        "args": {"room_id": "{{room_id}}", "arrival": "{{arrival}}", "departure": "{{departure}}"},
        "save_as": "checkRoom_outputs",
    }
    (skill_dir / "workflows.yaml").write_text(yaml.safe_dump(flows))
    given = {"room_id": "oak", "arrival": "2026-12-24", "departure": "2026-12-27"}
    done = _run(skill_dir, f"/listIfFree {json.dumps(given)}", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"free": True}  # the outputs of the one it depends on
    assert [(s.method, s.path) for s in server.house.seen] == [
        ("GET", "/rooms/oak/availability"),
        ("GET", "/rooms"),
    ]
    doc["workflows"][1]["dependsOn"] = ["nowhere"]
    with pytest.raises(ArazzoRefused, match="dependsOn 'nowhere', which is no other workflow"):
        from_arazzo(doc, load_skill(read_package_dir(skill_dir, hand_written=True)))


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_skillpress_tools_offers_a_guided_workflow_only_where_a_model_runs_it(
    tmp_path: Path,
) -> None:
    package = tmp_path / "hollowbrook"
    package.mkdir()
    for name, data in _files(_guided()).items():
        (package / name).write_bytes(data)

    def listed(**env: str) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_LLM")}
        return subprocess.run(
            [sys.executable, "-m", "skillpress.cli.main", "tools", str(package)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**clean, "SKILLPRESS_HOME": str(tmp_path / "home"), **env},
        )

    without = listed()
    assert without.returncode == 0, without.stderr
    assert "hollowbrook_find_booking" not in [t["name"] for t in json.loads(without.stdout)]
    assert (
        "note: left out guided workflow find_booking: a model runs it; set"
        " SKILLPRESS_LLM_BASE_URL and SKILLPRESS_LLM_MODEL to offer it"
    ) in without.stderr
    modelled = listed(SKILLPRESS_LLM_BASE_URL="http://127.0.0.1:9/v1", SKILLPRESS_LLM_MODEL="any")
    assert modelled.returncode == 0, modelled.stderr
    tools = {t["name"]: t for t in json.loads(modelled.stdout)}
    assert tools["hollowbrook_find_booking"]["input_schema"]["required"] == ["booking_id"]
    assert "left out" not in modelled.stderr


@pytest.mark.integration  # the command line as a process, beside a server
def test_a_steps_tests_of_its_answer_decide_whether_it_succeeded(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    def flow(success: list[object]) -> str:
        return _one([{**CHECK, "success": success}, {"id": "done", "return": "{{availability}}"}])

    (skill_dir / "workflows.yaml").write_text(
        flow(["$statusCode == 200", "$response.body#/available == true"])
    )
    ok = _run(skill_dir, '/flow {"room_id": "oak"}', "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["available"] is True
    (skill_dir / "workflows.yaml").write_text(
        flow([{"context": "$response.body#/room_id", "regex": "^ash$"}])
    )
    held = _run(skill_dir, '/flow {"room_id": "oak"}')
    assert held.returncode == 1
    assert (
        "check_availability answered 200 (it succeeds on $statusCode < 400 and regex '^ash$' on"
        " $response.body#/room_id)" in held.stderr
    ), held.stderr
    assert [s.method for s in server.house.seen] == ["GET", "GET"]


@pytest.mark.integration  # the command line as a process, beside a server
def test_a_step_held_at_its_gate_is_never_skipped_past_by_on_failure(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    """`on_failure` goes on past a step that failed, never past one a person has still to
    decide: the gated booking waits (its run kept, to resume once granted) and the step a
    failure would go on to is not sent."""
    flows = yaml.safe_load((skill_dir / "workflows.yaml").read_text())
    book = flows["workflows"][0]["steps"][1]["then"][0]
    book["on_failure"] = "rooms"
    flows["workflows"][0]["steps"][1]["then"].append(
        {"id": "rooms", "tool": "list_rooms", "args": {}}
    )
    (skill_dir / "workflows.yaml").write_text(yaml.safe_dump(flows, sort_keys=False))
    held = _run(skill_dir, f"/book_room {json.dumps(STAY)}", "--unsafe", "--approval-timeout", "0")
    assert held.returncode == 1
    assert "(run #1 is kept waiting here: the same call resumes it" in held.stderr, held.stderr
    assert [(s.method, s.path) for s in server.house.seen] == [("GET", "/rooms/oak/availability")]
