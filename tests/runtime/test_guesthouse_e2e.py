"""End to end: a hand-written guesthouse skill books a room against a real HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits, send
from skillpress.runtime.calling.request import CallRefused, ExecutionFailed
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.skill import load_skill
from tests.cli_process import skillpress
from tests.runtime.guesthouse import KEY, GuesthouseServer, example_skill

BOOKING = {
    "room_id": "oak",
    "guest_name": "Ada Lovelace",
    "arrival": "2026-12-24",
    "departure": "2026-12-27",
}


@pytest.fixture
def server() -> Iterator[GuesthouseServer]:
    with GuesthouseServer() as running:
        yield running


@pytest.fixture
def skill_dir(tmp_path: Path, server: GuesthouseServer) -> Path:
    return example_skill(tmp_path, server)


def _files(skill_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in skill_dir.iterdir()}


def test_load_the_tools_one_call_and_the_booking_exists(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    skill = load_skill(_files(skill_dir))
    assert skill.slug == "hollowbrook"
    assert sorted(t.name for t in skill.tools) == [
        "hollowbrook_cancel_booking",
        "hollowbrook_check_availability",
        "hollowbrook_create_booking",
        "hollowbrook_get_booking",
        "hollowbrook_list_rooms",
    ]
    # The model asks by the manifest's name, as every small model tried first.
    tool = skill.tool("create_booking")
    assert tool is skill.tool("hollowbrook_create_booking")
    credential = Credential(skill.auth, "HOLLOWBROOK_API_KEY")  # type: ignore[arg-type]
    result = send(
        build_request(tool, BOOKING, skill.hosts),
        credential=credential,
        environ={"HOLLOWBROOK_API_KEY": KEY},
    )
    assert result.status == 201
    booking = result.body_value()
    assert booking == {**BOOKING, "id": "bk-1", "total_pence": 3 * 9500}
    assert server.house.bookings == {"bk-1": booking}
    (seen,) = server.house.seen
    assert (seen.method, seen.path, seen.headers["Content-Type"], json.loads(seen.body)) == (
        "POST",
        "/bookings",
        "application/json",
        BOOKING,
    )
    assert seen.headers["X-Hollowbrook-Key"] == KEY
    assert len(seen.headers["Idempotency-Key"]) == 64
    # The same booking sent again (a retry) carries the same key and takes no second room.
    again = send(
        build_request(tool, dict(reversed(BOOKING.items())), skill.hosts),
        credential=credential,
        environ={"HOLLOWBROOK_API_KEY": KEY},
    )
    assert again.status == 200 and again.body_value()["id"] == "bk-1"
    assert len(server.house.bookings) == 1
    assert server.house.seen[1].headers["Idempotency-Key"] == seen.headers["Idempotency-Key"]


def test_a_call_without_a_required_field_is_refused_and_the_server_sees_nothing(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    skill = load_skill(_files(skill_dir))
    partial = {k: v for k, v in BOOKING.items() if k != "departure"}
    with pytest.raises(CallRefused) as refused:
        build_request(skill.tool("create_booking"), partial, skill.hosts)
    assert (
        str(refused.value)
        == "create_booking: missing required argument departure (string); nothing was sent"
    )
    with pytest.raises(CallRefused, match=r"does not take 'X-Hollowbrook-Key'"):
        build_request(
            skill.tool("create_booking"),
            {**BOOKING, "X-Hollowbrook-Key": "from the model"},
            skill.hosts,
        )
    assert server.house.seen == [] and server.house.bookings == {}


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return skillpress(*args, env=env, timeout=60)


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_the_slash_form_books_and_refuses_from_the_command_line(
    skill_dir: Path, server: GuesthouseServer, tmp_path: Path
) -> None:
    env = {"HOLLOWBROOK_API_KEY": KEY, "SKILLPRESS_HOME": str(tmp_path / "home")}
    made = _cli("token", "add", "ops", env=env)
    assert made.returncode == 0, made.stderr
    operator = {**env, "SKILLPRESS_OPERATOR_TOKEN": made.stdout.strip()}
    avail = _cli(
        "run",
        str(skill_dir),
        '/check_availability {"room_id": "oak", "arrival": "2026-12-24", "departure": "2026-12-27"}',
        env=env,
    )
    assert avail.returncode == 0, avail.stderr
    assert avail.stdout.splitlines()[0] == "HTTP 200"
    assert json.loads(avail.stdout.split("\n", 1)[1]) == {
        "room_id": "oak",
        "available": True,
        "total_pence": 28500,
    }
    book = ("run", str(skill_dir), "/create_booking " + json.dumps(BOOKING))
    unapproved = _cli(*book, "--approval-timeout", "0", env=env)
    assert unapproved.returncode == 1, unapproved.stderr
    assert unapproved.stderr.startswith(
        "waiting for approval #1: create_booking is gated (risk medium); this call binds"
    ) and unapproved.stderr.strip().endswith(
        "error: not sent: approval #1 is still pending; the same call once it is approved goes through"
    ), unapproved.stderr
    assert not server.house.bookings, "a gated call waits for a person: nothing was sent"
    waiting = json.loads(_cli("approvals", "--json", env=env).stdout)
    assert [(r["id"], r["operation"], r["status"]) for r in waiting] == [
        (1, "create_booking", "pending")
    ]
    assert waiting[0]["bound"]["room_id"] == "oak"
    # a call waiting for its decision is refused when a person denies it
    other = dict(BOOKING, room_id="elm")
    waiting_call = subprocess.Popen(
        [sys.executable, "-m", "skillpress.cli.main", "run", str(skill_dir)]
        + ["/create_booking " + json.dumps(other), "--approval-timeout", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    for _ in range(100):
        pending = json.loads(_cli("approvals", "--json", env=env).stdout)
        if len(pending) == 2:
            break
        time.sleep(0.2)
    # a decision is an operator's: without their token it is refused, and never under a name typed
    agent = _cli("deny", "2", env=env)
    assert agent.returncode == 2 and "needs an operator's token" in agent.stderr
    assert _cli("deny", "2", env=operator).returncode == 0
    _, err = waiting_call.communicate(timeout=30)
    assert waiting_call.returncode == 2 and err.strip().endswith(
        "error: not sent: approval #2 was denied by ops"
    ), err
    # a grant releases exactly the call it binds, once
    assert _cli("approve", "1", env=operator).returncode == 0
    assert not server.house.bookings
    booked = _cli(*book, "--json", env=env)
    assert booked.returncode == 0, booked.stderr
    assert "approved by ops (#1)" in booked.stderr
    again = _cli(*book, "--approval-timeout", "0", env=env)
    assert again.returncode == 1 and "approval #3 is still pending" in again.stderr, "used once"
    decided = json.loads(_cli("approvals", "--all", "--json", env=env).stdout)
    assert [(r["id"], r["status"], r["decided_by"]) for r in decided] == [
        (1, "used", "ops"),
        (2, "denied", "ops"),
        (3, "pending", None),
    ]
    assert json.loads(booked.stdout)["status"] == 201
    assert list(server.house.bookings) == ["bk-1"]
    refused = _cli("run", str(skill_dir), '/create_booking {"room_id": "oak"}', env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: create_booking: missing required arguments guest_name (string), arrival (string), departure (string); nothing was sent"
    )
    got = _cli("run", str(skill_dir), "/get_booking bk-1", env=env)
    assert (
        got.returncode == 0
        and json.loads(got.stdout.split("\n", 1)[1])["guest_name"] == "Ada Lovelace"
    )
    missing = _cli("run", str(skill_dir), "/get_booking bk-404", env=env)
    assert missing.returncode == 1 and missing.stdout.startswith("HTTP 404")
    assert len(server.house.seen) == 4  # the refused call never reached it
    help_one = _cli("run", str(skill_dir), "/help create_booking")
    assert help_one.returncode == 0
    assert "identity   room_id, guest_name, arrival, departure" in help_one.stdout


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_dry_run_prints_the_request_and_names_the_credential_variable_not_its_value(
    skill_dir: Path, server: GuesthouseServer
) -> None:
    out = _cli(
        "call",
        str(skill_dir),
        "create_booking",
        "--args",
        json.dumps(BOOKING),
        "--dry-run",
        env={"HOLLOWBROOK_API_KEY": KEY},
    )
    assert out.returncode == 0, out.stderr
    request = json.loads(out.stdout)
    assert request == {
        "method": "POST",
        "url": f"{server.url}/bookings",
        "headers": {
            "Content-Type": "application/json",
            "Idempotency-Key": request["headers"]["Idempotency-Key"],
            "X-Hollowbrook-Key": "<from $HOLLOWBROOK_API_KEY>",
        },
        "body": BOOKING,
    }
    assert KEY not in out.stdout
    assert server.house.seen == []


def test_execution_is_bounded_and_follows_no_redirect(
    server: GuesthouseServer, tmp_path: Path
) -> None:
    (tmp_path / "probe.md").write_text(
        f"---\noperation:\n  method: GET\n  url: {server.url}/{{kind}}/{{arg}}\n---\n\n# probe\n\nA probe.\n"
    )
    skill = load_skill({"probe.md": (tmp_path / "probe.md").read_bytes()}, slug="probe")
    tool = skill.tool("probe")
    moved = send(build_request(tool, {"kind": "moved", "arg": "x"}, skill.hosts))
    assert (
        moved.status == 302
        and moved.as_dict()["redirect_not_followed"] == "http://169.254.169.254/latest/meta-data/"
    )
    assert [s.path for s in server.house.seen] == ["/moved/x"]
    big = send(
        build_request(tool, {"kind": "big", "arg": "100000"}, skill.hosts),
        limits=CallLimits(max_response_bytes=1000),
    )
    assert big.truncated and big.body == b"x" * 1000
    with pytest.raises(ExecutionFailed, match=r"probe: no answer within 0.5 s"):
        send(
            build_request(tool, {"kind": "slow", "arg": "3"}, skill.hosts),
            limits=CallLimits(timeout=0.5),
        )


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
@pytest.mark.parametrize(
    ("file", "right", "wrong", "refusal"),
    [
        (
            "cancel_booking.md",
            b"approval:",
            b"aproval:",
            "cancel_booking.md: frontmatter: unknown key 'aproval'; did you mean `approval`?",
        ),
        (
            "body.md",
            b"auth:\n  header:",
            b"auth:\n  headr:",
            "body.md: auth: unknown key 'headr'; did you mean `header`?",
        ),
        (
            "body.md",
            b"name: hollowbrook",
            b"nmae: hollowbrook",
            "body.md: frontmatter: unknown key 'nmae'; did you mean `name`?",
        ),
    ],
)
def test_a_misspelled_declaration_is_refused_and_the_delete_is_never_sent(
    skill_dir: Path,
    server: GuesthouseServer,
    tmp_path: Path,
    file: str,
    right: bytes,
    wrong: bytes,
    refusal: str,
) -> None:
    # with `aproval:` the DELETE would have gone out ungated: the package is refused at load instead
    path = skill_dir / file
    path.write_bytes(path.read_bytes().replace(right, wrong, 1))
    env = {"HOLLOWBROOK_API_KEY": KEY, "SKILLPRESS_HOME": str(tmp_path / "home")}
    sent = _cli(
        "call", str(skill_dir), "cancel_booking", "--args", '{"booking_id": "bk-1"}', env=env
    )
    assert sent.returncode == 2, sent.stderr
    assert sent.stderr.startswith(f"error: {refusal} (it takes "), sent.stderr
    assert server.house.seen == []
