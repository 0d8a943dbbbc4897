"""What disagrees between the records and the live bucket, decided purely (#44.3)."""

from __future__ import annotations

from skillpress.app.operator.reconcile import Disagreement, disagreements, said
from skillpress.schemas.events import LiveVersion

V1, V2, V3, V4, V5, V9 = (str(n) * 32 for n in (1, 2, 3, 4, 5, 9))  # version ids, as made


def _live(slug: str, version: str, header: str | None = None) -> LiveVersion:
    return LiveVersion(
        skill=slug,
        version_id=version,
        files={"skill.json": "a" * 64},
        hosts=["h"],
        auth_header=header,
    )


def test_missing_stale_unreadable_and_orphaned_pointers_disagree_and_nothing_else() -> None:
    truth = [_live("kept", V1), _live("lost", V2), _live("stale", V4), _live("bad", V5)]
    pointers = {
        # the credential header is read from the version's manifest: not a disagreement
        "kept": _live("kept", V1, header="X-Key").model_dump_json().encode(),
        "stale": _live("stale", V3).model_dump_json().encode(),
        "bad": b"{not json",
        "gone": _live("gone", V9).model_dump_json().encode(),
    }
    found = disagreements(truth, pointers)
    assert [(d.slug, d.pointer, d.records.version_id if d.records else None) for d in found] == [
        ("bad", "?", V5),
        ("gone", V9, None),
        ("lost", None, V2),
        ("stale", V3, V4),
    ]
    assert said(found[1], repaired=True) == (
        f"gone: NATS had a pointer to {V9[:12]}, and the records say nothing is live: removed"
    )
    assert said(Disagreement("lost", None, truth[1]), repaired=False) == (
        f"lost: NATS had no live pointer, the records say {V2[:12]} is live"
    )
    assert disagreements(truth[:1], {"kept": pointers["kept"]}) == []
