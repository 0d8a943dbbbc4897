"""A binary answer reaches the person exactly (#42.13): redirected standard output gets its bytes
(as curl does, the status on standard error), `--output FILE` writes them, `--json` carries them
as base64, and a terminal gets a description instead of mojibake."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_process import COMMAND, skillpress
from tests.runtime.hostile_api import Answer, HostileApi, hostile_api, write_package

pytestmark = pytest.mark.integration  # the command line as a process (tests/conftest.py)

AUDIO = bytes(range(256)) * 8 + b"\xff\xfb\x90"  # 2,051 bytes that are no UTF-8 text


@pytest.fixture
def api() -> Iterator[HostileApi]:
    yield from hostile_api(
        {"/speech": lambda seen: Answer(headers={"Content-Type": "audio/mpeg"}, body=AUDIO)}
    )


def test_a_binary_answer_is_given_its_exact_bytes(tmp_path: Path, api: HostileApi) -> None:
    import os
    import subprocess

    package = write_package(
        tmp_path,
        "voice",
        "---\nname: voice\n---\n\n# Voice\n",
        {
            "speak": "---\noperation:\n  method: GET\n"
            f"  url: {api.url}/speech\n---\n\n# speak\n\nSpeak.\n"
        },
    )
    env = {"SKILLPRESS_HOME": str(tmp_path / "home")}
    raw = subprocess.run(
        [*COMMAND, "call", str(package), "speak"],
        capture_output=True,
        env={**os.environ, **env},
        timeout=60,
    )
    assert raw.returncode == 0 and raw.stdout == AUDIO
    assert raw.stderr.decode().splitlines()[-1] == "HTTP 200"
    out = tmp_path / "speech.mp3"
    written = skillpress("call", str(package), "speak", "--output", str(out), env=env)
    assert written.returncode == 0 and out.read_bytes() == AUDIO
    as_json = json.loads(skillpress("call", str(package), "speak", "--json", env=env).stdout)
    assert base64.b64decode(as_json["body_base64"]) == AUDIO
    assert as_json["body"] == {"binary": True, "content_type": "audio/mpeg", "bytes": len(AUDIO)}
