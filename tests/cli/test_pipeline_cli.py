"""The pipeline from the command line, on the embedded default (no servers configured) and on `up`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli.test_up import _cli as run
from tests.cli.test_up import _start, _stop, home_env
from tests.fake_api import Reply, fake_api

pytestmark = pytest.mark.integration  # starts real servers

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"


def test_import_publish_diff_and_a_refusal_on_the_embedded_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = tmp_path / "petstore.yaml"
    spec.write_bytes((SPECS / "oai-petstore-expanded.yaml").read_bytes())
    first = run(home, "import", str(spec), "--skill", "petstore")
    assert first.returncode == 0, first.stderr
    version = first.stdout.split("proposed petstore version ", 1)[1][:12]
    assert (
        "✓ parsed: 4 operations" in first.stderr and "✓ proposed version " + version in first.stderr
    )
    refused = run(
        home, "import", str(SPECS / "adyen-management-notification-v3.json"), "--skill", "petstore"
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: refused: the document describes only webhooks (8), calls the API makes to you; it has no operations for an agent to call"
    )
    # a document derive cannot read is refused at the door, as the API refuses it: no
    # submission id, nothing queued or recorded
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [unclosed")
    unread = run(home, "import", str(broken), "--skill", "petstore")
    assert unread.returncode == 2
    assert "submission " not in unread.stderr
    assert unread.stderr.strip().splitlines()[-1].startswith("error: ")
    assert len(json.loads(run(home, "versions", "petstore", "--json").stdout)) == 1
    published = run(home, "publish", "petstore", version)
    assert published.returncode == 0, published.stderr
    assert published.stdout.startswith(
        f"published petstore version {version}: 8 files, hosts petstore.swagger.io"
    )
    # #55.8: a first publication says how many operations went live, not each one
    assert published.stdout.splitlines()[1:] == ["  the first live version: 4 operations"]
    again = run(home, "import", str(spec), "--skill", "petstore")
    assert again.returncode == 0 and again.stdout.startswith(
        "unchanged: petstore already has revision"
    )
    # The spec loses an operation: a new proposal, the live version untouched until published.
    text = spec.read_text()
    cut = text.index("    delete:")
    spec.write_text(text[:cut] + text[text.index("components:") :])
    second = run(home, "import", str(spec), "--skill", "petstore", "--json")
    assert second.returncode == 0, second.stderr
    outcome = json.loads(second.stdout)
    assert outcome["outcome"] == "proposed"
    proposed = outcome["events"][-1]
    assert proposed["summary"] == {"added": 0, "removed": 1, "changed": 0, "files_changed": 4}
    versions = json.loads(run(home, "versions", "petstore", "--json").stdout)
    assert [(v["version_id"][:12] == version, v["live"], v["status"]) for v in versions] == [
        (False, False, "proposed"),
        (True, True, "published"),
    ]
    diff = run(home, "diff", "petstore")
    assert diff.returncode == 0
    assert diff.stdout.splitlines()[1:] == [
        "  - delete_pet",
        "  also changes: body.md",  # the files beside the operations' that publishing changes
        "  0 added, 1 removed, 0 changed; 4 files differ",
    ]
    # #43.1: a note proposed on top of that: the diff against live spans two proposals and
    # says what each brings and why it was made
    noted = run(home, "annotate", "petstore", "-o", "find_pets", "--note", "Ten at most.")
    assert noted.returncode == 0, noted.stderr
    newest = json.loads(run(home, "versions", "petstore", "--json").stdout)[0]["version_id"]
    spans = run(home, "diff", "petstore").stdout.splitlines()
    at = spans.index("  from 2 proposals (publishing puts live what each made):")
    assert spans[at + 1 :] == [
        f"    {proposed['version_id'][:12]}: a new revision of the spec ({proposed['revision_id'][:12]})",
        "      brings: body.md, delete_pet",
        f"    {newest[:12]} (this one): note added to find_pets by cli",
        "      brings: find_pets",
    ]
    shown = run(home, "show", "petstore", "body.md", "--version", proposed["version_id"][:10])
    assert "delete_pet" not in shown.stdout and "find_pets" in shown.stdout
    live_body = run(home, "show", "petstore", "body.md")
    assert "delete_pet" in live_body.stdout
    assert run(home, "dead-letters").stdout.strip() == "no dead letters"
    assert run(home, "actions").stdout.strip() == "no open action items"
    missing = run(home, "publish", "petstore", "ffffffff")
    assert (
        missing.returncode == 2
        and missing.stderr.strip()
        == "error: petstore has no version 'ffffffff' (skillpress versions petstore)"
    )
    # #55.4: the credential the spec does not declare, named by a person, said in the diff
    keyed = run(
        home,
        "annotate",
        "petstore",
        "--credential",
        "X-Pet-Key",
        "--credential-env",
        "PETSTORE_PET_KEY",
    )
    assert keyed.returncode == 0, keyed.stderr
    said = "  credential: none → header X-Pet-Key (apiKey, from $PETSTORE_PET_KEY)"
    assert said in run(home, "diff", "petstore").stdout.splitlines()


def test_import_uses_a_running_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc, _ = _start(home)
    try:
        out = run(
            home, "import", str(SPECS / "oai-petstore.swagger2.yaml"), "--skill", "pets", "--json"
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["outcome"] == "proposed"
        assert "nats-server" not in run(home, "versions", "pets").stderr
    finally:
        _stop(proc)
    assert not (home / "up.json").exists()


def test_the_demo_runs_the_pipeline_and_publishes_twice_the_same(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = run(home, "demo", "--json")
    assert first.returncode == 0, first.stderr
    made = json.loads(first.stdout)
    assert (made["outcome"], made["operations"], made["tools"]) == ("proposed", 5, 5)
    assert (
        made["published"]["version_id"] == made["version_id"]
        and made["published"]["auth_header"] == "X-Hollowbrook-Key"
    )
    again = json.loads(run(home, "demo", "--json").stdout)
    assert (again["outcome"], again["version_id"]) == ("unchanged", made["version_id"])
    text = run(home, "demo")
    assert text.returncode == 0 and text.stdout.startswith(
        f"published hollowbrook version {made['version_id'][:12]}: 5 operations, 5 tools"
    )
    assert "# Hollowbrook Guesthouse" in text.stdout


def test_an_unreachable_nats_is_one_line_within_seconds(tmp_path: Path) -> None:
    env = home_env(tmp_path / "home", nats_url="nats://127.0.0.1:1")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "import",
            str(SPECS / "oai-petstore-expanded.yaml"),
            "--skill",
            "pets",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    took = time.monotonic() - started
    assert done.returncode == 1, "retryable: NATS may come back (exit 2 is for refusals)"
    # the submission's id first (whatever happens next), then the one line that ended it
    first, error = done.stderr.rstrip("\n").split("\n")
    submission = first.split()[1]
    assert first == f"submission {submission} (pets)", done.stderr
    assert error.startswith(
        "error: cannot reach NATS at nats://127.0.0.1:1 (ConnectionRefusedError:"
    ) and error.endswith(f"(submission {submission}: skillpress status {submission})"), error
    assert took < 45, f"took {took:.1f} s"  # a hang guard (the few seconds are the bench's)


def test_processes_started_at_once_on_a_fresh_home_share_one_migration(tmp_path: Path) -> None:
    env = home_env(tmp_path / "home")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "skillpress.cli.main", "versions", "nothing"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(8)
    ]
    outcomes = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    for code, err in outcomes:
        assert (code, err.strip()) == (
            2,
            "error: no skill 'nothing' (import one: skillpress import SPEC --skill nothing)",
        ), err


def test_a_dead_lettered_submission_replays_and_reaches_a_version(tmp_path: Path) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.platform.settings import Settings
    from skillpress.schemas.events import SpecSubmitted
    from skillpress.schemas.records import DeadLetter
    from skillpress.schemas.subjects import EVENTS

    home = tmp_path / "home"
    ctx = open_app(Settings(home=home))
    blob = ctx.blobs.put((SPECS / "oai-petstore-expanded.yaml").read_bytes())
    lost = SpecSubmitted(submission="lost", skill="petstore", blob=blob, created_by="test")
    with ctx.records.session() as s:  # as the delivery shell writes one for an exhausted message
        s.add(
            DeadLetter(
                subject=EVENTS.spec_submitted,
                worker="fetch",
                msg_id="submitted:lost",
                error="FetchFailed: the network was down",
                payload=lost.model_dump_json(),
                created_at=datetime.now(UTC),
            )
        )
    ctx.close()
    up, _ = _start(home)
    try:
        assert run(home, "dead-letters", "--replay", "7").stderr.strip() == (
            "error: no dead letter #7 (skillpress dead-letters lists them)"
        )
        replayed = run(home, "dead-letters", "--replay", "1")
        assert replayed.returncode == 0, replayed.stderr
        assert replayed.stdout.startswith("replayed #1 on skillpress.spec.submitted as replay:1:")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = run(home, "versions", "petstore", "--json")
            if listed.returncode == 0 and json.loads(listed.stdout):
                break
            time.sleep(0.5)
        assert listed.returncode == 0 and len(json.loads(listed.stdout)) == 1, listed.stderr
        again = run(home, "dead-letters", "--json")
        assert json.loads(again.stdout)[0]["replayed_as"].startswith("replay:1:")
        assert run(home, "dead-letters", "--replay-all").stdout.strip() == "nothing to replay"
    finally:
        _stop(up)


def test_review_is_scriptable_and_its_decisions_survive_a_re_import(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = tmp_path / "petstore.yaml"
    spec.write_bytes((SPECS / "oai-petstore-expanded.yaml").read_bytes())
    assert run(home, "import", str(spec), "--skill", "petstore").returncode == 0
    listed = run(home, "review", "petstore", "--json")
    assert listed.returncode == 0, listed.stderr
    pending = {(p["operation"], p["kind"]): p for p in json.loads(listed.stdout)}
    gate = pending[("delete_pet", "approval")]["id"]
    create = pending[("add_pet", "approval")]["id"]
    decided = run(home, "review", "petstore", "--confirm", gate, "--dismiss", create, "--json")
    assert decided.returncode == 0, decided.stderr
    assert len(json.loads(decided.stdout)["confirmed"]) == 1
    spec.write_text(spec.read_text().replace("Returns all pets", "Lists every pet"))
    assert run(home, "import", str(spec), "--skill", "petstore").returncode == 0
    after = {
        (p["operation"], p["kind"])
        for p in json.loads(run(home, "review", "petstore", "--json").stdout)
    }
    assert ("delete_pet", "approval") not in after and ("add_pet", "approval") not in after
    assert len(after) == len(pending) - 2


def test_an_import_a_dead_letter_stops_ends_at_once_naming_it_and_its_submission(
    tmp_path: Path,
) -> None:
    with fake_api(lambda r: Reply(503, b"")) as spec_host:
        url = f"{spec_host.url}/spec.json"
        env = home_env(
            tmp_path / "home", fetch_allow_private="true", max_deliver="2", retry_delays="[0.2]"
        )
        started = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "skillpress.cli.main",
                "import",
                url,
                "--skill",
                "flaky",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    submission = lines[0].split()[1]
    assert lines[0] == f"submission {submission} (flaky)"
    assert lines[-1].startswith(
        "error: stopped at fetch: dead letter #1 (skillpress.spec.submitted)"
    )
    assert lines[-1].endswith(
        f"skillpress dead-letters --replay 1 (submission {submission}: skillpress status {submission})"
    )
    assert "answered 503" in lines[-1] and took < 60, (took, done.stderr)
