"""Categories when tags fail: detection on real specs, the model path against a real
chat-completions server (good, malformed, repaired, timed out), and the offline fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillpress.derive import DeriveOptions, derive_package
from skillpress.derive.model_grouping import propose_grouping, summaries_of
from skillpress.derive.render import fits_one_read
from skillpress.platform.llm import ChatClient
from tests.chat_server import ChatServer
from tests.navigation import reads_to_operations

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
BODY_BUDGET = 8 * 1024


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def _within_budgets(files: dict[str, bytes]) -> None:
    assert len(files["body.md"]) <= BODY_BUDGET
    for path, data in files.items():
        if path.endswith(".md"):
            assert fits_one_read(data.decode()), path


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("spec", "failure", "mode"),
    [
        ("discord.json", "no_tags", "categories"),
        ("adyen-fund-v6.json", "single_tag", "flat"),
        ("twilio-insights-v2.json", "tag_per_operation", "flat"),
    ],
)
def test_failed_tags_are_detected_and_the_offline_result_is_within_budgets(
    spec: str, failure: str, mode: str
) -> None:
    package = derive_package((SPECS / spec).read_bytes())
    assert (package.grouping.tag_failure, package.grouping.mode) == (failure, mode)
    assert package.grouping.source == ("paths" if mode == "categories" else "flat")
    _within_budgets(package.files)


def test_the_model_groups_discord_from_names_and_summaries_only(chat: ChatServer) -> None:
    spec = (SPECS / "discord.json").read_bytes()
    offline = derive_package(spec)
    title, ops = summaries_of(offline.files)
    grouping, why = propose_grouping(
        ChatClient(chat.url, "test-model", "k-123", timeout=5).complete,
        title,
        ops,
        offline.grouping.tag_failure,
        6000,
    )
    assert (
        grouping is not None
        and grouping.source == "model"
        and why == "the model grouped the operations"
    )
    assert len(chat.requests) >= 2, (
        "212 operations in a 6,000-character budget take several requests"
    )
    for request in chat.requests:
        assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-123"
        sent = request["body"]["messages"][1]["content"]
        assert len(sent) < 6000 + 2000 and '"paths"' not in sent and "openapi" not in sent.lower()
    placed = [op for *_, members in grouping.categories for op in members]
    assert sorted(placed) == sorted(op.name for op in ops)
    package = derive_package(spec, DeriveOptions(grouping=grouping))
    meta = json.loads(package.files["skill.json"])
    assert meta["categorization"] == {
        "mode": "categories",
        "source": "model",
        "tag_failure": "no_tags",
    }
    assert {c["name"] for c in meta["categories"]} == {c[0] for c in grouping.categories}
    _within_budgets(package.files)
    assert derive_package(spec, DeriveOptions(grouping=grouping)).version_id == package.version_id


def test_a_malformed_answer_is_repaired_once(chat: ChatServer) -> None:
    chat.script = ["malformed"]
    title, ops = summaries_of(derive_package((SPECS / "discord.json").read_bytes()).files)
    grouping, _ = propose_grouping(
        ChatClient(chat.url, "m", timeout=5).complete, title, ops[:40], "no_tags", 50_000
    )
    assert grouping is not None
    repair = chat.requests[1]["body"]["messages"]
    assert repair[-1]["content"].startswith("That answer cannot be used: the answer is not JSON")


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (
            ["malformed", "malformed"],
            "the model's answer was invalid 2 times (last: the answer is not JSON (Expecting value); answer with the JSON object only)",
        ),
        (["wrong_ops", "wrong_ops"], "the model's answer was invalid 2 times (last: category"),
        (["slow"], "the model did not answer within 1 s"),
        (["error"], "the model endpoint answered 503"),
    ],
)
def test_a_bad_model_leaves_the_offline_grouping(
    chat: ChatServer, script: list[str], reason: str
) -> None:
    chat.script = list(script)
    title, ops = summaries_of(derive_package((SPECS / "discord.json").read_bytes()).files)
    grouping, why = propose_grouping(
        ChatClient(chat.url, "m", timeout=1).complete, title, ops[:30], "no_tags", 50_000
    )
    assert grouping is None and why.startswith(reason)


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_derive_llm_uses_the_model_and_says_so(chat: ChatServer, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "SKILLPRESS_LLM_BASE_URL": chat.url,
        "SKILLPRESS_LLM_MODEL": "test-model",
        "SKILLPRESS_HOME": str(tmp_path),
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "derive",
            str(SPECS / "discord.json"),
            "-o",
            str(tmp_path / "d"),
            "--llm",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["categorization"] == {
        "mode": "categories",
        "source": "model",
        "tag_failure": "no_tags",
    }
    assert "--llm: tags failed (no_tags); asking test-model to group 242 operations" in out.stderr
    unset = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "derive",
            str(SPECS / "discord.json"),
            "-o",
            str(tmp_path / "e"),
            "--llm",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in env.items() if not k.startswith("SKILLPRESS_LLM")},
    )
    assert unset.returncode == 2 and unset.stderr.startswith(
        "error: --llm: set SKILLPRESS_LLM_BASE_URL and SKILLPRESS_LLM_MODEL"
    )


@pytest.mark.corpus
def test_ten_thousand_operations_derive_within_budgets() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
    from bench import synthetic

    spec = synthetic(10_000)
    for path in spec["paths"].values():  # no tags: the offline grouping has to carry it
        for op in path.values():
            op.pop("tags", None)
    package = derive_package(json.dumps(spec).encode())
    meta = json.loads(package.files["skill.json"])
    assert meta["stats"]["operations"] == 10_000
    assert (
        meta["categorization"]["tag_failure"] == "no_tags"
        and meta["categorization"]["mode"] == "categories"
    )
    _within_budgets(package.files)
    assert not [w for w in package.warnings if "does not fit one read" in w or "over the" in w]
    assert not [c for c in meta["categories"] if "parent" in c], (
        "250 operations a category still fit one read: no subcategories"
    )


def test_a_category_too_large_for_one_read_is_cut_into_parts_the_body_lists() -> None:
    paths: dict[str, dict] = {}
    for i in range(600):  # one prefix far too large for one file, in six families
        paths[f"/big/family{i % 6}/item{i}"] = {
            "get": {
                "operationId": f"getBigItem{i}",
                "summary": f"Read big item {i} with its whole history and every field it has.",
                "responses": {"200": {"description": "ok"}},
            }
        }
    for i in range(100):
        paths[f"/small{i % 10}/thing{i}"] = {
            "get": {
                "operationId": f"getSmall{i}",
                "summary": f"Read small thing {i}.",
                "responses": {"200": {"description": "ok"}},
            }
        }
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Uneven", "version": "1"},
        "servers": [{"url": "https://u.test"}],
        "paths": paths,
    }
    package = derive_package(json.dumps(spec).encode())
    meta = json.loads(package.files["skill.json"])
    cats = meta["categories"]
    parents = {c["parent"] for c in cats if "parent" in c}
    assert parents == {"big"}
    # the families packed in order into as few parts as fit a read, each listed by the body
    assert [(c["name"], c["title"], c["operations"]) for c in cats if c.get("parent")] == [
        ("big_1", "big (family0 … family3; part 1 of 2)", 346),
        ("big_2", "big (family3 … family5; part 2 of 2)", 254),
    ]
    assert "big.md" not in package.files
    body = package.files["body.md"].decode()
    assert "- `big_1` — 346 operations. big (family0 … family3; part 1 of 2)." in body
    assert "(<name>.md, beside this one)" in package.files["big_2.md"].decode()
    assert set(reads_to_operations(package.files).values()) == {2}
    assert all(c.get("parent") is None for c in cats if c["name"].startswith("small"))
    _within_budgets(package.files)
    assert sum(c["operations"] for c in cats) == 700
    again = derive_package(json.dumps(spec).encode(), DeriveOptions(grouping=package.grouping))
    assert again.version_id == package.version_id, (
        "the grouping, parts included, round-trips through the categorize stage"
    )
