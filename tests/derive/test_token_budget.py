"""#58.1: what an MCP client is sent before its first call (the server's usage paragraph and
body.md as instructions, the five fixed tools or a tiny API's own: `tests/up_front.py`) stays
under 2,000 cl100k tokens for any API, where Kubernetes was 2,502, Twilio 2,426, Stripe 2,279 and GitHub 2,220. Counted with a real tokenizer
(bpe-openai ships cl100k's encoding; tiktoken would download it): the body is budgeted by an
estimate from above (`format.token_estimate`), which must never be under the real count."""

from __future__ import annotations

import json
import random
from pathlib import Path

import bpe_openai
import pytest

from skillpress.format.token_estimate import _PIECE, estimate_tokens
from tests.conftest import corpus
from tests.derive.test_corpus import REFUSED
from tests.derived import derived, spread
from tests.up_front import up_front_tokens

UP_FRONT = 2_000
CL100K = bpe_openai.get_encoding("cl100k_base")


def _tokens(text: str) -> int:
    return len(CL100K.encode(text))


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_an_agent_is_sent_under_two_thousand_tokens_before_its_first_call(spec: Path) -> None:
    files = derived(spec).files
    assert up_front_tokens(dict(files)) <= UP_FRONT  # as the server sends it
    # the estimate the body is held to is never under what a model is really charged, on the
    # body and on the listings beside it (names, counts, first sentences); an operation's file
    # is held to bytes, and a paragraph of words no vocabulary holds (Lorem ipsum) can cost
    # more than it says
    manifest = json.loads(files["skill.json"])
    listings = sorted(c["file"] for c in manifest.get("categories", []))
    for path in ["body.md", *spread(listings, 12)]:
        text = files[path].decode()
        assert estimate_tokens(text) >= _tokens(text), path


def test_the_estimate_holds_for_words_identifiers_digits_and_other_scripts() -> None:
    for text in (
        "List the repositories of an organization.",
        "`listCoreV1NamespacedPersistentVolumeClaim` (3) `repos_get_branch_protection` (12)",
        # Mist's categories (the whole sweep: its body was 1,426 tokens, estimated 1,359)
        "`orgs_webhooks` (5), `orgs_wlans` (9), `orgs_wx_rules` (6), `orgs_wx_tags` (7),",
        "`msps_orgs` (5), `msps_search` (1), `msps_sso_roles` (4), `msps_sso` (7), `msps_stats` (2),",
        "- `me_5` — 1,483 operations. Part 5 of 6: mailFolders, messages, onenote.",
        "{{user.id}} /v2/registry/{registry_name}/repositories/{repository_name}/digests",
        "Получить список заказов 注文の一覧を取得する ✓ ünïcödé",
        "0123456789" * 20,
        "))))]]]]}}}}----====" * 10,
    ):
        assert estimate_tokens(text) >= _tokens(text), text


def test_a_category_split_in_parts_says_which_paths_each_part_holds() -> None:
    """#58.2: Graph's body named `me_1` … `me_6` (six parts of `me`, 337 to 353 operations
    each) and nothing else, so a model opened parts to find `messages`; where the body holds
    it, each part says the span of its paths."""
    from types import SimpleNamespace

    from skillpress.derive.categories import Category
    from skillpress.derive.render_body import render_body

    op = SimpleNamespace(name="me_list_messages", tool="x", path="/me/messages")
    parts = [
        Category("me_1", "Me (me … calendars; part 1 of 2)", "", [op], "me", []),
        Category("me_2", "Me (mailFolders … todo; part 2 of 2)", "", [op, op], "me", []),
        Category("users", "Users", "", [op], None, []),
    ]
    meta = {"title": "Graph", "description": ""}
    text = render_body(meta, [op], parts, fits=lambda t: "—" not in t)  # no line fits
    assert "`me_1` (1: me … calendars), `me_2` (2: mailFolders … todo), `users` (1)." in text
    tightest = render_body(
        meta, [op], parts, fits=lambda t: "—" not in t and ": " not in t.split("## Categories")[-1]
    )
    assert "`me_1` (1), `me_2` (2), `users` (1)." in tightest


def _estimate_piece_by_piece(text: str) -> int:
    """The estimate as the module's note defines it, one piece at a time with nothing cached."""
    count = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        stripped = piece.strip()
        if not stripped or stripped[0].isdigit():
            count += 1
        elif stripped[0] in "_`" and any(c.isalpha() for c in piece):
            count += 1 + len(stripped) // 3
        elif any(c.isalpha() for c in piece):
            count += 1 + (len(piece) - 3) // 4 if len(piece) > 3 else 1
        else:
            count += max(1, -(-len(stripped) // 2))
        count += sum(1 for c in piece if not c.isascii())
    return count


def test_the_cached_estimate_is_the_piece_by_piece_one() -> None:
    # a layout asks again of the same body and most pieces are words that come round again, so
    # both are cached: the count must be the one the note defines, whatever the cache holds
    rng = random.Random(59)
    alphabet = "ab_ `1²Ⅷé中😀\n\r\t'sxyz-.,:;(){}"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    for text in texts + texts[::-1]:  # the second time round, from the caches
        assert estimate_tokens(text) == _estimate_piece_by_piece(text), repr(text)
