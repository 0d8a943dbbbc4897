"""What disagrees between the records and the live bucket, decided purely (#44.3)."""

from __future__ import annotations

from skillpress.schemas.events import LiveVersion
from skillpress.services.app.operator.reconcile import Disagreement, disagreements, said


def _live(slug: str, version: str, header: str | None = None) -> LiveVersion:
    return LiveVersion(
        skill=slug,
        version_id=version,
        files={"skill.json": "a" * 64},
        hosts=["h"],
        auth_header=header,
    )


def test_missing_stale_unreadable_and_orphaned_pointers_disagree_and_nothing_else() -> None:
    truth = [_live("kept", "v1"), _live("lost", "v2"), _live("stale", "v4"), _live("bad", "v5")]
    pointers = {
        # the credential header is read from the version's manifest: not a disagreement
        "kept": _live("kept", "v1", header="X-Key").model_dump_json().encode(),
        "stale": _live("stale", "v3").model_dump_json().encode(),
        "bad": b"{not json",
        "gone": _live("gone", "v9").model_dump_json().encode(),
    }
    found = disagreements(truth, pointers)
    assert [(d.slug, d.pointer, d.records.version_id if d.records else None) for d in found] == [
        ("bad", "?", "v5"),
        ("gone", "v9", None),
        ("lost", None, "v2"),
        ("stale", "v3", "v4"),
    ]
    assert said(found[1], repaired=True) == (
        "gone: NATS had a pointer to v9, and the records say nothing is live: removed"
    )
    assert said(Disagreement("lost", None, truth[1]), repaired=False) == (
        "lost: NATS had no live pointer, the records say v2 is live"
    )
    assert disagreements(truth[:1], {"kept": pointers["kept"]}) == []
