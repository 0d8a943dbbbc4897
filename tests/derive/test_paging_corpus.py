"""How the real APIs page, as derive reads them: Stripe's starting_after, GitHub's Link header,
Kubernetes' metadata.continue, Slack's response_metadata.next_cursor, Jira's startAt and next
URL, Twilio's next_page_uri. Counts as well as examples, so a heuristic that drifts shows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from skillpress.derive.package import read_api, read_document
from skillpress.derive.package_types import DeriveOptions
from tests.conftest import spec_bytes

pytestmark = pytest.mark.corpus

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"


def _paging(name: str) -> tuple[Counter[str | None], dict[str, dict[str, Any] | None]]:
    options = DeriveOptions()
    api = read_api(read_document(spec_bytes(SPECS / name), options), options, [])
    gets = [op for op in api.ops if op.method == "GET"]
    kinds = Counter(op.paging.kind if op.paging else None for op in gets)
    return kinds, {op.name: op.paging.to_dict() if op.paging else None for op in gets}


@pytest.mark.parametrize(
    ("spec", "kinds", "example", "paging"),
    [
        (
            "stripe.json",
            {"after_last": 99, "cursor": 7, None: 107},
            "get_customers",
            {
                "kind": "after_last",
                "param": "starting_after",
                "items": ["data"],
                "size": "limit",
                "more": ["has_more"],
                "key": "id",
            },
        ),
        (
            "github.json.gz",
            {"link": 208, "page": 69, None: 362},
            "repos_list_for_org",
            {"kind": "link", "size": "per_page"},
        ),
        (
            "kubernetes.json",
            {"cursor": 95, None: 321},
            "list_core_v1_namespaced_pod",
            {
                "kind": "cursor",
                "param": "continue",
                "field": ["metadata", "continue"],
                "size": "limit",
            },
        ),
        (
            "slack.json",
            {"cursor": 7, "page": 1, None: 72},
            "conversations_list",
            {
                "kind": "cursor",
                "param": "cursor",
                "field": ["response_metadata", "next_cursor"],
                "size": "limit",
            },
        ),
        (
            "jira.json",
            {"offset": 59, "next_url": 2, None: 166},
            "search_projects",
            {"kind": "offset", "param": "startAt", "items": ["values"], "size": "maxResults"},
        ),
        (
            "twilio-api-v2010.json",
            {"next_url": 60, None: 43},
            "list_account",
            {"kind": "next_url", "field": ["next_page_uri"]},
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_real_api_pages_as_it_documents(
    spec: str, kinds: dict[str | None, int], example: str, paging: dict[str, Any]
) -> None:
    found, by_name = _paging(spec)
    assert dict(found) == kinds
    assert by_name[example] == paging
