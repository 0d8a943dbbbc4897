"""Annotations through the pipeline on real servers, driven from the command line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.context import AppContext
from skillpress.platform.settings import Settings
from skillpress.schemas.events import SpecSubmitted
from skillpress.schemas.subjects import EVENTS
from tests.workers.conftest import settings_env, submit, watching, workers

pytestmark = pytest.mark.integration  # starts real servers

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"


async def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process, while this test's event loop keeps the workers running."""
    env = settings_env(settings)
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "skillpress.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


async def import_spec(
    ctx: AppContext, nc: Any, watcher: Any, data: bytes, name: str
) -> dict[str, Any]:
    blob = ctx.blobs.put(data)
    await submit(
        nc,
        SpecSubmitted(submission=name, skill="hollowbrook", blob=blob, created_by="test"),
        f"submitted:{name}",
    )
    return await watcher.wait_for(EVENTS.version_proposed, submission=name)


def spec_variant(
    reorder: bool = False, summary: str | None = None, rename: str | None = None
) -> bytes:
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    if reorder:
        doc["paths"] = dict(reversed(list(doc["paths"].items())))
    if summary:
        doc["paths"]["/rooms"]["get"]["summary"] = summary
    if rename:
        doc["paths"]["/bookings"]["post"]["operationId"] = rename
    return yaml.safe_dump(doc, sort_keys=False).encode()


async def test_a_note_survives_revisions_and_comes_back_after_a_rename_by_rekeying(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await import_spec(ctx, nc, watcher, HOLLOWBROOK.read_bytes(), "v1")
        added = await cli(
            settings,
            "annotate",
            "hollowbrook",
            "-o",
            "create_booking",
            "--note",
            "Check availability first.",
            "--json",
        )
        assert added.returncode == 0, added.stderr
        note_id = json.loads(added.stdout)["annotation_id"]
        # The spec is reordered and another operation changes: the note stays on create_booking.
        v2 = await import_spec(
            ctx,
            nc,
            watcher,
            spec_variant(reorder=True, summary="Every room and its nightly price."),
            "v2",
        )
        shown = await cli(
            settings, "show", "hollowbrook", "create_booking.md", "--version", v2["version_id"]
        )
        assert "## Notes\n\nCheck availability first.\n" in shown.stdout
        listed = json.loads((await cli(settings, "annotations", "hollowbrook", "--json")).stdout)
        assert [(a["id"], a["status"]) for a in listed] == [(note_id, "applied")]
        # createBooking is renamed makeBooking (same method and path): the note is orphaned, re-keying offered.
        v3 = await import_spec(ctx, nc, watcher, spec_variant(rename="makeBooking"), "v3")
        assert v3["summary"]["orphaned"] == 1
        diff = await cli(settings, "diff", "hollowbrook", "--json")
        assert json.loads(diff.stdout)["orphaned"] == [
            {
                "id": note_id,
                "kind": "note",
                "operation": "create_booking",
                "rekey_to": "make_booking",
            }
        ]
        text = (await cli(settings, "diff", "hollowbrook")).stdout
        assert (
            f"! annotation {note_id} (note) is orphaned: create_booking is gone; its method and path are now make_booking: skillpress rekey {note_id} make_booking"
            in text
        )
        assert (
            json.loads((await cli(settings, "annotations", "hollowbrook", "--json")).stdout)[0][
                "status"
            ]
            == "orphaned"
        )
        rekeyed = await cli(settings, "rekey", note_id, "make_booking", "--json")
        assert rekeyed.returncode == 0, rekeyed.stderr
        proposal = json.loads(rekeyed.stdout)["proposal"]
        shown = await cli(
            settings, "show", "hollowbrook", "make_booking.md", "--version", proposal["version_id"]
        )
        assert "## Notes\n\nCheck availability first.\n" in shown.stdout
        listed = json.loads(
            (await cli(settings, "annotations", "hollowbrook", "--json", "--all")).stdout
        )
        assert sorted((a["target"], a["status"]) for a in listed) == [
            ("operation:create_booking", "retired"),
            ("operation:make_booking", "applied"),
        ]


async def test_publishing_a_version_that_drops_a_live_gate_needs_remove_gates(
    ctx: AppContext, settings: Settings
) -> None:
    assert settings.nats_url
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await import_spec(ctx, nc, watcher, HOLLOWBROOK.read_bytes(), "v1")
        gated = await cli(
            settings,
            "annotate",
            "hollowbrook",
            "-o",
            "cancel_booking",
            "--approval",
            "DELETE /bookings/{booking_id}",
            "--json",
        )
        assert gated.returncode == 0, gated.stderr
        gate_id = json.loads(gated.stdout)["annotation_id"]
        with_gate = json.loads(gated.stdout)["proposal"]["version_id"]
        assert (await cli(settings, "publish", "hollowbrook", with_gate)).returncode == 0
        retired = await cli(settings, "retire", gate_id, "--json")
        assert retired.returncode == 0, retired.stderr
        without = json.loads(retired.stdout)["proposal"]["version_id"]
        # the gate's proposal stood on a revision no one had published; the retirement's on the
        # one just published
        assert json.loads(gated.stdout)["proposal"]["revision_published"] is False
        assert json.loads(retired.stdout)["proposal"]["revision_published"] is True
        refused = await cli(settings, "publish", "hollowbrook", without)
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            f"error: publishing {without[:12]} would drop the live version's gate DELETE /bookings/{{booking_id}}; publish with --remove-gates if that is meant"
        )
        allowed = await cli(settings, "publish", "hollowbrook", without, "--remove-gates")
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.startswith(
            f"published hollowbrook version {without[:12]} (replacing {with_gate[:12]})"
        )
        # what publishing changed is said with it: the gate that stopped applying, in words
        assert "  ~ cancel_booking: declaration\n" in allowed.stdout
        assert "      gate removed (was DELETE /bookings/{booking_id}, risk high)" in allowed.stdout


async def test_refusals_review_export_and_detach(ctx: AppContext, settings: Settings) -> None:
    assert settings.nats_url
    async with watching(settings.nats_url) as (watcher, nc), workers(ctx, settings.nats_url):
        await import_spec(ctx, nc, watcher, HOLLOWBROOK.read_bytes(), "v1")
        await watcher.wait_for(EVENTS.suggestions_made, submission="v1")
        wrong = await cli(
            settings,
            "annotate",
            "hollowbrook",
            "-o",
            "create_booking",
            "--approval",
            "POST /charges",
        )
        assert wrong.returncode == 2
        assert (
            wrong.stderr.strip()
            == "error: approval (new): matches 'POST /charges', but create_booking is POST /bookings; a gate must match its operation"
        )
        nofield = await cli(
            settings, "annotate", "hollowbrook", "-o", "create_booking", "--identity", "colour"
        )
        assert (
            nofield.stderr.strip()
            == "error: identity (new): names no field create_booking sends (colour); it sends room_id, guest_name, arrival, departure"
        )
        reviewed = await cli(
            settings, "review", "hollowbrook", "--accept-group", "deletes", "--json"
        )
        assert reviewed.returncode == 0, reviewed.stderr
        review = json.loads(reviewed.stdout)
        assert len(review["confirmed"]) == 1 and review["remaining"] == 2
        hidden = await cli(settings, "annotate", "hollowbrook", "-o", "cancel_booking", "--hidden")
        assert hidden.returncode == 2 and "cancel_booking is both hidden and gated" in hidden.stderr
        await cli(settings, "annotate", "hollowbrook", "--skill-note", "Money is in pence.")
        overlay = json.loads(
            (await cli(settings, "export", "hollowbrook", "--format", "overlay")).stdout
        )
        assert overlay["overlay"] == "1.0.0"
        assert overlay["actions"] == [
            {"target": "$.info", "update": {"x-skillpress-conventions": ["Money is in pence."]}},
            {
                "target": "$.paths['/bookings/{booking_id}'].delete",
                "update": {
                    "x-skillpress-approval": {
                        "binds": ["booking_id"],
                        "matches": "DELETE /bookings/{booking_id}",
                        "risk": "high",
                    }
                },
            },
        ]
        example = await cli(
            settings,
            "annotate",
            "hollowbrook",
            "-o",
            "get_booking",
            "--example",
            '{"booking_id": "bk-1"}',
            "--turn",
            "t-9",
            "--json",
        )
        assert example.returncode == 0, example.stderr
        example_id = json.loads(example.stdout)["annotation_id"]
        retracted = await cli(settings, "retract-turn", "hollowbrook", "t-9", "--json")
        assert json.loads(retracted.stdout)["retired"] == [example_id]
        shown = await cli(
            settings,
            "show",
            "hollowbrook",
            "get_booking.md",
            "--version",
            json.loads(retracted.stdout)["proposal"]["version_id"],
        )
        assert "## Examples" not in shown.stdout
        detached = await cli(settings, "detach", "hollowbrook")
        assert detached.returncode == 0
        blob = ctx.blobs.put(spec_variant(summary="changed"))
        await submit(
            nc,
            SpecSubmitted(submission="after", skill="hollowbrook", blob=blob, created_by="test"),
            "submitted:after",
        )
        rejected = await watcher.wait_for(EVENTS.revision_rejected, submission="after")
        assert rejected["reason"].startswith(
            "hollowbrook is detached from its source: it no longer regenerates"
        )
