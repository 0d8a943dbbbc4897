"""Context economy (#58): what a model is sent before its first call, and what it searches.

A server of many skills (`mcp --all`) costs what one skill does: the index of its skills and the
fixed tools under 2,000 cl100k tokens however many skills it serves (184 followed skills sent
46 KB of instructions, about 14,500 tokens, and each of four tools named all 184 slugs). A few
skills keep their full lines; a registry is said tighter."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import bpe_openai
import pytest

from skillpress.mcp.catalog import HOW_TO, Loaded, index_of
from skillpress.mcp.tools import base_tools
from skillpress.runtime.package.search_words import action_phrase
from skillpress.runtime.package.skill import load_skill
from tests.conftest import SPECS
from tests.derived import derived

CL100K = bpe_openai.get_encoding("cl100k_base")


def _registry(count: int) -> dict[str, Loaded]:
    files = dict(derived(SPECS / "oai-petstore-expanded.yaml").files)
    skill = load_skill(files)
    words = ("pets", "billing", "orders", "tickets", "identity", "storage", "search", "mail")
    return {f"{words[i % len(words)]}-{i:05d}": (skill, files, None) for i in range(count)}


@pytest.mark.parametrize("count", [3, 184, 10_000])
def test_a_server_of_many_skills_is_sent_under_two_thousand_tokens(count: int) -> None:
    skills = _registry(count)
    index = index_of(skills)
    tools = base_tools(next(iter(skills.values()))[0], sorted(skills))
    listed = json.dumps(
        [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
            for t in tools
        ]
    )
    sent = len(CL100K.encode(index)) + len(CL100K.encode(listed))
    assert sent <= 2_000, (count, sent)
    assert HOW_TO in index and index.startswith(f"{count} skills.")
    if count == 3:  # a few skills keep what each is for
        assert "- `billing-00001` — Swagger Petstore: " in index
    elif count == 184:  # every one still named
        assert all(f"`{slug}`" in index for slug in skills)
    else:
        assert index.rstrip().endswith(
            "(ask the person which one; read_skill_file reads any by its slug)."
        )
        assert " more, whose slugs begin with " in index


def test_no_two_tools_of_an_api_share_a_description() -> None:
    """#58.2: 101 of GitHub's tools shared a description with another ("List
    repositories…"); each says its request line too, so each is its own, and a search reads the
    path's nouns."""
    from tests.conftest import GITHUB

    skill = load_skill(dict(derived(GITHUB).files))
    said = [t.description for t in skill.tools]
    assert len(said) == len(set(said)) == 1_223
    issue = skill.tool("issues_update")
    assert issue.description.endswith("PATCH /repos/{owner}/{repo}/issues/{issue_number})")


def test_an_operations_file_as_a_model_reads_it_fits_a_read() -> None:
    """#58.4: Stripe's post_payment_intents.md was 7,316 tokens read whole, three quarters of
    them the declaration (its argument schema, which describe_operation gives); read over MCP it
    is its prose, under 3,000 tokens for every operation of the fixture APIs."""
    from skillpress.format.frontmatter import prose_text
    from tests.conftest import GITHUB

    largest: list[tuple[int, str]] = []
    for spec in (SPECS / "stripe.json", SPECS / "twilio-api-v2010.json", GITHUB):
        files = derived(spec).files
        for name, data in files.items():
            prose = prose_text(data) if name.endswith(".md") else None
            if prose is not None:
                largest.append((len(CL100K.encode(prose)), f"{spec.name}: {name}"))
    largest.sort(reverse=True)
    assert largest[0][0] <= 3_000, largest[:5]
    stripe = next(n for n, name in largest if name == "stripe.json: post_payment_intents.md")
    assert stripe < 2_500, stripe


@pytest.mark.parametrize(
    ("method", "path", "said"),
    [
        ("GET", "/v1.0/me/messages", "list my messages"),
        ("GET", "/v1.0/me", "get my profile"),
        ("POST", "/v1.0/groups/{group-id}/members/$ref", "add members to a group"),
        ("POST", "/v1.0/me/microsoft.graph.sendMail", "send mail for me"),
        ("GET", "/api/v1/namespaces/{namespace}/pods", "list pods of a namespace"),
        ("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}", "update issue of a repo"),
        ("DELETE", "/v1/subscriptions/{id}", "delete subscription"),
        ("POST", "/v1/projects/{project}:cancel", "cancel project"),
        ("GET", "/{id}", ""),
    ],
)
def test_a_tool_says_what_its_request_does_in_a_persons_words(
    method: str, path: str, said: str
) -> None:
    """#58.2: a client's search reads a tool's name and description; Graph's summaries are a
    generator's ("Get open extension." for GET /me/messages), so each says what its request
    does too. Measured in `just bench` (scripts/bench_search.py): Graph's right operation in the
    top five for 4 of 7 queries, where it was 1."""
    assert action_phrase(method, path) == said


def test_the_phrase_joins_the_request_line_in_every_description() -> None:
    from tests.conftest import GITHUB

    skill = load_skill(dict(derived(GITHUB).files))
    issue = skill.tool("issues_update")
    assert issue.description.endswith(
        "(update issue of a repo: PATCH /repos/{owner}/{repo}/issues/{issue_number})"
    )


def _served(skills: dict[str, Loaded]) -> Any:
    from skillpress.mcp.catalog import Catalog

    return Catalog(
        skills,
        eager=False,
        credentials=None,
        limits=None,
        gatekeepers=None,
        refresh=None,
        several=True,
        sandboxed=False,
        model=None,
        runs=None,
    )


class _Counted(dict[str, bytes]):
    """A package's files that count the reads of its body."""

    bodies = 0

    def get(self, key: str, default: Any = None) -> Any:
        if key == "body.md":
            _Counted.bodies += 1
        return super().get(key, default)


def test_ten_thousand_skills_are_served_without_checking_each_against_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#61 at 10,000 skills: `mcp --all` did not answer initialize in 3 minutes, checking each
    skill's tool names against every skill served before it (and reading every body for an
    index that names slugs only). Each is now checked against the names already served: the
    clash check sees the new skill and the ones it clashes with, never the whole registry; the
    index reads no body when not even the slugs fit; a refusal names the nearest slugs, not all
    of them. A real clash is still refused, in the same words."""
    from skillpress.mcp import catalog as catalog_module
    from skillpress.runtime.package.skill import tool_clash

    seen: list[int] = []

    def counted(skills: Any, flows: Any = None) -> Any:
        seen.append(len(skills))
        return tool_clash(skills, flows)

    monkeypatch.setattr(catalog_module, "tool_clash", counted)
    files = dict(derived(SPECS / "oai-petstore-expanded.yaml").files)
    pets = load_skill(files, lazy=True)
    renamed = {}
    for i in range(10_000):  # each its own slug, so its own tool names (as derive names them)
        slug = f"api-{i:05d}"
        entries = tuple(
            dataclasses.replace(e, tool=(e.tool or "").replace("petstore", slug))
            for e in pets.operations
        )
        own = dataclasses.replace(pets, slug=slug, listing=lambda entries=entries: entries)
        renamed[slug] = (own, _Counted(files), None)
    served = _served(renamed)
    assert len(served.state) == 10_000 and not served.left_out
    assert max(seen) == 1  # each checked alone: none clashed with what was served
    _Counted.bodies = 0
    assert index_of(served.state).startswith("10000 skills.") and _Counted.bodies == 0
    refused = served.chosen({"skill": "api-0042"})
    assert isinstance(refused, str) and len(refused) < 300, refused
    assert refused.startswith("no skill 'api-0042' here: one of the 10000 skills"), refused
    assert "(nearest: api-" in refused
    # the same package under a second key is the same skill: left out, as before
    again = _served({"a": renamed["api-00001"], "b": renamed["api-00001"]})
    assert (
        list(again.state) == ["a"] and "is skill api-00001, which a serves" in again.left_out["b"]
    )
