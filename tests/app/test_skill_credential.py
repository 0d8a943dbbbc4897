"""A skill's credential set where the preview says (#55.4): for an API whose spec declares no
scheme (GitHub's), the preview promised the variable "is kept for when you name a header on the
skill page", and nothing could name one; only a runtime's own `--auth-header` worked, per call.
A `credential` annotation now names it: the header (or query parameter), how it is attached,
and the variable it is read from. It is a person's decision like any other: checked where it is
added, carried across revisions, said in the diff and the body, and sent by every runtime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.context import AppContext
from skillpress.app.base.package_dir import write_package_dir
from skillpress.app.operator import annotations
from skillpress.app.operator.annotations import compose_annotation
from skillpress.app.records import versions
from skillpress.derive.annotations import AnnotationRefused
from skillpress.errors import Refused
from skillpress.schemas.events import AnnotationChanged, SpecSubmitted
from skillpress.schemas.subjects import EVENTS
from tests.app import bus
from tests.fake_api import Reply, fake_api

HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"


def _no_scheme(summary: str = "") -> bytes:
    """Hollowbrook as GitHub's spec is: no security scheme, no credential header."""
    doc = yaml.safe_load(HOLLOWBROOK.read_text())
    doc.pop("security", None)
    doc.get("components", {}).pop("securitySchemes", None)
    for item in doc["paths"].values():
        for op in item.values():
            if isinstance(op, dict):
                op.pop("security", None)
                op["parameters"] = [p for p in op.get("parameters", []) if p.get("in") != "header"]
    if summary:
        doc["paths"]["/rooms"]["get"]["summary"] = summary
    return yaml.safe_dump(doc, sort_keys=False).encode()


def _proposed(events: list[bus.Event]) -> str:
    found = [body for subject, body in events if subject == EVENTS.version_proposed]
    assert found, [subject for subject, _ in events]
    return str(found[-1]["version_id"])


def _submit(ctx: AppContext, data: bytes, name: str) -> str:
    event = SpecSubmitted(
        submission=name, skill="hollowbrook", blob=ctx.blobs.put(data), created_by="t"
    )
    return _proposed(bus.run(ctx, EVENTS.spec_submitted, event))


def _credential(ctx: AppContext, **values: str) -> annotations.Stored:
    kind, target, body = compose_annotation("credential", None, None, values)
    return annotations.record_annotation(ctx, "hollowbrook", kind, target, body, "ann")


def _propose(ctx: AppContext, stored: annotations.Stored) -> str:
    event = AnnotationChanged(
        skill="hollowbrook",
        annotation_ids=stored.ids,
        change="added",
        as_of=stored.at.isoformat(),
        submission=f"s-{stored.ids[0]}",
    )
    return _proposed(bus.run(ctx, EVENTS.annotation_changed, event))


def _files(ctx: AppContext, version_id: str) -> dict[str, bytes]:
    skill = versions.find_skill(ctx, "hollowbrook")
    return dict(versions.version_files(ctx.blobs, versions.pick_version(ctx, skill, version_id)))


def _auth(files: dict[str, bytes]) -> dict[str, Any]:
    return dict(json.loads(files["skill.json"])["auth"])


def test_a_person_names_the_credential_and_every_revision_carries_it(
    ctx: AppContext, tmp_path: Path
) -> None:
    from skillpress.host import SkillHost

    first = _submit(ctx, _no_scheme(), "one")
    assert _auth(_files(ctx, first))["header"] is None  # the spec says nothing
    stored = _credential(
        ctx,
        credential="Authorization",
        credential_kind="bearer",
        credential_env="HOLLOWBROOK_TOKEN",
    )
    second = _propose(ctx, stored)
    files = _files(ctx, second)
    auth = _auth(files)
    assert (auth["header"], auth["kind"], auth["env"]) == (
        "Authorization",
        "bearer",
        "HOLLOWBROOK_TOKEN",
    )
    assert auth["scheme"] == f"set by a person (credential {stored.ids[0]})"
    assert json.loads(files["index.json"])["auth"] == {
        "header": "Authorization",
        "kind": "bearer",
        "env": "HOLLOWBROOK_TOKEN",
    }
    assert "Authorization" in files["body.md"].decode()  # the agent is told how it is sent
    diff = versions.diff_versions(ctx, "hollowbrook", first, second)
    assert diff["credential"] == "none → header Authorization (bearer, from $HOLLOWBROOK_TOKEN)"
    said = annotations.skill_credential(versions.manifest_of(files), "hollowbrook")
    assert said == {
        "said": "header Authorization (bearer, from $HOLLOWBROOK_TOKEN)",
        "by_person": True,
        "default_env": "HOLLOWBROOK_API_KEY",
    }
    # a new revision of the spec keeps it: it is a person's decision, not the spec's
    third = _submit(ctx, _no_scheme(summary="Every room, with its price"), "two")
    assert third not in (first, second)
    assert _auth(_files(ctx, third))["header"] == "Authorization"
    # and a runtime sends it, from the variable named
    write_package_dir(_files(ctx, third), tmp_path / "skills" / "hollowbrook")
    with fake_api(lambda r: Reply(200, [])) as api:
        host = SkillHost(tmp_path / "skills", base_urls={"hollowbrook": api.url})
        done = host.call("hollowbrook_list_rooms", {}, environ={"HOLLOWBROOK_TOKEN": "k-1"})
    assert done.status == 200
    assert [r.header("Authorization") for r in api.seen] == ["Bearer k-1"]


def test_a_credential_in_the_query_is_sent_there(ctx: AppContext, tmp_path: Path) -> None:
    from skillpress.host import SkillHost

    _submit(ctx, _no_scheme(), "one")
    version = _propose(ctx, _credential(ctx, credential="api_key", credential_in="query"))
    write_package_dir(_files(ctx, version), tmp_path / "skills" / "hollowbrook")
    with fake_api(lambda r: Reply(200, [])) as api:
        host = SkillHost(tmp_path / "skills", base_urls={"hollowbrook": api.url})
        host.call("hollowbrook_list_rooms", {}, environ={"HOLLOWBROOK_API_KEY": "k-2"})
    assert [r.query.get("api_key") for r in api.seen] == [["k-2"]]


@pytest.mark.parametrize(
    ("values", "refused"),
    [
        ({"credential": "X Key"}, "a credential names the header"),
        ({"credential": "key", "credential_in": "cookie"}, "a header or the query, not 'cookie'"),
        ({"credential": "Authorization", "credential_kind": "digest"}, "apiKey, bearer, basic"),
        (
            {"credential": "token", "credential_in": "query", "credential_kind": "bearer"},
            "a bearer credential goes in a header",
        ),
        (
            {"credential": "Authorization", "credential_env": "SKILLPRESS_OPERATOR_TOKEN"},
            "SKILLPRESS_OPERATOR_TOKEN is one of skillpress's own settings",
        ),
        (
            {"credential": "Authorization", "credential_env": "OPENAI_API_KEY"},
            "OPENAI_API_KEY is not hollowbrook's own",
        ),
    ],
    ids=["not-a-name", "a-cookie", "an-unknown-kind", "bearer-in-a-query", "ours", "anothers"],
)
def test_a_credential_that_cannot_be_meant_is_refused_before_it_is_stored(
    ctx: AppContext, values: dict[str, str], refused: str
) -> None:
    _submit(ctx, _no_scheme(), "one")
    with pytest.raises(Refused, match=refused):
        _credential(ctx, **values)
    assert annotations.list_annotations(ctx, "hollowbrook") == []


def test_a_skill_has_one_credential_a_second_is_refused_where_it_is_added(
    ctx: AppContext,
) -> None:
    _submit(ctx, _no_scheme(), "one")
    held = _credential(ctx, credential="Authorization", credential_kind="bearer")
    with pytest.raises(AnnotationRefused, match=f"set already \\(credential {held.ids[0]}\\)"):
        _credential(ctx, credential="X-Api-Key")
    with pytest.raises(Refused, match="give no operation or category"):
        compose_annotation("credential", "list_rooms", None, {"credential": "X-Api-Key"})
