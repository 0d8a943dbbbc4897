"""Publishing many (#61.5): every skill's newest waiting proposal made live in one command and,
through the API, in one request, each checked as a single publish is; what was not published
listed with why; only an operator may ask."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_up import _cli as run
from tests.cli.test_up import _start, _stop, home_env
from tests.cli_process import skillpress
from tests.conftest import SPECS

pytestmark = pytest.mark.integration  # starts real servers

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"


def _import(home: Path, spec: Path, slug: str) -> str:
    made = run(home, "import", str(spec), "--skill", slug, "--json")
    assert made.returncode == 0, made.stderr
    proposed = [e for e in json.loads(made.stdout)["events"] if "version_id" in e]
    return str(proposed[-1]["version_id"])


def _post(link: dict[str, Any], body: dict[str, Any], token: str | None) -> tuple[int, Any]:
    req = urllib.request.Request(
        f"{link['url']}/v1/publications", data=json.dumps(body).encode(), method="POST"
    )
    req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_all_proposed_publishes_each_waiting_proposal_and_says_what_it_did_not(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    first = run(home, "token", "add", "alice")  # the home's first operator
    assert first.returncode == 0, first.stderr
    alice = first.stdout.split()[-1]
    proc, _ = _start(home)
    try:
        a = _import(home, SPECS / "oai-petstore-expanded.yaml", "pets-a")
        b = _import(home, SPECS / "oai-petstore.swagger2.yaml", "pets-b")
        live = _import(home, HOLLOWBROOK, "hollowbrook")
        assert run(home, "publish", "hollowbrook", live).returncode == 0

        done = run(home, "publish", "--all-proposed", "--json")
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert [(p["skill"], p["version_id"]) for p in out["published"]] == [
            ("pets-a", a),
            ("pets-b", b),
        ]  # hollowbrook's live version is its newest: nothing waits there
        assert out["refused"] == []
        listed = {
            v["version_id"]: v["live"]
            for v in json.loads(run(home, "versions", "pets-a", "--json").stdout)
        }
        assert listed == {a: True}
        again = run(home, "publish", "--all-proposed")
        assert again.returncode == 0 and again.stdout == "no proposal waits to be published\n"

        link = json.loads((home / "api.json").read_text())
        named = {"skills": ["pets-a", "nope"], "timeout": 30}
        status, answer = _post(link, named, link["token"])
        assert status == 200, answer
        assert answer == {
            "published": [],
            "refused": [
                {"skill": "nope", "version_id": None, "reason": "no skill 'nope'"},
                {
                    "skill": "pets-a",
                    "version_id": None,
                    "reason": "no proposal waits to be published",
                },
            ],
        }
        # only an operator publishes: a runtime's real token reads live versions, and no more
        made = skillpress(
            "token", "add", "follower", "--role", "runtime",
            env=home_env(home, operator_token=alice), replace_env=True,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        runtime = made.stdout.split()[-1]
        assert _post(link, named, runtime)[0] == 403
        assert _post(link, named, None)[0] == 401
        assert _post(link, named, "not-a-token")[0] == 401
        both = run(home, "publish", "pets-a", "--all-proposed")
        assert both.returncode == 2 and "name no skill" in both.stderr
    finally:
        _stop(proc)


def test_all_proposed_works_on_the_embedded_default_without_a_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a = _import(home, SPECS / "oai-petstore-expanded.yaml", "pets-a")
    b = _import(home, SPECS / "oai-petstore.swagger2.yaml", "pets-b")
    done = run(home, "publish", "--all-proposed")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "published 2 skills",
        f"  pets-a: version {a[:12]}",
        f"  pets-b: version {b[:12]}",
    ]
