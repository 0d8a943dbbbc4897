"""Every use-case of the application layer and every worker step, on SQLite and a local blob
folder: the chain submit → fetch → parse → categorize/guess → render → publish, and what the faces
ask of it (versions, diffs, publish checks, annotations, review, exports, queries)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import select

from skillpress.app.base.bus import Event
from skillpress.app.base.context import AppContext, open_app
from skillpress.app.base.package_dir import write_package_dir
from skillpress.app.operator import annotations, exports, review
from skillpress.app.operator.annotations import Stored
from skillpress.app.operator.offline import (
    SpecUnreadable,
    derive_with_model,
    read_spec_file,
)
from skillpress.app.records import overview as queries
from skillpress.app.records import publish_check, versions
from skillpress.derive import DeriveOptions, derive_package
from skillpress.derive.annotations import AnnotationRefused
from skillpress.errors import ChatFailed, NotFound, Permanent, Refused
from skillpress.platform.settings import Settings
from skillpress.schemas.events import (
    AnnotationChanged,
    PublishVersion,
    RefreshSources,
    SpecSubmitted,
)
from skillpress.schemas.records import DeadLetter, Source
from skillpress.schemas.subjects import COMMANDS, EVENTS
from tests.app import bus
from tests.app.specs import money_spec
from tests.fake_api import Reply, fake_api

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"
DISCORD = Path(__file__).parents[1] / "fixtures" / "specs" / "discord.json"


def variant(rename: str | None = None, summary: str | None = None) -> bytes:
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    if rename:
        doc["paths"]["/bookings"]["post"]["operationId"] = rename
    if summary:
        doc["paths"]["/rooms"]["get"]["summary"] = summary
    return yaml.safe_dump(doc, sort_keys=False).encode()


def submit(ctx: AppContext, data: bytes, name: str, slug: str = "hollowbrook") -> list[bus.Event]:
    blob = ctx.blobs.put(data)
    event = SpecSubmitted(submission=name, skill=slug, blob=blob, created_by="test")
    return bus.run(ctx, EVENTS.spec_submitted, event)


def _pair(event: Event | None) -> tuple[str, dict[str, Any]]:
    """A stored ending as (subject, body), or ("", {}) when there is none."""
    return (event.subject, event.body) if event is not None else ("", {})


def last(events: list[bus.Event], subject: str) -> dict[str, Any]:
    found = [body for subj, body in events if subj == subject]
    assert found, f"no {subject} in {[s for s, _ in events]}"
    return found[-1]


def propose(ctx: AppContext, stored: Stored, change: str) -> dict[str, Any]:
    event = AnnotationChanged(
        skill=stored.skill.slug,
        annotation_ids=stored.ids,
        change=change,
        as_of=stored.at.isoformat(),
        submission=f"s-{change}-{stored.ids[0]}",
    )
    return last(bus.run(ctx, EVENTS.annotation_changed, event), EVENTS.version_proposed)


def note(ctx: AppContext, operation: str, text: str) -> Stored:
    """A note on one of Hollowbrook's operations, stored as a person's change."""
    skill = versions.find_skill(ctx, "hollowbrook")
    change = [("note", f"operation:{operation}", {"text": text})]
    return annotations.store_checked(ctx, skill, lambda: (change, []), "t")


def dead_letter(ctx: AppContext, payload: dict[str, Any] | None = None, **fields: Any) -> None:
    """A dead letter recorded as a worker would (`payload`: its message)."""
    row = {"subject": "s", "worker": "w", "error": "E: x", "created_at": ctx.clock()} | fields
    with ctx.records.session() as s:
        s.add(DeadLetter(payload=json.dumps(payload or {}), **row))


def publish(ctx: AppContext, version_id: str, remove_gates: bool = False) -> dict[str, Any]:
    checked = publish_check.check_publish_request(ctx, "hollowbrook", version_id, remove_gates)
    command = PublishVersion(
        skill="hollowbrook", version_id=checked, remove_gates=remove_gates, requested_by="test"
    )
    return last(bus.run(ctx, COMMANDS.publish_version, command), EVENTS.version_published)


def _delete_gate(ctx: AppContext, by: str = "ann") -> Stored:
    """A person's gate on cancel_booking's DELETE, stored (not yet proposed)."""
    return annotations.record_annotation(
        ctx,
        "hollowbrook",
        "approval",
        "operation:cancel_booking",
        {"matches": "DELETE /bookings/{booking_id}", "risk": "high"},
        by,
    )


def test_the_chain_proposes_one_version_and_the_same_bytes_make_nothing_new(
    ctx: AppContext,
) -> None:
    events = submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    assert [s.rsplit(".", 2)[-2] + "." + s.rsplit(".", 1)[-1] for s, _ in events] == [
        "spec.submitted",
        "revision.stored",
        "revision.parsed",
        "revision.categorized",
        "suggestions.made",
        "version.proposed",
    ]
    proposed = last(events, EVENTS.version_proposed)
    assert proposed["created"] is True and proposed["summary"]["added"] == 5
    again = submit(ctx, HOLLOWBROOK.read_bytes(), "two")
    assert [s for s, _ in again][-1] == EVENTS.revision_unchanged
    listed = versions.list_versions(ctx, "hollowbrook")
    assert [(v["version_id"], v["status"], v["live"]) for v in listed] == [
        (proposed["version_id"], "proposed", False)
    ]
    skill = versions.find_skill(ctx, "hollowbrook")
    unchanged = last(again, EVENTS.revision_unchanged)
    assert versions.version_for_outcome(ctx, skill, unchanged).id == proposed["version_id"]


def test_the_same_bytes_with_another_credential_variable_are_derived_again(
    ctx: AppContext,
) -> None:
    from skillpress.format.manifest import Manifest

    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    blob = ctx.blobs.put(HOLLOWBROOK.read_bytes())
    event = SpecSubmitted(
        submission="two",
        skill="hollowbrook",
        blob=blob,
        created_by="t",
        credential_env="HOLLOWBROOK_KEY",
    )
    again = last(bus.run(ctx, EVENTS.spec_submitted, event), EVENTS.version_proposed)
    assert again["version_id"] != first["version_id"]
    skill = versions.find_skill(ctx, "hollowbrook")
    files = versions.version_files(
        ctx.blobs, versions.pick_version(ctx, skill, again["version_id"])
    )
    auth = Manifest.from_json(files["skill.json"]).auth
    assert auth is not None and auth.env == "HOLLOWBROOK_KEY"
    # and the same variable again is the same inputs: nothing new
    event = SpecSubmitted(
        submission="three",
        skill="hollowbrook",
        blob=blob,
        created_by="t",
        credential_env="HOLLOWBROOK_KEY",
    )
    assert [s for s, _ in bus.run(ctx, EVENTS.spec_submitted, event)][-1] == (
        EVENTS.revision_unchanged
    )


def test_same_inputs_make_the_same_version_id_in_another_home(
    ctx: AppContext, tmp_path: Path
) -> None:
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "a"), EVENTS.version_proposed)
    other = open_app(Settings(home=tmp_path / "elsewhere", refresh_interval=0))
    try:
        second = last(submit(other, HOLLOWBROOK.read_bytes(), "b"), EVENTS.version_proposed)
    finally:
        other.close()
    assert first["version_id"] == second["version_id"]


def test_a_refused_spec_is_recorded_and_touches_nothing_earlier(ctx: AppContext) -> None:
    good = last(submit(ctx, HOLLOWBROOK.read_bytes(), "good"), EVENTS.version_proposed)
    events = submit(ctx, b"openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths: {}\n", "bad")
    rejected = last(events, EVENTS.revision_rejected)
    assert (
        rejected["reason"]
        == "the document has no operations under 'paths'; there is nothing to call"
    )
    assert [v["version_id"] for v in versions.list_versions(ctx, "hollowbrook")] == [
        good["version_id"]
    ]


def test_publish_makes_one_version_live_and_refuses_to_drop_a_gate_silently(
    ctx: AppContext,
) -> None:
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    published = publish(ctx, first["version_id"][:12])
    assert (
        published["version_id"] == first["version_id"] and published["previous_version_id"] is None
    )
    assert set(versions.live_files(ctx, "hollowbrook")) == set(published["files"])
    gate = _delete_gate(ctx, "tester")
    gated = propose(ctx, gate, "added")
    publish(ctx, gated["version_id"])
    retired = annotations.record_retirement(ctx, gate.ids[0], "tester")
    ungated = propose(ctx, retired, "retired")
    with pytest.raises(
        versions.PublishRefused, match="would drop the live version's gate DELETE /bookings/"
    ):
        publish_check.check_publish_request(ctx, "hollowbrook", ungated["version_id"], False)
    assert (
        publish(ctx, ungated["version_id"], remove_gates=True)["previous_version_id"]
        == gated["version_id"]
    )
    listed = versions.list_versions(ctx, "hollowbrook")
    # without the gate the files are the first version's again: that version is live once more
    assert ungated["version_id"] == first["version_id"] and ungated["created"] is False
    assert [(v["version_id"], v["status"], v["live"]) for v in listed] == [
        (gated["version_id"], "superseded", False),
        (first["version_id"], "published", True),
    ]


def test_lookups_refuse_with_what_to_do(ctx: AppContext) -> None:
    with pytest.raises(
        NotFound, match=r"no skill 'nope' \(import one: skillpress import SPEC --skill nope\)"
    ):
        versions.find_skill(ctx, "nope")
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    skill = versions.find_skill(ctx, "hollowbrook")
    with pytest.raises(Refused, match="give at least 6 characters"):
        versions.pick_version(ctx, skill, "abc")
    with pytest.raises(NotFound, match="hollowbrook has no live version: publish one first"):
        versions.live_files(ctx, "hollowbrook")


def test_a_note_applies_and_a_rename_orphans_it_until_it_is_rekeyed(ctx: AppContext) -> None:
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    publish(ctx, first["version_id"])
    note = annotations.record_annotation(
        ctx, "hollowbrook", "note", "operation:create_booking", {"text": "Ask for dates."}, "ann"
    )
    noted = propose(ctx, note, "added")
    assert [a["status"] for a in annotations.list_annotations(ctx, "hollowbrook")] == ["applied"]
    assert (
        b"Ask for dates."
        in versions.version_files(
            ctx.blobs, versions.pick_version(ctx, note.skill, noted["version_id"])
        )["create_booking.md"]
    )
    renamed = last(submit(ctx, variant(rename="bookRoom"), "two"), EVENTS.version_proposed)
    assert renamed["summary"]["orphaned"] == 1
    diff = versions.diff_versions(ctx, "hollowbrook", None, None)
    assert diff["added"] == ["book_room"] and diff["removed"] == ["create_booking"]
    assert diff["orphaned"] == [
        {"id": note.ids[0], "kind": "note", "operation": "create_booking", "rekey_to": "book_room"}
    ]
    assert [a["status"] for a in annotations.list_annotations(ctx, "hollowbrook")] == ["orphaned"]
    moved = annotations.record_rekeying(ctx, {note.ids[0]: "book_room"}, "ann")
    propose(ctx, moved, "rekeyed")
    states = annotations.list_annotations(ctx, "hollowbrook", include_retired=True)
    assert [(a["id"], a["status"]) for a in states] == [
        (note.ids[0], "retired"),
        (moved.ids[1], "applied"),
    ]


def test_several_orphans_are_rekeyed_in_one_proposal(ctx: AppContext) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    note = annotations.record_annotation(
        ctx, "hollowbrook", "note", "operation:create_booking", {"text": "Ask for dates."}, "ann"
    )
    example = annotations.record_annotation(
        ctx, "hollowbrook", "identity", "operation:create_booking", {"fields": ["room_id"]}, "ann"
    )
    propose(ctx, example, "added")
    submit(ctx, variant(rename="bookRoom"), "two")
    orphans = [o["id"] for o in versions.diff_versions(ctx, "hollowbrook", None, None)["orphaned"]]
    assert sorted(orphans) == sorted([note.ids[0], example.ids[0]])
    moved = annotations.record_rekeying(
        ctx, {note.ids[0]: "book_room", example.ids[0]: "book_room"}, "ann"
    )
    assert moved.ids[:2] == [note.ids[0], example.ids[0]] and len(moved.ids) == 4
    proposed = propose(ctx, moved, "rekeyed")
    assert proposed["summary"].get("orphaned", 0) == 0
    states = {
        a["id"]: (a["status"], a["target"])
        for a in annotations.list_annotations(ctx, "hollowbrook", include_retired=True)
    }
    assert [states[i] for i in moved.ids] == [
        ("retired", "operation:create_booking"),
        ("retired", "operation:create_booking"),
        ("applied", "operation:book_room"),
        ("applied", "operation:book_room"),
    ]
    with pytest.raises(NotFound, match="no active annotation"):
        annotations.record_rekeying(ctx, {note.ids[0]: "book_room"}, "ann")
    with pytest.raises(Refused, match="name at least one annotation"):
        annotations.record_rekeying(ctx, {}, "ann")


def test_a_gate_whose_operation_is_removed_is_dropped_as_removed(ctx: AppContext) -> None:
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    gate = _delete_gate(ctx)
    gated = propose(ctx, gate, "added")
    publish(ctx, gated["version_id"])
    assert first["version_id"] != gated["version_id"]
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    del doc["paths"]["/bookings/{booking_id}"]["delete"]
    gone = last(submit(ctx, yaml.safe_dump(doc).encode(), "two"), EVENTS.version_proposed)
    _, dropped = publish_check.gates_dropped(ctx, "hollowbrook", gone["version_id"])
    assert dropped == [("DELETE /bookings/{booking_id}", True)]
    # the first revision's spec went live; the second's never did
    assert versions.revision_published(
        ctx, versions.find_skill(ctx, "hollowbrook"), gated["revision_id"]
    )
    assert gone["revision_id"] != gated["revision_id"]
    assert not versions.revision_published(
        ctx, versions.find_skill(ctx, "hollowbrook"), gone["revision_id"]
    )


def test_annotations_that_cannot_be_meant_are_refused_before_anything_is_stored(
    ctx: AppContext,
) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    with pytest.raises(AnnotationRefused, match="a gate must match its operation"):
        annotations.record_annotation(
            ctx,
            "hollowbrook",
            "approval",
            "operation:cancel_booking",
            {"matches": "GET /rooms"},
            "x",
        )
    with pytest.raises(AnnotationRefused, match="the skill has no operation 'nope'"):
        annotations.record_annotation(
            ctx, "hollowbrook", "note", "operation:nope", {"text": "t"}, "x"
        )
    with pytest.raises(NotFound, match="no active annotation 'missing'"):
        annotations.record_retirement(ctx, "missing", "x")
    assert annotations.list_annotations(ctx, "hollowbrook", include_retired=True) == []


def test_a_flagged_turn_takes_its_examples_down(ctx: AppContext) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    example = {"arguments": {"room_id": "r1"}, "turn": "t-9"}
    added = annotations.record_annotation(
        ctx, "hollowbrook", "example", "operation:check_availability", example, "x"
    )
    assert annotations.retract_turn(ctx, "hollowbrook", "t-other", "x") is None
    retracted = annotations.retract_turn(ctx, "hollowbrook", "t-9", "x")
    assert retracted is not None and retracted.ids == added.ids
    assert annotations.list_annotations(ctx, "hollowbrook") == []


def test_review_confirms_in_order(ctx: AppContext) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    skill = versions.find_skill(ctx, "hollowbrook")
    pending = review.open_suggestions(ctx, skill)
    assert [(p.group, p.operation, p.kind) for p in pending] == [
        ("deletes", "cancel_booking", "approval"),
        ("changes", "create_booking", "approval"),
        ("changes", "create_booking", "identity"),
    ]
    aid = review.confirm(ctx, skill, pending[0], "reviewer")
    assert len(review.open_suggestions(ctx, skill)) == 2
    proposal = propose(ctx, Stored([aid], skill, ctx.clock()), "reviewed")
    files = versions.version_files(
        ctx.blobs, versions.pick_version(ctx, skill, proposal["version_id"])
    )
    assert b'approval: {"matches": "DELETE /bookings/{booking_id}"' in files["cancel_booking.md"]


def test_overlay_and_skill_files_export_what_is_stored(ctx: AppContext, tmp_path: Path) -> None:
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    stored = annotations.record_annotation(
        ctx, "hollowbrook", "skill_note", "skill", {"text": "Dates are ISO."}, "x"
    )
    annotations.record_annotation(
        ctx, "hollowbrook", "identity", "operation:create_booking", {"fields": ["room_id"]}, "x"
    )
    propose(ctx, stored, "added")
    doc = exports.overlay(ctx, "hollowbrook")
    assert doc["actions"] == [
        {"target": "$.info", "update": {"x-skillpress-conventions": ["Dates are ISO."]}},
        {
            "target": "$.paths['/bookings'].post",
            "update": {"x-skillpress-identity": {"fields": ["room_id"]}},
        },
    ]
    publish(ctx, first["version_id"])
    from skillpress.app.serving.calling import skill_files

    files, slug = skill_files("hollowbrook", lambda: ctx)
    assert slug is None and set(files) == set(versions.live_files(ctx, "hollowbrook"))
    write_package_dir(files, tmp_path / "pkg")
    again, folder = skill_files(str(tmp_path / "pkg"))
    assert again == files and folder == "pkg"


def test_a_detached_skill_regenerates_no_more(ctx: AppContext) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    annotations.detach(ctx, "hollowbrook")
    events = submit(ctx, variant(summary="Rooms, all of them"), "two")
    assert last(events, EVENTS.revision_rejected)["reason"].startswith(
        "hollowbrook is detached from its source"
    )
    assert len(versions.list_versions(ctx, "hollowbrook")) == 1


def test_a_scheduled_refresh_proposal_raises_an_action_item(ctx: AppContext) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    blob = ctx.blobs.put(variant(summary="Every room"))
    event = SpecSubmitted(submission="sched", skill="hollowbrook", blob=blob, created_by="schedule")
    proposed = last(bus.run(ctx, EVENTS.spec_submitted, event), EVENTS.version_proposed)
    items = queries.open_actions(ctx)
    assert [(a["kind"], a["version_id"]) for a in items] == [
        ("refresh_proposal", proposed["version_id"])
    ]
    assert f"skillpress publish hollowbrook {proposed['version_id'][:12]}" in items[0]["message"]


def test_refresh_resubmits_url_sources_that_are_due(ctx: AppContext) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    with ctx.records.session() as s:
        source = s.exec(__import__("sqlmodel").select(Source)).one()
        source.kind, source.fetched_from = "url", "https://example.invalid/spec.yaml"
        source.last_checked_at = datetime.now(UTC) - timedelta(days=1)
    steps = bus._steps()[COMMANDS.refresh_sources]
    out = steps[0].run(ctx, RefreshSources())
    assert [(o.subject, o.payload.url) for o in out] == [  # type: ignore[attr-defined]
        (EVENTS.spec_submitted, "https://example.invalid/spec.yaml")
    ]


def test_dead_letters_are_listed_oldest_first(ctx: AppContext) -> None:
    assert queries.dead_letters(ctx) == []
    dead_letter(ctx, msg_id="m")
    dead_letter(ctx, {"skill": "pets", "submission": "sub-9"}, subject="t", error="E: y")
    # each says which skill and submission its message was for, where it names them
    assert [
        (d["worker"], d["error"], d["skill"], d["submission"]) for d in queries.dead_letters(ctx)
    ] == [("w", "E: x", None, None), ("w", "E: y", "pets", "sub-9")]


def test_steps_refuse_permanently_what_no_retry_can_fix(ctx: AppContext) -> None:
    steps = bus._steps()
    with pytest.raises(NotFound, match="no skill 'nope'"):
        steps[COMMANDS.publish_version][0].run(
            ctx, PublishVersion(skill="nope", version_id="x", requested_by="t")
        )
    with pytest.raises(Permanent, match="exactly one of blob or url"):
        steps[EVENTS.spec_submitted][0].run(
            ctx, SpecSubmitted(submission="s", skill="x", created_by="t")
        )


def test_reading_a_spec_file_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x" * 100)
    with pytest.raises(SpecUnreadable, match=r"big.yaml is 100 bytes, over the 10-byte limit"):
        read_spec_file(big, 10)
    with pytest.raises(SpecUnreadable, match="cannot read .*missing.yaml: No such file"):
        read_spec_file(tmp_path / "missing.yaml", 10)
    assert read_spec_file(big, 100) == b"x" * 100


def test_derive_with_model_keeps_the_offline_grouping_when_the_model_fails() -> None:
    data = DISCORD.read_bytes()
    said: list[str] = []

    def unavailable(messages: list[dict[str, str]]) -> str:
        raise ChatFailed("the model did not answer within 1 s")

    package = derive_with_model(data, DeriveOptions(), unavailable, "m", 50_000, said.append)
    assert package.files == derive_package(data).files
    assert said == [
        "--llm: tags failed (no_tags); asking m to group 242 operations…",
        "--llm: tags failed (no_tags); the model did not answer within 1 s; grouped offline by path;"
        " kept the offline grouping",
    ]
    flat: list[str] = []
    derive_with_model(HOLLOWBROOK.read_bytes(), DeriveOptions(), unavailable, "m", 1, flat.append)
    assert flat == ["--llm: the tags work (or the flat manifest fits); no model needed"]


def test_derive_with_model_uses_a_valid_answer() -> None:
    data = DISCORD.read_bytes()
    names = [op.name for op in derive_package(data).manifest.operations]

    def answer(messages: list[dict[str, str]]) -> str:
        listed = [n for n in names if n in messages[-1]["content"]]
        half = len(listed) // 2
        return json.dumps(
            {
                "categories": [
                    {
                        "name": "first_half",
                        "description": "The first half.",
                        "operations": listed[:half],
                    },
                    {
                        "name": "second_half",
                        "description": "The rest.",
                        "operations": listed[half:],
                    },
                ]
            }
        )

    package = derive_with_model(data, DeriveOptions(), answer, "m", 500_000, lambda line: None)
    assert package.manifest.source == "model"
    assert {c.name for c in package.manifest.categories} >= {"first_half", "second_half"}


def test_a_version_the_runtime_would_not_load_is_never_published(ctx: AppContext) -> None:
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    skill = versions.find_skill(ctx, "hollowbrook")
    good = versions.pick_version(ctx, skill, first["version_id"])
    files = versions.version_files(ctx.blobs, good)
    files["get_booking.md"] = files["get_booking.md"].replace(b"method: GET", b"method: FETCH", 1)
    # a version made file by file (as a release before packs made them), one file broken
    keys = dict(zip(files, ctx.blobs.put_many(list(files.values())), strict=True))
    from skillpress.schemas.records import Version

    with ctx.records.session() as s:
        s.add(
            Version(
                id="broken-version-1",
                skill_id=skill.id,
                revision_id=good.revision_id,
                content_hash="broken",
                renderer=good.renderer,
                files_json=json.dumps(keys),
                hosts_json=good.hosts_json,
                diff_json="{}",
                created_at=datetime.now(UTC),
            )
        )
    with pytest.raises(
        versions.PublishRefused,
        match=r"version broken-versi cannot be published: the runtime would not load it"
        r" \(get_booking.md: operation.method: 'FETCH' is not one of",
    ):
        publish_check.check_publish_request(ctx, "hollowbrook", "broken-version-1", False)


def test_a_money_gate_confirmed_in_review_publishes_and_loads(ctx: AppContext) -> None:
    money = money_spec("https://pay.example.test")
    submit(ctx, json.dumps(money).encode(), "pay", slug="pay")
    skill = versions.find_skill(ctx, "pay")
    gate = next(
        p
        for p in review.open_suggestions(ctx, skill)
        if p.group == "money" and p.kind == "approval"
    )
    assert (gate.annotation["amount"], gate.annotation["currency"]) == (
        "amount.value",
        "amount.currency",
    )
    aid = review.confirm(ctx, skill, gate, "reviewer")
    proposal = propose(ctx, Stored([aid], skill, ctx.clock()), "reviewed")
    version_id = publish_check.check_publish_request(ctx, "pay", proposal["version_id"], False)
    from skillpress.runtime.package.skill import load_skill

    loaded = load_skill(
        versions.version_files(ctx.blobs, versions.pick_version(ctx, skill, version_id))
    )
    approval = loaded.tool("create_payment").declaration.approval
    assert approval is not None and (approval.amount, approval.currency) == (
        "amount.value",
        "amount.currency",
    )


def test_a_delete_aimed_by_a_query_parameter_can_be_gated(ctx: AppContext) -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Users", "version": "1"},
        "servers": [{"url": "https://users.example.test"}],
        "paths": {
            "/rest/api/3/user": {
                "delete": {
                    "operationId": "removeUser",
                    "parameters": [
                        {
                            "name": "accountId",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {"204": {"description": "gone"}},
                }
            }
        },
    }
    submit(ctx, json.dumps(spec).encode(), "u", slug="users")
    skill = versions.find_skill(ctx, "users")
    [gate] = [p for p in review.open_suggestions(ctx, skill) if p.kind == "approval"]
    assert gate.confirmable and gate.annotation["binds"] == ["accountId"]
    aid = review.confirm(ctx, skill, gate, "reviewer")
    proposal = propose(ctx, Stored([aid], skill, ctx.clock()), "reviewed")
    publish_check.check_publish_request(ctx, "users", proposal["version_id"], False)


def test_a_required_header_is_an_argument_until_the_operator_fixes_its_value(
    ctx: AppContext,
) -> None:
    from skillpress.runtime.calling.translate import build_request
    from skillpress.runtime.package.skill import load_skill

    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Box", "version": "1"},
        "servers": [{"url": "https://box.example.test"}],
        "paths": {
            "/files/{id}": {
                "get": {
                    "operationId": "getFile",
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "BoxApi",
                            "in": "header",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    events = submit(ctx, json.dumps(spec).encode(), "box", slug="box")
    assert last(events, EVENTS.suggestions_made)["headers"] == 0  # nothing to ask: it is sent
    proposed = last(events, EVENTS.version_proposed)
    skill = versions.find_skill(ctx, "box")
    files = versions.version_files(
        ctx.blobs, versions.pick_version(ctx, skill, proposed["version_id"])
    )
    tool = load_skill(files).tool("get_file")
    assert tool.schema["required"] == ["id", "BoxApi"]
    fixed = annotations.record_annotation(
        ctx,
        "box",
        "fixed",
        "operation:get_file",
        {"name": "BoxApi", "value": "shared_link=x", "in": "header"},
        "op",
    )
    again = propose(ctx, fixed, "added")
    files = versions.version_files(
        ctx.blobs, versions.pick_version(ctx, skill, again["version_id"])
    )
    loaded = load_skill(files)
    tool = loaded.tool("get_file")
    assert tool.schema["required"] == ["id"]  # the operator's value, never the model's
    request = build_request(tool, {"id": "f1"}, loaded.hosts)
    assert dict(request.headers) == {"BoxApi": "shared_link=x"}


def test_identical_bytes_whose_revision_never_made_a_version_go_through_again(
    ctx: AppContext,
) -> None:
    from skillpress.workers import fetch

    data = HOLLOWBROOK.read_bytes()
    blob = ctx.blobs.put(data)
    # the first submission stored its revision, then its messages were lost (dead-lettered)
    fetch.fetch(
        ctx, SpecSubmitted(submission="lost", skill="hollowbrook", blob=blob, created_by="t")
    )
    # while it is still on its way, the same bytes again end at once, unchanged, naming its
    # revision (ten identical submissions at once stranded three: #43.4)
    while_on_its_way = submit(ctx, data, "meanwhile")
    assert [s for s, _ in while_on_its_way] == [EVENTS.spec_submitted, EVENTS.revision_unchanged]
    from skillpress.app.records.dead_letters import dead_letter
    from skillpress.app.records.overview import submission_status

    waiting = submission_status(ctx, "meanwhile")["stages"]
    assert [st["stage"] for st in waiting] == ["unchanged"] and "version_id" not in waiting[0]
    dead_letter(
        ctx,
        EVENTS.revision_stored,
        "parse",
        "stored:x:lost",
        "boom",
        json.dumps({"submission": "lost", "skill": "hollowbrook"}),
    )
    again = submit(ctx, data, "again")
    assert EVENTS.revision_unchanged not in [s for s, _ in again]
    made = last(again, EVENTS.version_proposed)
    # once it made a version, the same bytes are unchanged
    third = submit(ctx, data, "third")
    assert last(third, EVENTS.revision_unchanged)["revision_id"] == made["revision_id"]
    # and the one that ended while it was on its way now names the version it matched
    ended = submission_status(ctx, "meanwhile")["stages"][0]
    assert (ended["stage"], ended.get("version_id")) == ("unchanged", made["version_id"])


def test_a_submissions_ending_is_found_in_the_store_when_its_event_was_missed(
    ctx: AppContext,
) -> None:
    from skillpress.app.operator.submissions import stored_outcome

    events = submit(ctx, HOLLOWBROOK.read_bytes(), "s1")
    proposed = last(events, EVENTS.version_proposed)
    subject, body = _pair(stored_outcome(ctx, "hollowbrook", "s1"))
    assert subject == EVENTS.version_proposed
    assert (body["version_id"], body["revision_id"], body["submission"]) == (
        proposed["version_id"],
        proposed["revision_id"],
        "s1",
    )
    submit(ctx, b"openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n", "s2")
    subject, body = _pair(stored_outcome(ctx, "hollowbrook", "s2"))
    assert subject == EVENTS.revision_rejected and "no operations" in body["reason"]
    assert stored_outcome(ctx, "hollowbrook", "never") is None


def test_revisions_and_a_submissions_stages_are_read_from_the_records(ctx: AppContext) -> None:
    made = last(submit(ctx, HOLLOWBROOK.read_bytes(), "ok"), EVENTS.version_proposed)
    submit(ctx, b"openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n", "bad")
    rows = queries.revisions(ctx, "hollowbrook")
    assert [(r["submission"], r["status"]) for r in rows] == [("bad", "refused"), ("ok", "parsed")]
    assert rows[1]["versions"] == [made["version_id"]] and rows[1]["operations"] == 5
    assert "no operations" in rows[0]["refusal_reason"]
    ok = queries.submission_status(ctx, "ok")
    assert [s["stage"] for s in ok["stages"]] == ["fetched", "parsed", "categorized", "proposed"]
    assert ok["stages"][-1]["version_id"] == made["version_id"]
    assert [s["stage"] for s in queries.submission_status(ctx, "bad")["stages"]] == [
        "fetched",
        "refused",
    ]
    with pytest.raises(NotFound, match="no stage has recorded submission 'nope'"):
        queries.submission_status(ctx, "nope")
    with pytest.raises(NotFound):
        queries.revisions(ctx, "nothing")


def test_every_submission_has_a_status_that_ends_and_a_refusal_leaves_nothing(
    ctx: AppContext,
) -> None:
    from skillpress.app.operator.submissions import stored_outcome

    # a URL the fetch guard refuses: refused, with why, and no skill made or changed
    url = SpecSubmitted(
        submission="u1", skill="ghost", url="http://127.0.0.1:9/spec.json", created_by="t"
    )
    rejected = last(bus.run(ctx, EVENTS.spec_submitted, url), EVENTS.revision_rejected)
    assert "loopback address" in rejected["reason"]
    status = queries.submission_status(ctx, "u1")
    assert [(st["stage"], st.get("reason")) for st in status["stages"]] == [
        ("refused", rejected["reason"])
    ]
    subject, body = _pair(stored_outcome(ctx, "ghost", "u1"))
    assert subject == EVENTS.revision_rejected and body["reason"] == rejected["reason"]
    assert [k["slug"] for k in queries.skills_overview(ctx)] == []
    with ctx.records.session() as s:
        assert s.exec(select(Source)).all() == []
    # the same bytes again: unchanged, ending at the version they made
    made = last(submit(ctx, HOLLOWBROOK.read_bytes(), "first"), EVENTS.version_proposed)
    last(submit(ctx, HOLLOWBROOK.read_bytes(), "again"), EVENTS.revision_unchanged)
    again = queries.submission_status(ctx, "again")
    assert [(st["stage"], st.get("version_id")) for st in again["stages"]] == [
        ("unchanged", made["version_id"])
    ]
    subject, body = _pair(stored_outcome(ctx, "hollowbrook", "again"))
    assert (subject, body["version_id"], body["created"]) == (
        EVENTS.version_proposed,
        made["version_id"],
        False,
    )
    # refused bytes sent again are refused again, saying why (not "unchanged")
    empty = b"openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n"
    first = last(submit(ctx, empty, "bad1", "empty"), EVENTS.revision_rejected)
    events = submit(ctx, empty, "bad2", "empty")
    assert EVENTS.revision_unchanged not in [subj for subj, _ in events]
    assert last(events, EVENTS.revision_rejected)["reason"] == first["reason"]
    assert queries.submission_status(ctx, "bad2")["stages"][0]["stage"] == "refused"
    assert "empty" not in [k["slug"] for k in queries.skills_overview(ctx)]


def test_an_approval_lets_exactly_its_call_through_once(ctx: AppContext) -> None:
    from skillpress.app.records import approval_requests as approvals
    from skillpress.runtime.calling.gates import GateCheck, GrantSpent

    bound = {"booking_id": "bk-1"}
    asked = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", bound, "agent")
    assert asked.id is not None
    assert (
        approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", bound, "agent").id == asked.id
    )
    other = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", {"booking_id": "bk-2"}, "a")
    assert approvals.consume(ctx, asked.id).status == "pending"
    approvals.decide(ctx, asked.id, True, "ops")
    with pytest.raises(Refused, match="is granted already"):
        approvals.decide(ctx, asked.id, False, "ops")
    assert approvals.consume(ctx, asked.id).status == "used"
    assert other.id is not None and approvals.consume(ctx, other.id).status == "pending"
    approvals.decide(ctx, other.id, False, "ops")
    with pytest.raises(GrantSpent, match=f"approval #{asked.id} was used by another call"):
        approvals.consume(ctx, asked.id)  # spent: never `used` twice
    gate = GateCheck("create_payment", "high", {"amount": 5}, True, 5)
    auto = approvals.settle(ctx, "pay", gate, "agent")
    rows = approvals.list_requests(ctx, everything=True)
    assert [(r["id"], r["status"], r["requested_by"], r["decided_by"]) for r in rows] == [
        (asked.id, "used", "agent", "ops"),
        (other.id, "denied", "a", "ops"),
        (auto.id, "auto", "agent", "its gate (auto_below)"),
    ]
    assert approvals.list_requests(ctx) == []
    with pytest.raises(NotFound, match="no approval request #99"):
        approvals.decide(ctx, 99, True, "ops")


def test_the_live_catalog_serves_each_published_skill_and_says_which_changed(
    ctx: AppContext,
) -> None:
    from skillpress.app.serving.catalog import live_catalog

    catalog = live_catalog(ctx)
    assert catalog.current() == {}
    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    publish(ctx, first["version_id"])
    now = catalog.current()
    assert list(now) == ["hollowbrook"] and now["hollowbrook"][2] == first["version_id"][:12]
    assert catalog.changed() is None
    renamed = last(
        submit(ctx, variant(summary="Bookings, renamed."), "two"), EVENTS.version_proposed
    )
    assert catalog.changed() is None  # proposed is not live
    publish(ctx, renamed["version_id"])
    changed = catalog.changed()
    assert changed is not None and changed["hollowbrook"][2] == renamed["version_id"][:12]
    assert catalog.changed() is None
    overview = queries.skills_overview(ctx)  # the same records the console lists
    assert [(o["slug"], o["live_version_id"], o["proposals"]) for o in overview] == [
        ("hollowbrook", renamed["version_id"], 0)
    ]


WORKFLOW = """
workflows:
  - name: book_room
    execution: draft
    procedure: Check the room, then book it.
    parameters:
      type: object
      properties:
        room_id: {type: string}
        guest_name: {type: string}
        arrival: {type: string}
        departure: {type: string}
      required: [room_id, guest_name, arrival, departure]
    steps:
      - id: check
        tool: check_availability
        args: {room_id: "{{room_id}}", arrival: "{{arrival}}", departure: "{{departure}}"}
        save_as: availability
      - id: if_free
        if: availability.available
        then:
          - id: book
            tool: create_booking
            args: {room_id: "{{room_id}}", guest_name: "{{guest_name}}", arrival: "{{arrival}}", departure: "{{departure}}"}
            save_as: booking
          - return: {total: "{{booking.total_pence}}"}
"""


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
def test_workflows_ride_as_annotations_and_promotion_proposes_a_version(
    ctx: AppContext,
) -> None:
    import subprocess
    import sys

    from skillpress.app.operator.skill_workflows import add_workflows, promote_workflow
    from skillpress.derive.annotations import AnnotationRefused
    from skillpress.runtime.package.skill import load_skill
    from skillpress.runtime.workflows.load import load_workflows

    first = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)
    publish(ctx, first["version_id"])
    added = add_workflows(ctx, "hollowbrook", WORKFLOW.encode(), "ops")
    drafted = propose(ctx, added, "added")
    files = versions.version_files(
        ctx.blobs,
        versions.pick_version(ctx, versions.find_skill(ctx, "hollowbrook"), drafted["version_id"]),
    )
    flows = load_workflows(files, load_skill(files))
    assert flows["book_room"].execution == "draft"
    with pytest.raises(Refused, match="already: promote it"):
        add_workflows(ctx, "hollowbrook", WORKFLOW.encode(), "ops")
    with pytest.raises(Refused, match="names the operation the model calls: give --tool"):
        promote_workflow(ctx, "hollowbrook", "book_room", "guided", "ops")
    with pytest.raises(Refused, match="--tool names a guided workflow's operation"):
        promote_workflow(ctx, "hollowbrook", "book_room", "hardened", "ops", "create_booking")
    with pytest.raises(AnnotationRefused, match="tool 'make_booking' is not an operation"):
        promote_workflow(ctx, "hollowbrook", "book_room", "guided", "ops", "make_booking")
    guided = promote_workflow(ctx, "hollowbrook", "book_room", "guided", "ops", "create_booking")
    proposed = propose(ctx, guided, "promoted")
    files = versions.version_files(
        ctx.blobs,
        versions.pick_version(ctx, versions.find_skill(ctx, "hollowbrook"), proposed["version_id"]),
    )
    flow = load_workflows(files, load_skill(files))["book_room"]
    assert (flow.execution, flow.tool) == ("guided", "create_booking")
    promoted = promote_workflow(ctx, "hollowbrook", "book_room", "hardened", "ops")
    hardened = propose(ctx, promoted, "promoted")
    publish(ctx, hardened["version_id"], remove_gates=True)
    live = versions.live_files(ctx, "hollowbrook")
    assert load_workflows(live, load_skill(live))["book_room"].execution == "hardened"
    # a regenerated version (a new spec revision) keeps the workflow
    again = last(submit(ctx, variant(summary="Rooms, listed."), "two"), EVENTS.version_proposed)
    regenerated = versions.version_files(
        ctx.blobs,
        versions.pick_version(ctx, versions.find_skill(ctx, "hollowbrook"), again["version_id"]),
    )
    assert b"execution: hardened" in regenerated["workflows.yaml"]

    # the published skill's own workflow runs by name, unsandboxed: the operator published it
    dry = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "run",
            "--skill",
            "hollowbrook",
            '/run book_room {"room_id": "oak", "guest_name": "Ada", "arrival": "2026-12-24", "departure": "2026-12-27"}',
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in __import__("os").environ.items() if not k.startswith("SKILLPRESS_")}
        | {"SKILLPRESS_HOME": str(ctx.settings.home)},
    )
    assert dry.returncode == 0, dry.stderr
    assert [ln for ln in dry.stdout.splitlines() if ln.startswith("# step")] == [
        "# step check: check_availability",
        "# step book: create_booking",
    ]

    broken = WORKFLOW.replace("book_room", "bad_room").replace(
        'arrival: "{{arrival}}", departure', "arrival: 5, departure", 1
    )
    # a step's literal argument outside its operation's schema is refused as the workflow is
    # added (before, only a promotion's dry run found it)
    with pytest.raises(
        AnnotationRefused, match=r"bad_room step check: arrival=5: 5 is not of type 'string'"
    ):
        add_workflows(ctx, "hollowbrook", broken.encode(), "ops")


def test_a_decision_survives_every_re_import_and_confirming_twice_adds_nothing(
    ctx: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    skill = versions.find_skill(ctx, "hollowbrook")
    first = {(p.operation, p.kind): p for p in review.open_suggestions(ctx, skill)}
    # a group is one derivation however many it holds
    import skillpress.app.operator.annotations as app_annotations

    derived: list[int] = []
    real = app_annotations.derive_revision

    def counting(*args: Any, **kwargs: Any) -> Any:
        derived.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(app_annotations, "derive_revision", counting)
    # ... and one write: its annotations and its suggestions' decisions together (#59.3:
    # GitHub's 195 deletes were 390 transactions)
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    writing: set[int] = set()
    writes: list[int] = []  # the transactions that wrote something, each counted at its commit

    def flushed(session: Any, flush_context: Any, instances: Any) -> None:
        writing.add(id(session))

    def committed(session: Any) -> None:
        if id(session) in writing:
            writing.discard(id(session))
            writes.append(1)

    event.listen(Session, "before_flush", flushed)
    event.listen(Session, "after_commit", committed)
    try:
        done = review.confirm_suggestions(
            ctx,
            skill,
            ids=[first[("create_booking", "approval")].id],
            groups=["deletes"],
            by="reviewer",
        )
    finally:
        event.remove(Session, "before_flush", flushed)
        event.remove(Session, "after_commit", committed)
    assert len(done.annotation_ids) == 2 and done.skipped == [] and len(derived) == 1
    assert writes == [1]  # two annotations stored, two suggestions decided: one transaction
    dismissed = review.dismiss_suggestions(
        ctx, skill, ids=[first[("create_booking", "identity")].id], by="reviewer"
    )
    assert dismissed == 1
    gates = [a["id"] for a in annotations.list_annotations(ctx, "hollowbrook")]
    # a re-import (a new revision: new suggestions) keeps every decision
    submit(ctx, variant(summary="Every room, with its nightly price."), "two")
    assert review.open_suggestions(ctx, skill) == []
    # the same suggestion confirmed again (an old page's button) adds no second gate
    twice = review.confirm(ctx, skill, first[("cancel_booking", "approval")], "reviewer")
    assert twice in done.annotation_ids
    assert [a["id"] for a in annotations.list_annotations(ctx, "hollowbrook")] == gates


def test_a_base_url_that_is_not_an_http_address_is_refused_before_anything_is_stored(
    ctx: AppContext,
) -> None:
    from skillpress.app.operator.intake import spec_submitted
    from skillpress.app.operator.preview import preview_spec

    for bad in ("javascript:alert(1)", "file:///etc/passwd", "https://u:p@api.test", "/api/v1"):
        with pytest.raises(Refused, match="base URL"):
            preview_spec(HOLLOWBROOK.read_bytes(), base_url=bad)
        with pytest.raises(Refused, match="base URL"):
            spec_submitted(ctx, "x", HOLLOWBROOK.read_bytes(), None, bad, "t", "s1")
    assert preview_spec(HOLLOWBROOK.read_bytes(), base_url="https://api.test/v1").base_url == (
        "https://api.test/v1"
    )


def test_the_credential_variable_chosen_at_import_is_kept_and_read_by_every_runtime(
    ctx: AppContext, tmp_path: Path
) -> None:
    from skillpress.app.operator.intake import spec_submitted
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.credential import credential_env
    from skillpress.runtime.package.skill import load_skill

    event = spec_submitted(
        ctx, "hollowbrook", HOLLOWBROOK.read_bytes(), None, None, "t", "env1", "HOLLOWBROOK_TOKEN"
    )
    made = last(bus.run(ctx, EVENTS.spec_submitted, event), EVENTS.version_proposed)
    files = versions.version_files(
        ctx.blobs, versions.pick_version(ctx, versions.find_skill(ctx, "hollowbrook"), None)
    )
    assert json.loads(files["skill.json"])["auth"]["env"] == "HOLLOWBROOK_TOKEN"
    skill = load_skill(files)
    assert skill.auth is not None and skill.auth.env == "HOLLOWBROOK_TOKEN"
    assert credential_env(skill.slug, skill.auth) == "HOLLOWBROOK_TOKEN"
    assert credential_env(skill.slug, skill.auth, "GIVEN") == "GIVEN"  # a caller's own wins
    # a re-derivation (an annotation's proposal) keeps it: it lives with the source
    again = propose(ctx, note(ctx, "list_rooms", "kept"), "added")
    assert again["version_id"] != made["version_id"]
    newer = versions.version_files(
        ctx.blobs,
        versions.pick_version(ctx, versions.find_skill(ctx, "hollowbrook"), again["version_id"]),
    )
    assert json.loads(newer["skill.json"])["auth"]["env"] == "HOLLOWBROOK_TOKEN"
    # the host reads it from the folder, as it reads the header: the key goes out from HOLLOWBROOK_TOKEN
    write_package_dir(dict(newer), tmp_path / "skills" / "hollowbrook")
    with fake_api(lambda r: Reply(200, [])) as api:
        host = SkillHost(tmp_path / "skills", base_urls={"hollowbrook": api.url})
        done = host.call(
            "hollowbrook_list_rooms",
            {},
            environ={"HOLLOWBROOK_TOKEN": "k-1", "HOLLOWBROOK_API_KEY": "no"},
        )
    assert done.status == 200
    assert [r.header("X-Hollowbrook-Key") for r in api.seen] == ["k-1"]
    # the default is no choice: not recorded; a name that is not a variable's is refused
    plain = spec_submitted(ctx, "other", b"x", None, None, "t", "env2", "OTHER_API_KEY")
    assert plain.credential_env is None
    with pytest.raises(Refused, match="'hb-token' is not an environment variable name"):
        spec_submitted(ctx, "other", b"x", None, None, "t", "env3", "hb-token")
    # a skill's credential is read from a variable of its own, never another's or skillpress's
    with pytest.raises(Refused, match=r"HB_TOKEN is not hollowbrook's own: .*HOLLOWBROOK_…"):
        spec_submitted(ctx, "hollowbrook", b"x", None, None, "t", "env4", "HB_TOKEN")
    with pytest.raises(Refused, match="SKILLPRESS_OPERATOR_TOKEN is one of skillpress's own"):
        spec_submitted(
            ctx, "hollowbrook", b"x", None, None, "t", "env5", "SKILLPRESS_OPERATOR_TOKEN"
        )


def test_a_slug_in_use_says_whose_it_is_and_what_an_import_would_remove(ctx: AppContext) -> None:
    from skillpress.app.operator.intake import slug_in_use

    assert slug_in_use(ctx, "hollowbrook", ("list_rooms",)) is None
    submit(ctx, HOLLOWBROOK.read_bytes(), "first")
    note(ctx, "cancel_booking", "only on request")
    used = slug_in_use(ctx, "hollowbrook", ("list_rooms", "check_availability", "refund"))
    assert used is not None
    assert (used.title, used.source, used.live_version_id, used.operations) == (
        "Hollowbrook Guesthouse",
        "an uploaded file",
        None,
        5,
    )
    assert used.removed == ["cancel_booking", "create_booking", "get_booking"]
    assert (used.removed_count, used.added_count, used.annotations, used.orphaned) == (3, 1, 1, 1)


def test_a_submission_a_dead_letter_stopped_says_so_and_how_to_go_on(ctx: AppContext) -> None:
    from skillpress.app.operator.submissions import DeadLettered, dead_lettered

    dead_lettered(ctx, "sub-1")  # nothing stopped it: no word
    dead_letter(
        ctx,
        {"submission": "sub-1", "skill": "x"},
        subject=EVENTS.spec_submitted,
        worker="fetch",
        msg_id="submitted:sub-1",
        error="FetchFailed: http://x/spec answered 503 (after 5 deliveries)\ntrace…",
    )
    with pytest.raises(DeadLettered) as stopped:
        dead_lettered(ctx, "sub-1")
    assert str(stopped.value) == (
        "stopped at fetch: dead letter #1 (skillpress.spec.submitted): FetchFailed: http://x/spec"
        " answered 503 (after 5 deliveries); once that is fixed: skillpress dead-letters --replay 1"
    )
    dead_lettered(ctx, "sub-2")  # another submission's letter is not this one's
    with ctx.records.session() as s:
        letter = s.get(DeadLetter, 1)
        assert letter is not None
        letter.replayed_at = ctx.clock()
    dead_lettered(ctx, "sub-1")  # replayed: the story goes on


@pytest.mark.parametrize("slug", ["airflow-v1", "petstore", "a1-b2-c3"])
def test_a_slug_that_is_one_is_taken_as_it_is(slug: str) -> None:
    from skillpress.app.operator.intake import check_slug

    assert check_slug(slug, named="--skill") == slug


@pytest.mark.parametrize(
    ("given", "tried"), [("Airflow", "airflow"), ("a--b", "a-b"), ("-x", "x"), ("pets_v2", "pets")]
)
def test_a_slug_that_is_not_one_is_refused_with_the_one_it_could_be(given: str, tried: str) -> None:
    from skillpress.app.operator.intake import check_slug

    with pytest.raises(Refused) as refused:
        check_slug(given, named="--skill")
    assert str(refused.value) == (
        f"--skill {given!r} is not a slug: lowercase letters and digits, words joined by single '-',"
        f" at most 64 characters (try {tried!r})"
    )


def test_a_submissions_status_is_its_own_stages_and_says_a_replayed_letter_was_replayed(
    ctx: AppContext,
) -> None:
    made = last(submit(ctx, HOLLOWBROOK.read_bytes(), "mine"), EVENTS.version_proposed)
    later = propose(ctx, note(ctx, "list_rooms", "later"), "added")
    assert later["version_id"] != made["version_id"]
    status = queries.submission_status(ctx, "mine")
    proposed = [st["version_id"] for st in status["stages"] if st["stage"] == "proposed"]
    assert proposed == [made["version_id"]]  # the annotation's proposal is not this one's stage
    dead_letter(
        ctx,
        {"submission": "mine"},
        subject=EVENTS.revision_parsed,
        worker="categorize",
        error="E: once",
        replayed_at=ctx.clock(),
        replayed_as="replay:1:x",
    )
    (letter,) = queries.submission_status(ctx, "mine")["dead_letters"]
    assert letter["replayed_at"] is not None and letter["error"] == "E: once"


def test_a_request_no_one_decides_expires_and_the_next_call_asks_anew(ctx: AppContext) -> None:
    from datetime import UTC, datetime, timedelta

    from skillpress.app.records import approval_requests as approvals

    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    now = [start]
    ctx.clock = lambda: now[0]
    hour = timedelta(seconds=ctx.settings.approval_expiry)
    bound = {"booking_id": "bk-1", "note": "<img src=x>"}
    asked = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", bound, "alice")
    assert asked.id is not None
    [listed] = approvals.list_requests(ctx)
    assert listed["expires_at"] == (start + hour).isoformat()
    assert listed["bound"] == bound and listed["requested_by"] == "alice"
    now[0] = start + hour  # its caller stopped waiting long ago: no one can grant it now
    assert approvals.list_requests(ctx) == []
    with pytest.raises(Refused, match=rf"#{asked.id} expired: no one decided it within 1 h"):
        approvals.decide(ctx, asked.id, True, "ops")
    [gone] = approvals.decided_requests(ctx)
    assert (gone["id"], gone["status"], gone["decided_by"]) == (asked.id, "expired", None)
    assert gone["decided_at"] == (start + hour).isoformat() and gone["expires_at"] is None
    again = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", bound, "alice")
    assert again.id != asked.id and again.status == "pending"
    # a grant no call used in as long no longer lets one through
    assert again.id is not None
    approvals.decide(ctx, again.id, True, "ops")
    now[0] += hour
    assert approvals.consume(ctx, again.id).status == "expired"
    newest = approvals.ask(ctx, "hollowbrook", "cancel_booking", "high", bound, "alice")
    assert newest.id not in (asked.id, again.id) and newest.status == "pending"


def test_a_slug_in_use_says_which_calls_an_import_would_change(ctx: AppContext) -> None:
    # #43.9: the warning said "261 added, 13 removed" and not that 14 change
    from skillpress.app.operator.intake import preview

    submit(ctx, HOLLOWBROOK.read_bytes(), "first")
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    # one call changes: the rooms list takes a new query parameter
    rooms = doc["paths"]["/rooms"]["get"]
    rooms.setdefault("parameters", []).append(
        {"name": "floor", "in": "query", "schema": {"type": "integer"}}
    )
    shown = preview(ctx, yaml.safe_dump(doc, sort_keys=False).encode(), None, "hollowbrook", None)
    assert shown.in_use is not None
    assert (shown.in_use.added_count, shown.in_use.removed_count, shown.in_use.changed_count) == (
        0,
        0,
        1,
    )
    same = preview(ctx, HOLLOWBROOK.read_bytes(), None, "hollowbrook", None)
    assert same.in_use is not None and same.in_use.changed_count == 0


def test_a_diff_names_what_publishing_puts_live_though_no_call_changes(ctx: AppContext) -> None:
    # #43.1: a note carried into a proposal went live while the diff said "0 added, 0 removed,
    # 0 changed": an operation whose file changes but not its call is named as described anew
    made = last(submit(ctx, HOLLOWBROOK.read_bytes(), "first"), EVENTS.version_proposed)
    publish(ctx, made["version_id"])
    proposed = propose(ctx, note(ctx, "cancel_booking", "Only before noon."), "added")
    diff = versions.diff_versions(ctx, "hollowbrook", None, proposed["version_id"])
    assert (diff["added"], diff["removed"], diff["changed"]) == ([], [], [])
    assert diff["described"] == ["cancel_booking"]
    assert diff["summary"]["described"] == 1
    assert "skill.json" not in diff.get("other_files", [])


def test_a_diff_says_which_proposal_each_change_came_from(ctx: AppContext) -> None:
    # #43.1: a note proposed but not published rode into the next revision's proposal, and
    # publishing that put it live: the diff names each change's proposal, and why it was made
    made = last(submit(ctx, HOLLOWBROOK.read_bytes(), "first"), EVENTS.version_proposed)
    publish(ctx, made["version_id"])
    noted = propose(ctx, note(ctx, "cancel_booking", "Only before noon."), "added")
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    doc["paths"]["/rooms"]["get"].setdefault("parameters", []).append(
        {"name": "floor", "in": "query", "schema": {"type": "integer"}}
    )
    second = yaml.safe_dump(doc, sort_keys=False).encode()
    revised = last(submit(ctx, second, "second"), EVENTS.version_proposed)
    diff = versions.diff_versions(ctx, "hollowbrook", None, revised["version_id"])
    assert [c["operation"] for c in diff["changed"]] == ["list_rooms"]
    assert diff["described"] == ["cancel_booking"]
    assert diff["came_from"] == {
        "cancel_booking": noted["version_id"],
        "list_rooms": revised["version_id"],
    }
    [first, then] = diff["proposals"]
    assert (first["version_id"], first["because"]) == (
        noted["version_id"],
        "note added to cancel_booking by t",
    )
    assert then["version_id"] == revised["version_id"]
    assert then["because"] == f"a new revision of the spec ({revised['revision_id'][:12]})"
    # against the proposal itself, nothing came from elsewhere
    own = versions.diff_versions(ctx, "hollowbrook", noted["version_id"], revised["version_id"])
    assert own["came_from"] == {"list_rooms": revised["version_id"]}
    assert [p["version_id"] for p in own["proposals"]] == [revised["version_id"]]


def test_workflows_added_to_a_published_skill_refuse_a_key_given_twice(ctx: AppContext) -> None:
    from skillpress.app.operator.skill_workflows import add_workflows

    text = b"workflows:\n  - name: flow\n    description: one\n    description: two\n"
    with pytest.raises(Refused) as refused:
        add_workflows(ctx, "hollowbrook", text, "ops")
    assert str(refused.value) == (
        "not a workflows.yaml: duplicate key 'description' at lines 3 and 4: a document with"
        " duplicate keys is ambiguous; remove one"
    )


@pytest.mark.parametrize("slug", ["1password", "1-0-0", "2fa", "hollowbrook"])
def test_what_the_chain_proposes_for_any_slug_the_intake_accepts_publish_accepts(
    ctx: AppContext, slug: str
) -> None:
    """A slug may start with a digit (`1password`, a file named `1.0.0.json`); no environment
    variable's name may: the credential variables made from it still are names (#54.4)."""
    from skillpress.app.operator.intake import check_slug
    from skillpress.runtime.calling.credential import credential_env
    from skillpress.runtime.package.skill import load_skill

    assert check_slug(slug) == slug  # the intake accepts it as written
    doc = yaml.safe_load(HOLLOWBROOK.read_text())  # a key and a token sent beside it
    doc["components"]["securitySchemes"]["appToken"] = {
        "type": "apiKey",
        "in": "header",
        "name": "X-App-Token",
    }
    doc["security"] = [{"apiKey": [], "appToken": []}]
    data = yaml.safe_dump(doc).encode()
    proposal = last(submit(ctx, data, slug, slug=slug), EVENTS.version_proposed)
    version_id = publish_check.check_publish_request(ctx, slug, proposal["version_id"], False)
    skill = versions.find_skill(ctx, slug)
    files = versions.version_files(ctx.blobs, versions.pick_version(ctx, skill, version_id))
    loaded = load_skill(files)
    assert loaded.auth is not None
    base = {"1password": "API_1PASSWORD", "1-0-0": "API_1_0_0", "2fa": "API_2FA"}.get(
        slug, slug.upper()
    )
    assert credential_env(slug, loaded.auth) == f"{base}_API_KEY"
    assert [c.env for c in loaded.auth.also] == [f"{base}_APP_TOKEN"]


def test_a_money_guess_that_is_unsure_says_so_in_the_review(ctx: AppContext) -> None:
    """#55.1: the review shows why it guessed a money gate and what to check before confirming:
    Adyen's post_payments reads amount.value, and also sends additionalAmount.value."""
    spec = Path(__file__).parents[1] / "fixtures" / "specs" / "adyen-checkout-v70.json"
    submit(ctx, spec.read_bytes(), "adyen", slug="checkout")
    pending = review.open_suggestions(ctx, versions.find_skill(ctx, "checkout"))
    payment = next(p for p in pending if p.operation == "post_payments" and p.kind == "approval")
    assert payment.annotation["amount"] == "amount.value"
    assert payment.annotation["currency"] == "amount.currency"
    assert payment.why == (
        "named for money (payments); unsure: it also sends additionalAmount.value: check that"
        " amount.value is the payment's own"
    )


def test_the_preview_counts_changed_calls_as_the_proposal_will(ctx: AppContext) -> None:
    """#55.7: the import preview compared the spec derived bare with the newest version, which
    carries the skill's annotations, so every note and gate counted as a changed call (206
    where the proposal then said 14). It derives the spec with the annotations in force: the
    same spec again changes no call, and a changed one counts what its proposal counts."""
    from skillpress.app.operator import intake

    submit(ctx, HOLLOWBROOK.read_bytes(), "one")
    skill = versions.find_skill(ctx, "hollowbrook")
    gate = {"matches": "DELETE /bookings/{booking_id}", "risk": "high"}
    change = [("approval", "operation:cancel_booking", gate)]
    gated = annotations.store_checked(ctx, skill, lambda: (change, []), "t")
    propose(ctx, gated, "added")  # a gate: the declaration moves
    propose(ctx, note(ctx, "list_rooms", "Rooms are listed cheapest first."), "added")
    same = intake.preview(ctx, HOLLOWBROOK.read_bytes(), None, "hollowbrook", None)
    assert same.in_use is not None and same.in_use.changed_count == 0
    renamed = variant(summary="Every room, with its price tonight.")
    again = intake.preview(ctx, renamed, None, "hollowbrook", None)
    assert again.in_use is not None and again.in_use.changed_count == 0  # described anew only


def test_each_publish_request_is_answered_under_its_own_message_id(ctx: AppContext) -> None:
    """JetStream drops a message whose id it saw in the last two minutes: an answer named only by
    the publication was taken for the first answer's duplicate when the same version was asked
    for again, and the asker waited out its timeout (stop 64's CI). A redelivered request is
    still the same request: the same ids, deduplicated."""
    from skillpress.workers.publish import publish as publish_step

    version = last(submit(ctx, HOLLOWBROOK.read_bytes(), "one"), EVENTS.version_proposed)

    def ask(request: str) -> list[tuple[str, bool]]:
        command = PublishVersion(
            skill="hollowbrook",
            version_id=version["version_id"],
            requested_by="t",
            request=request,
        )
        return [
            (out.msg_id, bool(getattr(out.payload, "already_live", False)))
            for out in publish_step(ctx, command)
        ]

    first, second, redelivered = ask("a"), ask("b"), ask("b")
    assert [live for _, live in first] == [False, False]
    assert [live for _, live in second] == [False, True]  # the pointer's message, the answer
    assert not {m for m, _ in first} & {m for m, _ in second}
    assert redelivered == second
