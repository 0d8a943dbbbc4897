"""#58.6: OpenAI documents at most 128 functions in one request. A tool list for it of more is
refused whole by the API, so every face that shapes tools for a provider says so, with how to
choose, instead of printing what cannot be sent: `skillpress tools --format openai` (choose with
--only) and `SkillHost.tools("openai")` (choose with `only`). Providers with no documented limit
are not held to one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.host import SkillHost, TooManyTools
from tests.conftest import SPECS
from tests.derived import derived

ROOT = Path(__file__).parents[2]


def _stripe(tmp_path: Path) -> tuple[Path, int]:
    files = derived(SPECS / "stripe.json").files
    out = tmp_path / "skills" / "stripe"
    write_package_dir(files, out)
    operations = len(json.loads(files["skill.json"])["operations"])
    assert operations > 128
    return out, operations


def _tools(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", "tools", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_a_list_openai_would_refuse_is_refused_with_how_to_choose(tmp_path: Path) -> None:
    folder, operations = _stripe(tmp_path)
    for provider in ("openai", "openai-strict"):
        refused = _tools(str(folder), "--format", provider)
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.strip() == (
            f"error: {provider} takes at most 128 tools in one request, and these are"
            f" {operations}: choose those an agent needs with --only NAME (the skill's body and"
            " category files list them)"
        )
    chosen = _tools(str(folder), "--format", "openai", "--only", "get_customers")
    assert chosen.returncode == 0, chosen.stderr
    assert [t["function"]["name"] for t in json.loads(chosen.stdout)] == ["stripe_get_customers"]
    whole = _tools(str(folder), "--format", "anthropic")  # no documented limit: all of them
    assert whole.returncode == 0 and len(json.loads(whole.stdout)) == operations


def test_a_host_refuses_the_same_list_and_takes_a_choice(tmp_path: Path) -> None:
    folder, operations = _stripe(tmp_path)
    host = SkillHost(folder.parent)
    with pytest.raises(TooManyTools) as refused:
        host.tools("openai")
    assert (refused.value.count, refused.value.limit) == (operations, 128)
    assert "tools(provider, only=[names])" in str(refused.value)
    chosen = host.tools("openai", only=["stripe_get_customers", "stripe_post_customers"])
    assert [t["function"]["name"] for t in chosen] == [
        "stripe_get_customers",
        "stripe_post_customers",
    ]
    assert len(host.tools("gemini")) == operations
