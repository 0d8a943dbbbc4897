"""#55.8: a submission on a NATS where no worker runs was silent for 120 s and then pointed at
dead letters there were none of. The command line now says at once that nothing takes it yet (no
consumer for the subject on that NATS), what to start, and that what it sent waits for them;
then it waits (a worker started now takes it), and its end says there was no dead letter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.platform.embedded_nats import NatsServer

pytestmark = pytest.mark.integration  # a real nats-server and the command line as a process

SPEC = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


def test_an_import_with_no_worker_running_says_so_at_once(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats").start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLPRESS_")} | {
            "SKILLPRESS_HOME": str(tmp_path / "home"),
            "SKILLPRESS_NATS_URL": server.url,
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "skillpress.cli.main",
                "import",
                str(SPEC),
                "--skill",
                "pets",
                "--timeout",
                "3",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,  # a hang guard
        )
    finally:
        server.kill()
    assert done.returncode == 1, done.stderr
    said = done.stderr.strip().splitlines()
    submission = said[0].split()[1]
    assert said[0] == f"submission {submission} (pets)"
    assert (
        "no worker takes skillpress.spec.submitted on this NATS yet (no consumer for it): start"
        " the workers (`skillpress worker all`); what was sent waits in the stream for them"
    ) in said[1], said  # at once, before the wait
    assert said[-1].startswith("error: no answer from workers on"), said
    assert "and no dead letter: is every worker running (`skillpress worker all`)?" in said[-1]
    assert "dead-letters" not in done.stderr and "Traceback" not in done.stderr
