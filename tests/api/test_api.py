"""The HTTP API on the embedded stack: every endpoint, as a client would call it, refusals included."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from skillpress.api.app import api_document
from skillpress.derive.package import derive_package
from tests.api.conftest import MAX_SPEC_BYTES, PETSTORE, Served

pytestmark = pytest.mark.integration  # starts real servers

CHECKED_IN = Path(__file__).parents[2] / "skillpress" / "schemas" / "openapi.json"


def _problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    return body


def _events(client: httpx.Client, url: str) -> list[dict[str, Any]]:
    """The submission's Server-Sent Events up to its end."""
    seen = []
    with client.stream("GET", url) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                seen.append({"event": name, **json.loads(line[6:])})
                if name == "end":
                    break
    return seen


def _create(
    client: httpx.Client, slug: str, data: bytes, name: str = "spec.yaml"
) -> list[dict[str, Any]]:
    made = client.post("/v1/skills", data={"slug": slug}, files={"file": (name, data)})
    assert made.status_code == 202, made.text
    body = made.json()
    assert body["skill"] == slug and body["events"].endswith(f"?after={body['seq']}")
    return _events(client, body["events"])


def _renamed(data: bytes, old: str, new: str) -> bytes:
    doc = yaml.safe_load(data)
    for item in doc["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") == old:
                op["operationId"] = new
    return yaml.safe_dump(doc, sort_keys=False).encode()


def _routes() -> list[tuple[str, str]]:
    doc = api_document()
    return [
        (method.upper(), re.sub(r"\{[^}]+\}", "x", path))
        for path, item in doc["paths"].items()
        for method in item
    ]


def test_the_served_openapi_document_is_the_checked_in_one(served: Served) -> None:
    with served.client() as c:
        served_doc = c.get("/v1/openapi.json").json()
    checked_in = json.loads(CHECKED_IN.read_text())
    assert served_doc == checked_in == json.loads(json.dumps(api_document())), (
        "run `just openapi` and commit schemas/openapi.json"
    )
    assert served_doc["security"] == [{"operatorToken": []}]


@pytest.mark.parametrize(("method", "path"), _routes())
def test_every_endpoint_needs_an_operator_token(served: Served, method: str, path: str) -> None:
    with served.client(token=None) as anonymous, served.client(token="not-a-token") as stranger:
        body = _problem(anonymous.request(method, path), 401)
        assert "Bearer" in body["detail"]
        assert _problem(stranger.request(method, path), 401)["detail"] == (
            "that token is not known here"
        )


def test_every_request_is_logged_as_one_event_without_its_query(served: Served) -> None:
    import time

    marker = f"/v1/skills/no-such-{time.monotonic_ns()}"
    with httpx.Client(base_url=served.base, timeout=30) as c:
        c.get(f"/sign-in?token=not-a-real-token-{marker[-6:]}")
    with served.client() as c:
        assert c.get(marker, params={"secret": "q"}).status_code == 404
    events: list[dict[str, Any]] = []
    for _ in range(50):
        events = [
            json.loads(line)
            for line in list(served.log)
            if line.startswith("{") and '"http.request"' in line
        ]
        if any(e["path"] == marker for e in events):
            break
        time.sleep(0.1)
    (mine,) = [e for e in events if e["path"] == marker]
    assert (mine["method"], mine["status"]) == ("GET", 404)
    assert mine["bytes"] > 0 and mine["ms"] >= 0 and mine["client"] == "127.0.0.1"
    signed = [e for e in events if e["path"] == "/sign-in"]
    assert signed and all("token" not in json.dumps(e) for e in signed)  # never the query
    assert all("secret" not in json.dumps(e) for e in events)
    # the banner went to standard output; every line of the log is one JSON event
    assert not [
        ln
        for ln in served.log
        if ln.strip()
        and not ln.startswith("{")
        and "sign in" not in ln
        and not ln.startswith(("skillpress is up", "console and API", "Ctrl-C"))
    ]


def test_preview_says_what_the_spec_answers_and_stores_nothing_else(served: Served) -> None:
    data = PETSTORE.read_bytes()
    expected = derive_package(data)
    with served.client() as c:
        uploaded = c.post("/v1/skills/preview", files={"file": ("petstore.yaml", data)})
        pasted = c.post("/v1/skills/preview", data={"spec": data.decode(), "slug": "pets"})
        skills = c.get("/v1/skills").json()
    assert uploaded.status_code == 200, uploaded.text
    shown = uploaded.json()
    assert {k: shown[k] for k in ("title", "slug", "base_url", "hosts", "operations", "tools")} == {
        "title": "Swagger Petstore",
        "slug": "petstore",
        "base_url": "http://petstore.swagger.io/api",
        "hosts": ["petstore.swagger.io"],
        "operations": 4,
        "tools": 4,
    }
    assert shown["body"].encode() == expected.files["body.md"]
    assert shown["body_bytes"] == len(expected.files["body.md"])
    assert shown["base_url_question"] is None and shown["credential_env"] == "PETSTORE_API_KEY"
    assert shown["in_use"] is None  # no skill has the slug
    assert pasted.json()["slug"] == "pets" and pasted.json()["credential_env"] == "PETS_API_KEY"
    assert skills == [] or all(s["slug"] != "petstore" for s in skills)


def test_preview_asks_where_the_api_lives_and_which_auth_a_header_cannot_serve(
    served: Served,
) -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Relay", "version": "1"},
        "servers": [{"url": "/api/v1"}],
        "components": {
            "securitySchemes": {
                "key": {"type": "apiKey", "in": "header", "name": "X-Relay-Key"},
                "mtls": {"type": "mutualTLS"},
            }
        },
        "security": [{"key": []}],
        "paths": {
            "/a": {"get": {"operationId": "getA", "responses": {"200": {"description": "ok"}}}},
            "/b": {
                "get": {
                    "operationId": "getB",
                    "security": [{"mtls": []}],
                    "responses": {"200": {"description": "ok"}},
                }
            },
        },
    }
    with served.client() as c:
        shown = c.post("/v1/skills/preview", data={"spec": json.dumps(spec)}).json()
    assert shown["base_url"] is None
    assert shown["base_url_question"].startswith("Where does this API live?")
    assert "'/api/v1'" in shown["base_url_question"]
    assert shown["auth_header"] == "X-Relay-Key"
    assert shown["operations_unservable"] == 1


def test_a_refused_spec_is_a_422_with_its_reason_and_nothing_is_created(served: Served) -> None:
    with served.client() as c:
        previewed = c.post("/v1/skills/preview", data={"spec": '{"nope": 1}'})
        created = c.post("/v1/skills", data={"slug": "nope", "spec": '{"nope": 1}'})
        broken = c.post("/v1/skills/preview", data={"spec": "a: [unclosed"})
        none_given = c.post("/v1/skills/preview", data={"slug": "x"})
        two_given = c.post("/v1/skills/preview", data={"spec": "{}", "url": "https://example.com/"})
        bad_slug = c.post("/v1/skills", data={"slug": "Not A Slug", "spec": "{}"})
        skills = c.get("/v1/skills").json()
    reason = "not an OpenAPI document: no 'openapi' or 'swagger' field at the top level"
    assert _problem(previewed, 422)["detail"] == reason
    assert _problem(created, 422)["detail"] == reason
    assert _problem(broken, 422)["type"] == "urn:skillpress:problem:spec-refused"
    assert _problem(none_given, 422)["detail"].startswith("give exactly one spec")
    assert _problem(two_given, 422)["detail"].endswith("got spec, url")
    assert "lowercase letters" in _problem(bad_slug, 422)["detail"]
    assert all(s["slug"] != "nope" for s in skills)


def test_an_oversize_upload_is_a_413_before_it_is_parsed_or_stored(served: Served) -> None:
    blobs = served.home / "blobs"
    before = sorted(p.name for p in blobs.rglob("*")) if blobs.exists() else []
    big = b'{"openapi": "3.0.0", "x": "' + b"a" * (MAX_SPEC_BYTES + 300_000) + b'"}'
    with served.client() as c:
        refused = c.post("/v1/skills/preview", files={"file": ("big.json", big)})
        # no declared length: counted as it arrives
        form = (
            b'--x\r\nContent-Disposition: form-data; name="slug"\r\n\r\nbig\r\n'
            b'--x\r\nContent-Disposition: form-data; name="file"; filename="big.json"\r\n\r\n'
            + big
            + b"\r\n--x--\r\n"
        )
        chunked = c.post(
            "/v1/skills",
            content=iter([form[i : i + 65536] for i in range(0, len(form), 65536)]),
            headers={"Content-Type": "multipart/form-data; boundary=x"},
        )
    assert "limit" in _problem(refused, 413)["detail"]
    _problem(chunked, 413)
    after = sorted(p.name for p in blobs.rglob("*")) if blobs.exists() else []
    assert after == before


def test_the_console_is_refused_in_pages_with_the_way_back(served: Served) -> None:
    """A console form over the cap, or with a field the server cannot read, is answered with a
    page saying why and linking back to the form's page; the API keeps its problems."""
    big = b"a" * (MAX_SPEC_BYTES + 300_000)
    with served.client() as c:
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, follow_redirects=False) as browser:
        over = browser.post("/skills/import", files={"file": ("big.json", big)})
        unreadable = browser.post("/operations/approvals/seven", data={"csrf": "x"})
        lost = browser.get("/skills/nope/somewhere")
        api = browser.post("/v1/approvals/seven/grant")
        icon = browser.get("/favicon.ico")  # a browser asks on every page: no 404 in its console
    assert over.status_code == 413 and over.headers["content-type"].startswith("text/html")
    # the limit the console's form states, a spec's (#43.9: the page said 33,816,576 where the
    # form said 33,554,432)
    assert f"over the {MAX_SPEC_BYTES:,}-byte limit a spec may have" in over.text
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert '<a href="/skills/import" id="way-back">' in over.text
    assert unreadable.status_code == 422 and "request_id: " in unreadable.text
    assert '<a href="/operations" id="way-back">' in unreadable.text
    assert lost.status_code == 404 and '<h1>Not found <span class="muted">(404)' in lost.text
    assert '<a href="/skills/nope" id="way-back">' in lost.text
    assert api.headers["content-type"] == "application/problem+json"


def test_a_url_import_goes_through_the_fetch_guard(served: Served) -> None:
    with served.client() as c:
        refused = c.post("/v1/skills/preview", data={"url": f"{served.base}/v1/openapi.json"})
        not_http = c.post("/v1/skills/preview", data={"url": "file:///etc/passwd"})
    assert "127.0.0.1" in _problem(refused, 422)["detail"]
    assert _problem(not_http, 422)["detail"] == "'file:///etc/passwd' is not an http(s) URL"


def test_a_skill_from_creation_to_its_second_revision(served: Served) -> None:
    """Create (stages as events), read versions and files, review, annotate, publish, then a
    revision that renames an operation: orphans, re-key, the gate-drop refusal, exports."""
    data = PETSTORE.read_bytes()
    with served.client() as c:
        events = _create(c, "pets", data)
        subjects = [
            e["subject"].rsplit(".", 2)[-2] + "." + e["subject"].rsplit(".", 1)[-1] for e in events
        ]
        assert subjects[0] == "spec.submitted" and subjects[-1] == "version.proposed"
        assert "revision.parsed" in subjects and events[-1]["event"] == "end"
        assert events[-1]["text"].startswith("proposed version ")
        first = events[-1]["body"]["version_id"]

        status = c.get(f"/v1/submissions/{events[0]['body']['submission']}").json()
        assert [s["stage"] for s in status["stages"]][-1] == "proposed"
        versions = c.get("/v1/skills/pets/versions").json()
        assert [(v["version_id"], v["status"], v["live"]) for v in versions] == [
            (first, "proposed", False)
        ]
        listed = c.get(f"/v1/skills/pets/versions/{first[:8]}/files").json()
        assert set(listed) == {
            "body.md",
            "index.json",
            "skill.json",
            "types.json",
            "add_pet.md",
            "delete_pet.md",
            "find_pet_by_id.md",
            "find_pets.md",
        }
        body = c.get("/v1/skills/pets/versions/newest/files/body.md")
        assert body.status_code == 200 and len(body.content) == listed["body.md"]
        assert _problem(c.get("/v1/skills/pets/versions/live/files"), 404)["detail"] == (
            "pets has no live version yet"
        )
        _problem(c.get("/v1/skills/pets/versions/newest/files/nope.md"), 404)
        assert c.get("/v1/skills/pets/diff").json()["added"] == [
            "add_pet",
            "delete_pet",
            "find_pet_by_id",
            "find_pets",
        ]

        review = c.get("/v1/skills/pets/suggestions").json()
        assert review["remaining"] == 3 and list(review["groups"]) == [
            "money",
            "deletes",
            "changes",
            "reads",
        ]
        confirmed = c.post(
            "/v1/skills/pets/suggestions/confirm", json={"groups": ["deletes"]}
        ).json()
        assert len(confirmed["confirmed"]) == 1 and confirmed["remaining"] == 2
        assert confirmed["proposal"]["skill"] == "pets"
        identity = review["groups"]["changes"][1]
        assert identity["kind"] == "identity"
        one = c.post("/v1/skills/pets/suggestions/confirm", json={"ids": [identity["id"]]}).json()
        assert one["remaining"] == 1
        _problem(c.post("/v1/skills/pets/suggestions/confirm", json={"ids": [identity["id"]]}), 404)
        _problem(c.post("/v1/skills/pets/suggestions/confirm", json={"groups": ["fun"]}), 422)

        noted = c.post(
            "/v1/skills/pets/annotations",
            json={"kind": "note", "operation": "delete_pet", "value": "Only for pets that left."},
        )
        assert noted.status_code == 201, noted.text
        note_id = noted.json()["annotation_id"]
        refused = c.post(
            "/v1/skills/pets/annotations", json={"kind": "note", "operation": "nope", "value": "x"}
        )
        assert "nope" in _problem(refused, 422)["detail"]
        _problem(c.post("/v1/skills/pets/annotations", json={"kind": "poem", "value": "x"}), 422)
        states = {a["id"]: a["status"] for a in c.get("/v1/skills/pets/annotations").json()}
        assert states[note_id] == "applied" and set(states.values()) == {"applied"}

        published = c.post("/v1/skills/pets/versions/newest/publish", json={})
        assert published.status_code == 200, published.text
        live = published.json()["version_id"]
        shown = {
            "slug": "pets",
            "title": "Swagger Petstore",
            "live_version_id": live,
            "proposals": 0,
            "open_actions": 0,
            "detached": False,
        }
        assert c.get("/v1/skills").json() == [shown]
        assert c.get("/v1/skills/pets").json() == shown
        missing = _problem(c.get("/v1/skills/nope"), 404)
        assert (
            missing["detail"] == "no skill 'nope' (skillpress import SPEC --skill nope makes one)"
        )

        # a revision renames deletePet: the note and the gate on delete_pet are orphaned
        events = _create(c, "pets", _renamed(data, "deletePet", "removePet"))
        assert events[-1]["subject"].endswith("version.proposed")
        diff = c.get("/v1/skills/pets/diff").json()
        assert diff["removed"] == ["delete_pet"] and diff["added"] == ["remove_pet"]
        orphaned = {o["id"]: o for o in diff["orphaned"]}
        assert orphaned[note_id]["rekey_to"] == "remove_pet"
        none = c.post("/v1/annotations/rekey", json={"moves": {}})
        assert _problem(none, 422)["type"] == "urn:skillpress:problem:invalid-request"
        unknown = c.post("/v1/annotations/rekey", json={"moves": {"nope": "remove_pet"}})
        assert _problem(unknown, 404)["detail"] == "no active annotation 'nope'"
        rekeyed = c.post(f"/v1/annotations/{note_id}/rekey", json={"operation": "remove_pet"})
        assert rekeyed.status_code == 200, rekeyed.text
        refused = c.post("/v1/skills/pets/versions/newest/publish", json={})
        assert "DELETE /pets/{id}" in _problem(refused, 422)["detail"]
        dropped = c.post("/v1/skills/pets/versions/newest/publish", json={"remove_gates": True})
        assert dropped.status_code == 200, dropped.text

        overlay = c.get("/v1/skills/pets/export/overlay").json()
        assert overlay["overlay"].startswith("1.") and overlay["actions"]
        zipped = c.get("/v1/skills/pets/export/agent-skills")
        assert zipped.headers["content-type"] == "application/zip"
        names = zipfile.ZipFile(io.BytesIO(zipped.content)).namelist()
        assert "pets/SKILL.md" in names and "pets/tools.json" in names
        assert zipped.content == c.get("/v1/skills/pets/export/agent-skills").content

        retired = c.post(f"/v1/annotations/{rekeyed.json()['annotation_id']}/retire")
        assert retired.status_code == 200, retired.text
        _problem(c.post(f"/v1/annotations/{note_id}/retire"), 404)
        assert c.post("/v1/skills/pets/detach").json() == {"skill": "pets", "detached": True}
        _problem(c.get("/v1/skills/nope/versions"), 404)


def test_action_items_and_dead_letters(served: Served) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.platform.settings import Settings
    from skillpress.schemas.records import ActionItem, Skill

    with served.client() as c:
        _create(c, "actions-demo", PETSTORE.read_bytes())
    ctx = open_app(Settings(home=served.home))
    try:
        with ctx.records.session() as s:
            skill = next(
                k
                for k in s.exec(__import__("sqlmodel").select(Skill)).all()
                if k.slug == "actions-demo"
            )
            item = ActionItem(
                skill_id=skill.id,
                kind="refresh",
                message="a refresh proposed x",
                created_at=ctx.clock(),
            )
            s.add(item)
            s.flush()
            item_id = item.id
    finally:
        ctx.close()
    with served.client() as c:
        listed = c.get("/v1/actions").json()
        assert [(a["id"], a["skill"], a["message"]) for a in listed] == [
            (item_id, "actions-demo", "a refresh proposed x")
        ]
        assert c.post(f"/v1/actions/{item_id}/resolve").json()["id"] == item_id
        assert c.get("/v1/actions").json() == []
        _problem(c.post(f"/v1/actions/{item_id}/resolve"), 404)
        assert c.get("/v1/dead-letters").json() == []
        assert (
            "#999"
            in _problem(c.post("/v1/dead-letters/replay", json={"ids": [999]}), 404)["detail"]
        )
        assert c.post("/v1/dead-letters/replay", json={}).json() == []


def test_the_console_signs_in_with_a_strict_cookie_and_checks_csrf(served: Served) -> None:
    with httpx.Client(base_url=served.base, follow_redirects=False) as browser:
        away = browser.get("/skills")
        assert away.status_code == 303 and away.headers["location"] == "/sign-in?next=%2Fskills"
        wrong = browser.post("/sign-in", data={"token": "nope"})
        assert wrong.status_code == 401 and "not known" in wrong.text
        signed = browser.get(f"/sign-in?token={served.token}")
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        page = browser.get("/skills/import")
        assert page.status_code == 200 and 'name="csrf"' in page.text
        forged = browser.post("/skills/import", data={"csrf": "forged", "spec": "{}"})
        assert forged.status_code == 403
        assert forged.headers["content-type"].startswith("text/html")
        assert "this form&#39;s CSRF token is missing or stale: reload the page" in forged.text
        assert '<a href="/skills/import" id="way-back">' in forged.text
        api_without_csrf = browser.post("/v1/skills/preview", data={"spec": "{}"})
        assert (
            _problem(api_without_csrf, 403)["detail"]
            == "a change from the console needs its CSRF token"
        )
        assert browser.get("/v1/skills").status_code == 200


def test_every_answer_carries_security_headers_and_a_signed_out_session_is_dead(
    served: Served,
) -> None:
    import re

    with httpx.Client(base_url=served.base, follow_redirects=False) as browser:
        unknown = browser.get("/sign-in?token=not-a-token&next=/skills")
        assert unknown.status_code == 303, "a token in the address goes at once, known or not"
        assert "token" not in unknown.headers["location"]
        assert "that token is not known here" in browser.get(unknown.headers["location"]).text
        signed = browser.get(f"/sign-in?token={served.token}")
        assert signed.status_code == 303 and served.token not in signed.headers["location"]
        page = browser.get("/skills")
        policy = page.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self' 'nonce-" in policy
        assert "'unsafe-inline'" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "no-referrer"
        assert page.headers["cache-control"] == "no-store"
        assert browser.get("/v1/skills").headers["cache-control"] == "no-store"
        assert "cache-control" not in browser.get("/static/console.css").headers
        assert re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*nonce=)", page.text) == []
        told = browser.get("/skills", params={"error": "Your session expired: call 555-0100"})
        assert "555-0100" not in told.text, "a link cannot put words on a console page"
        assert browser.get("/v1/docs").status_code == 404  # it loaded a third-party script
        assert browser.get("/v1/openapi.json").status_code == 200
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        cookie = browser.cookies.get("skillpress_session")
        out = browser.post("/sign-out", data={"csrf": csrf.group(1)})
        assert out.status_code == 303
    with httpx.Client(base_url=served.base, follow_redirects=False) as stolen:
        stolen.cookies.set("skillpress_session", cookie or "")
        again = stolen.get("/skills")
        assert again.status_code == 303 and again.headers["location"].startswith("/sign-in")


def test_calls_waiting_for_approval_are_granted_or_denied_by_name(served: Served) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.app.records.approval_requests import ask
    from skillpress.platform.settings import Settings

    ctx = open_app(Settings(home=served.home))
    try:
        first = ask(ctx, "pets", "delete_pet", "high", {"id": 7}, "agent-1")
        second = ask(ctx, "pets", "delete_pet", "high", {"id": 8}, "agent-1")
    finally:
        ctx.close()
    with served.client() as c:
        waiting = c.get("/v1/approvals").json()
        assert [(a["id"], a["bound"], a["status"]) for a in waiting] == [
            (first.id, {"id": 7}, "pending"),
            (second.id, {"id": 8}, "pending"),
        ]
        granted = c.post(f"/v1/approvals/{first.id}/decide", json={"grant": True}).json()
        assert (granted["status"], granted["decided_by"]) == ("granted", "operator")
        denied = c.post(f"/v1/approvals/{second.id}/decide", json={"grant": False}).json()
        assert denied["status"] == "denied"
        again = c.post(f"/v1/approvals/{second.id}/decide", json={"grant": True})
        assert _problem(again, 422)["detail"] == f"approval request #{second.id} is denied already"
        _problem(c.post("/v1/approvals/999/decide", json={"grant": True}), 404)
        assert c.get("/v1/approvals").json() == []
        assert len(c.get("/v1/approvals", params={"everything": True}).json()) == 2


def _follow_api(
    served: Served, out: Path, env: dict[str, str], skill: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`skillpress follow OUT --api … --skill SKILL --once` as a runtime without store access
    runs it, its token in $FOLLOW_TOKEN."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "follow",
            str(out),
            "--api",
            served.base,
            "--token-env",
            "FOLLOW_TOKEN",
            "--skill",
            skill,
            "--once",
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_runtime_without_store_access_follows_over_the_api(
    served: Served, tmp_path: Path
) -> None:
    import hashlib
    import subprocess
    import sys

    from tests.cli.test_up import home_env

    with served.client() as c:
        _create(c, "followed", PETSTORE.read_bytes())
        first = c.post("/v1/skills/followed/versions/newest/publish", json={}).json()["version_id"]
        pointers = {v["skill"]: v for v in c.get("/v1/live").json()}
        assert pointers["followed"]["version_id"] == first
        one = c.get(f"/v1/skills/followed/versions/{first[:10]}").json()
        assert one == pointers["followed"] | {"status": "published", "live": True}
        # a runtime's token is all a follower needs (an operator makes it)
        runtime = c.post("/v1/tokens", json={"name": "follower", "role": "runtime"}).json()
    out = tmp_path / "runtime"
    env = home_env(tmp_path / "runtime-home") | {"FOLLOW_TOKEN": runtime["token"]}

    def follow(*extra: str) -> subprocess.CompletedProcess[str]:
        return _follow_api(served, out, env, "followed", *extra)

    done = follow()
    assert done.returncode == 0, done.stderr
    assert f"followed: live version {first[:12]}" in done.stderr
    for path, digest in pointers["followed"]["files"].items():
        assert hashlib.sha256((out / "followed" / path).read_bytes()).hexdigest() == digest
    assert not (tmp_path / "runtime-home").exists() or not any(
        (tmp_path / "runtime-home").iterdir()
    )
    with served.client() as c:
        c.post(
            "/v1/skills/followed/annotations", json={"kind": "skill_note", "value": "Pets are ids."}
        )
        second = c.post("/v1/skills/followed/versions/newest/publish", json={}).json()["version_id"]
    assert follow().returncode == 0
    assert "Pets are ids." in (out / "followed" / "body.md").read_text()
    pinned = follow("--pin", f"followed={first[:12]}")
    assert pinned.returncode == 0 and second != first
    assert "Pets are ids." not in (out / "followed" / "body.md").read_text()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillpress.cli.main",
            "follow",
            str(out),
            "--api",
            served.base,
            "--once",
        ],
        capture_output=True,
        text=True,
        env=home_env(tmp_path / "h2"),
        timeout=60,
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "error: --api needs a runtime token in $SKILLPRESS_RUNTIME_TOKEN"
    )


def test_a_follower_over_the_api_takes_a_thousand_file_version_in_one_request(
    served: Served, tmp_path: Path
) -> None:
    """`follow --api` on a version of 1,000 operations (1,000+ files): one archive request for
    the version, never a request per file (that was ~2 s a file, each reading every blob), every
    file checked against the live pointer, within seconds."""
    import hashlib
    import time

    from tests.cli.test_up import home_env
    from tests.synthetic import synthetic_spec

    with served.client() as c:
        _create(c, "thousand", synthetic_spec(1000), "thousand.json")
        version = c.post("/v1/skills/thousand/versions/newest/publish", json={}).json()
        live = {v["skill"]: v for v in c.get("/v1/live").json()}["thousand"]
    assert live["version_id"] == version["version_id"] and len(live["files"]) > 1000
    out = tmp_path / "runtime"
    started = time.monotonic()
    env = home_env(tmp_path / "runtime-home") | {"FOLLOW_TOKEN": served.token}
    done = _follow_api(served, out, env, "thousand")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert took < 30, f"follow --api took {took:.1f} s for {len(live['files'])} files"
    for path, digest in live["files"].items():
        assert hashlib.sha256((out / "thousand" / path).read_bytes()).hexdigest() == digest
    prefix = "/v1/skills/thousand/versions/"
    asked: list[str] = []
    for _ in range(50):  # the server's log is read by a thread: wait for the archive's line
        asked = [
            e["path"]
            for e in (json.loads(line) for line in list(served.log) if line.startswith("{"))
            if e.get("event") == "http.request"
            and e["method"] == "GET"
            and e["path"].startswith(prefix)
        ]
        if asked:
            break
        time.sleep(0.1)
    assert asked == [f"{prefix}{live['version_id']}/archive"]


def test_the_skill_page_of_a_large_skill_lists_what_can_be_read_and_finds_the_rest(
    served: Served,
) -> None:
    from tests.synthetic import synthetic_spec

    with served.client() as c:
        events = _create(c, "wide", synthetic_spec(400), "wide.json")
        assert events[-1]["subject"].endswith("version.proposed")
    with httpx.Client(base_url=served.base, follow_redirects=True, timeout=60) as browser:
        browser.get(f"/sign-in?token={served.token}")
        page = browser.get("/skills/wide").text
        listed = re.findall(r'href="/skills/wide\?v=\w+&amp;file=([^"&]+)', page)
        assert 0 < len(listed) <= 200 and "body.md" in listed
        assert not any(name.startswith("get_res") for name in listed), "operations come by category"
        assert re.search(r"\d+ more: open a category, or find one by name", page)
        found = browser.get("/skills/wide", params={"q": "get_res12_"}).text
        hits = set(re.findall(r"file=(get_res12_sub\d\.md)", found))
        assert hits == {"get_res12_sub0.md", "get_res12_sub1.md", "get_res12_sub2.md"}
        category = next(n for n in listed if n.startswith("tag_"))
        opened = browser.get("/skills/wide", params={"file": category}).text
        assert (
            len(
                set(
                    re.findall(r"file=((?:list|get|create|update|delete)_res\d+_sub\d\.md)", opened)
                )
            )
            >= 1
        )


def test_the_operations_page_pages_the_calls_waiting_and_says_how_many(served: Served) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.app.records.approval_requests import ask, pending_count
    from skillpress.platform.settings import Settings

    ctx = open_app(Settings(home=served.home))
    try:
        before = pending_count(ctx)
        for n in range(60):
            ask(ctx, "pets", "delete_pet", "high", {"id": 1000 + n}, "agent-1")
    finally:
        ctx.close()
    waiting = before + 60
    with served.client() as c:
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie) as browser:
        first = browser.get("/operations")
        last_page = browser.get("/operations", params={"page": 99})
    assert f'<span class="muted" id="waiting-count">({waiting})</span>' in first.text
    assert f"showing 1–50 of {waiting}, oldest first:" in first.text
    assert first.text.count('aria-label="grant request ') == 50
    pages = -(-waiting // 50)
    assert f"(page {pages} of {pages})" in last_page.text  # past the end: the last page
    assert last_page.text.count('aria-label="grant request ') == waiting - 50 * (pages - 1)
    assert f'hx-get="/operations?page={pages}"' in last_page.text


def test_workflow_runs_are_listed_and_shown_with_their_steps_over_the_api_and_console(
    served: Served,
) -> None:
    from skillpress.app.base.context import open_app
    from skillpress.app.records.runs import RecordedRuns
    from skillpress.platform.settings import Settings
    from skillpress.runtime.workflows.run import Workflow
    from skillpress.runtime.workflows.run_log import StepRecord

    flow = Workflow("adopt", "Adopt a pet.", "hardened", {"type": "object", "properties": {}})
    journal = RecordedRuns(lambda: open_app(Settings(home=served.home)))
    log = journal.begin("pets", "v1", flow, {"name": "Rex", "password": "hunter2"}, "agent-1")
    found = StepRecord("find", "find_pets", "sent", skill="pets", status=200)
    found.request = {"method": "GET", "url": "https://pets.example/pets", "headers": {}}
    found.tries, found.answer = [{"status": 503, "then_waited": 0.4}, {"status": 200}], [{"id": 7}]
    log.add(found, log.started()[1])
    held = StepRecord("adopt", "delete_pet", "waiting", skill="pets", approval=4)
    held.error = "not sent: waits for request #4"
    log.add(held, log.started()[1])
    journal.end(log, "waiting", error="adopt: step adopt waits: not sent")
    with served.client() as c:
        listed = c.get("/v1/skills/pets/runs").json()
        assert [(r["id"], r["status"], r["approval"], r["step_count"]) for r in listed] == [
            (log.run_id, "waiting", 4, 2)
        ]
        assert listed[0]["arguments"] == {"name": "Rex", "password": "[redacted]"}
        shown = c.get(f"/v1/runs/{log.run_id}").json()
        assert [(s["step"], s["outcome"], s["status"]) for s in shown["steps"]] == [
            ("find", "sent", 200),
            ("adopt", "waiting", None),
        ]
        assert shown["steps"][0]["tries"] == [{"status": 503, "then_waited": 0.4}, {"status": 200}]
        assert "hunter2" not in json.dumps(shown)
        _problem(c.get("/v1/runs/9999"), 404)
        assert c.get("/v1/skills/pets/runs", headers={"Authorization": ""}).status_code == 401
    with httpx.Client(base_url=served.base, follow_redirects=False) as browser:
        browser.get(f"/sign-in?token={served.token}")
        page = browser.get(f"/skills/pets/runs/{log.run_id}")
        assert page.status_code == 200
        assert 'on <a href="/operations">approval #4</a>: once it is granted' in page.text
        assert (
            "503, waited 0.4 s; 200" in page.text and "GET https://pets.example/pets" in page.text
        )
        assert browser.get(f"/skills/other/runs/{log.run_id}").status_code == 404


def test_a_runtime_decides_its_gated_calls_through_the_api_and_cannot_approve_them(
    served: Served, tmp_path: Path
) -> None:
    """The approval store out of the agent's reach: a runtime token asks for and waits on a
    gated call at `serve`; only the operator's grant there lets it through, once; nothing the
    runtime runs approves it (`call --approve` is refused)."""
    import shutil

    from skillpress import SkillHost, api_gatekeeper
    from skillpress.runtime.calling.calls import GateClosed
    from tests.cli.test_up import home_env
    from tests.runtime.hostile_api import Answer, hostile_api

    skill = tmp_path / "skills" / "hollowbrook"
    shutil.copytree(
        Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook-skill", skill
    )
    with served.client() as c:
        token = c.post("/v1/tokens", json={"name": "agent-host", "role": "runtime"}).json()["token"]
    for api in hostile_api({"/": lambda seen: Answer(204, body=b"")}):
        host = SkillHost(
            skill.parent,
            base_urls={"hollowbrook": api.url},
            gatekeeper=api_gatekeeper(served.base, token, "hollowbrook"),
        )
        with pytest.raises(GateClosed) as held:
            host.call("hollowbrook_cancel_booking", {"booking_id": "bk-77"})
        request = held.value.request
        assert request is not None and api.seen == []
        env = home_env(tmp_path / "agent-home") | {
            "SKILLPRESS_APPROVALS_URL": served.base,
            "SKILLPRESS_RUNTIME_TOKEN": token,
        }
        args = ("call", str(skill), "cancel_booking", "--args", '{"booking_id": "bk-77"}')
        cli = [sys.executable, "-m", "skillpress.cli.main", *args, "--base-url", api.url]
        waiting = subprocess.run(
            [*cli, "--approval-timeout", "0"], env=env, capture_output=True, text=True, timeout=60
        )
        assert waiting.returncode == 1 and f"approval #{request} is still pending" in waiting.stderr
        approving = subprocess.run(
            [*cli, "--approve"],
            env=env | {"SKILLPRESS_OPERATOR_TOKEN": served.token},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert approving.returncode == 2 and "nothing at this terminal approves" in approving.stderr
        with served.client(token=token) as as_runtime:
            refused = as_runtime.post(f"/v1/approvals/{request}/decide", json={"grant": True})
            assert refused.status_code == 403
        with served.client() as c:
            granted = c.post(f"/v1/approvals/{request}/decide", json={"grant": True}).json()
            assert granted["status"] == "granted"
        done = subprocess.run(
            [*cli, "--approval-timeout", "5"], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert [s.path for s in api.seen] == ["/bookings/bk-77"]
        with pytest.raises(GateClosed):  # the grant was spent: the next call asks anew
            host.call("hollowbrook_cancel_booking", {"booking_id": "bk-77"})
        assert len(api.seen) == 1


def test_ten_identical_submissions_at_once_all_end(served: Served) -> None:
    """#43.4: ten parallel POST /v1/skills of the same bytes under one slug left three with no
    stage recorded and an events stream that waited forever. Each one ends: one proposes the
    version, the others are unchanged naming its revision (and its version once made)."""
    from concurrent.futures import ThreadPoolExecutor

    data = PETSTORE.read_bytes()

    def create(_: int) -> list[dict[str, Any]]:
        with served.client() as c:
            return _create(c, "tenfold", data)

    with ThreadPoolExecutor(10) as pool:
        ended = list(pool.map(create, range(10)))
    endings = sorted(e[-1]["subject"].rsplit(".", 1)[-1] for e in ended)
    assert endings.count("proposed") == 1 and endings.count("unchanged") == 9, endings
    with served.client() as c:
        versions = c.get("/v1/skills/tenfold/versions").json()
        assert len(versions) == 1
        for events in ended:
            status = c.get(f"/v1/submissions/{events[0]['body']['submission']}")
            assert status.status_code == 200, status.text
            last = status.json()["stages"][-1]
            assert last["stage"] in ("proposed", "unchanged", "published"), last
            if last["stage"] == "unchanged":
                assert last["version_id"] == versions[0]["version_id"]


def test_an_unknown_submission_is_a_404_not_a_wait(served: Served) -> None:
    """#43.5: a mistyped submission URL answered "waiting for the pipeline…" forever. A
    submission no stage recorded, and that the stream does not hold at `after`, is a 404 (the
    events stream and the console's page); a real one still follows."""
    data = PETSTORE.read_bytes()
    with served.client() as c:
        made = c.post("/v1/skills", data={"slug": "typo"}, files={"file": ("s.yaml", data)})
        real = made.json()
        events = _events(c, real["events"])
        assert events[-1]["event"] == "end"
        gone = c.get("/v1/skills/typo/submissions/nope/events")
        assert "no submission 'nope' is known" in _problem(gone, 404)["detail"]
        # someone else's sequence is not this submission's
        other = c.get(f"/v1/skills/typo/submissions/nope/events?after={real['seq']}")
        _problem(other, 404)
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, follow_redirects=False) as browser:
        page = browser.get("/skills/typo/submissions/nope")
        assert page.status_code == 404 and "no submission" in page.text
        assert "waiting for the pipeline" not in page.text
        known = browser.get(f"/skills/typo/submissions/{real['submission']}")
        assert known.status_code == 200


def test_suggestions_are_dismissed_from_the_api_and_the_console_as_they_are_confirmed(
    served: Served,
) -> None:
    """#43.3: a wrong guess could be cleared only from the CLI. Dismiss one, or a group, over
    the API and from the console's review page; the decision is recorded under who made it,
    and a dismissed suggestion is never offered again."""
    import re as re_

    with served.client() as c:
        _create(c, "dismissals", PETSTORE.read_bytes())
        review = c.get("/v1/skills/dismissals/suggestions").json()
        assert review["remaining"] == 3
        one = review["groups"]["changes"][0]
        gone = c.post("/v1/skills/dismissals/suggestions/dismiss", json={"ids": [one["id"]]})
        assert gone.status_code == 200 and gone.json() == {"dismissed": 1, "remaining": 2}
        _problem(
            c.post("/v1/skills/dismissals/suggestions/dismiss", json={"ids": [one["id"]]}), 404
        )
        _problem(c.post("/v1/skills/dismissals/suggestions/dismiss", json={}), 422)
        left = c.get("/v1/skills/dismissals/suggestions").json()
        assert one["id"] not in [s["id"] for g in left["groups"].values() for s in g]
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, follow_redirects=False) as browser:
        page = browser.get("/skills/dismissals/review")
        assert 'aria-label="dismiss all 1 deletes"' in page.text
        csrf = re_.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        done = browser.post(
            "/skills/dismissals/review",
            data={"csrf": csrf.group(1), "group": "deletes", "decision": "dismiss"},
        )
        assert done.status_code == 303
        after = browser.get(done.headers["location"])
        assert "dismissed 1; 1 left" in after.text
    with served.client() as c:
        assert c.get("/v1/skills/dismissals/suggestions").json()["remaining"] == 1
    import sqlite3

    db = sqlite3.connect(served.home / "skillpress.db")
    decided = db.execute(
        "select status, decided_by from suggestions where status = 'dismissed' order by decided_at"
    ).fetchall()
    assert [row[0] for row in decided] == ["dismissed", "dismissed"]
    assert all(row[1] for row in decided)


def test_the_skill_page_says_in_words_what_changed_in_a_declaration(served: Served) -> None:
    """#43.2: the page showed `find_pets: declaration (GET /pets → GET /pets)` while the API had
    the detail; it renders each change in words, as the CLI does."""
    doc = yaml.safe_load(PETSTORE.read_bytes())
    with served.client() as c:
        _create(c, "worded", PETSTORE.read_bytes())
        first = c.get("/v1/skills/worded/versions").json()[0]["version_id"]
        c.post(f"/v1/skills/worded/versions/{first}/publish", json={})
        doc["paths"]["/pets"]["get"]["parameters"].append(
            {"name": "colour", "in": "query", "schema": {"type": "string", "enum": ["red"]}}
        )
        _create(c, "worded", yaml.safe_dump(doc).encode())
        diff = c.get("/v1/skills/worded/diff").json()
        changed = {ch["operation"]: ch for ch in diff["changed"]}
        details = changed["find_pets"]["details"]
        assert details, changed
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, follow_redirects=False) as browser:
        page = browser.get("/skills/worded").text
    assert "(GET /pets → GET /pets)" not in page
    # #55.8: the live row said "4 added" against itself (the diff it was proposed with)
    rows = [chunk.split("</tr>", 1)[0] for chunk in page.split("<tr>")[1:]]
    live_row = next(row for row in rows if 'class="badge live"' in row)
    assert "this is live" in live_row and " added" not in live_row, live_row
    from skillpress.api.console_kit import ticks

    for detail in details:  # backticks as code (#55.8: they showed raw), the rest escaped
        assert str(ticks(detail)) in page, detail
        assert "`" not in detail or f"`{detail.split('`')[1]}`" not in page


def test_probes_say_whether_the_server_is_alive_and_ready(served: Served) -> None:
    """#44.1 (part): a liveness and a readiness probe, unauthenticated, naming no secret."""
    with served.client(token=None) as c:
        alive = c.get("/healthz")
        ready = c.get("/readyz")
    assert alive.status_code == 200 and alive.json() == {"status": "alive"}
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"records": "ok", "blobs": "ok", "nats": "ok"},
    }


def _counted(text: str, name: str, labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(f"{name}{{{labels}}} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_the_scrape_counts_requests_by_route_and_a_submission_by_outcome(served: Served) -> None:
    """#44.1: `/metrics` answers without a token (names and counts only), requests are counted
    by their route's template (never a slug), and a submission by how it ended."""
    with served.client(token=None) as anyone:
        before = anyone.get("/metrics").text
    with served.client() as c:
        _create(c, "scraped", PETSTORE.read_bytes())
        assert c.get("/v1/skills/scraped/versions").status_code == 200
        assert c.get("/v1/skills/no-such-skill/versions").status_code == 404
    with served.client(token=None) as anyone:
        scrape = anyone.get("/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    after = scrape.text
    route = 'method="GET",route="/v1/skills/{slug}/versions"'
    for status in ("200", "404"):
        name = "skillpress_http_requests_total"
        labels = f'{route},status="{status}"'
        assert _counted(after, name, labels) - _counted(before, name, labels) == 1.0, status
    assert "scraped" not in after and "no-such-skill" not in after
    proposed = 'outcome="proposed"'
    assert (
        _counted(after, "skillpress_submissions_total", proposed)
        - _counted(before, "skillpress_submissions_total", proposed)
        == 1.0
    )
    assert re.search(r"^skillpress_approvals_waiting \d+\.0$", after, re.M)


def test_an_idle_followers_look_costs_what_changed(served: Served) -> None:
    """#61.1 (part): /v1/live answered every skill's every file digest to every look (4.6 MB at
    657 skills, every 2 s per follower). It answers with an ETag of the live set, 304 and no
    body to a look that sends it back while nothing changed, and only the skills named with
    ?skill=; a publication changes the tag."""
    with served.client() as c:
        _create(c, "looked", PETSTORE.read_bytes())
        c.post("/v1/skills/looked/versions/newest/publish", json={})
        first = c.get("/v1/live")
        tag = first.headers["etag"]
        assert first.status_code == 200 and "looked" in {v["skill"] for v in first.json()}
        idle = c.get("/v1/live", headers={"If-None-Match": tag})
        assert (idle.status_code, idle.content, idle.headers["etag"]) == (304, b"", tag)
        only = c.get("/v1/live", params={"skill": ["looked"]})
        assert [v["skill"] for v in only.json()] == ["looked"]
        none = c.get("/v1/live", params={"skill": ["no-such-skill"]})
        assert none.json() == [] and none.headers["etag"] not in (tag, only.headers["etag"])
        c.post(
            "/v1/skills/looked/annotations", json={"kind": "skill_note", "value": "Pets are ids."}
        )
        c.post("/v1/skills/looked/versions/newest/publish", json={})
        moved = c.get("/v1/live", headers={"If-None-Match": tag})
        assert moved.status_code == 200 and moved.headers["etag"] != tag


def test_a_followers_look_is_held_open_until_something_goes_live(served: Served) -> None:
    """#61.1: a follower holds its look open (`?wait=`): 304 when nothing went live in that
    time, and answered as soon as a publication lands, with the new pointers and tag, instead
    of every follower asking every 2 s."""
    import threading

    with served.client() as c:
        _create(c, "held", PETSTORE.read_bytes())
        c.post("/v1/skills/held/versions/newest/publish", json={})
        tag = c.get("/v1/live").headers["etag"]
        quiet = c.get("/v1/live", params={"wait": 0.5}, headers={"If-None-Match": tag})
        assert (quiet.status_code, quiet.content) == (304, b"")
        c.post("/v1/skills/held/annotations", json={"kind": "skill_note", "value": "Held."})
        answers: list[httpx.Response] = []
        look = threading.Thread(
            target=lambda: answers.append(
                c.get("/v1/live", params={"wait": 60}, headers={"If-None-Match": tag})
            )
        )
        look.start()
        published = c.post("/v1/skills/held/versions/newest/publish", json={}).json()
        look.join(50)  # a hang guard: it is answered within a second of the publish
        assert answers, "the held look was not answered when a version went live"
        moved = answers[0]
        assert moved.status_code == 200 and moved.headers["etag"] != tag
        live = {v["skill"]: v["version_id"] for v in moved.json()}
        assert live["held"] == published["version_id"]
        # a wait outside its bound is refused in words
        refused = c.get("/v1/live", params={"wait": 3600})
        assert refused.status_code == 422


def test_a_first_catch_up_is_sent_compressed_to_a_client_that_takes_it(served: Served) -> None:
    """#61.1 (part): a registry's first look is every skill's every file digest (2.9 MB at
    1,000 skills, measured by `just registry-bench`): sent gzip-compressed to a client that
    says it takes gzip (httpx, so `follow --api`, does), as it is to one that does not."""
    from tests.synthetic import synthetic_spec

    with served.client() as c:
        _create(c, "sixty", synthetic_spec(60), "sixty.json")
        c.post("/v1/skills/sixty/versions/newest/publish", json={})
        plain = c.get("/v1/live", headers={"Accept-Encoding": "identity"})
        packed = c.get("/v1/live", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers and len(plain.content) > 4096
    assert packed.headers["content-encoding"] == "gzip" and packed.json() == plain.json()
    assert packed.headers["vary"] == "Accept-Encoding"
    # it is mostly sha256 digests in hex (4 bits a character): gzip takes them to about half,
    # a little more or less by the digests; what is sent as is would be all of it
    assert packed.num_bytes_downloaded < len(plain.content) * 0.75


def test_a_skills_credential_is_named_over_the_api_and_the_console(served: Served) -> None:
    """#55.4: the import preview promised a header could be named on the skill page for a spec
    that declares none (petstore's); the API, the console and the CLI (`annotate --credential`)
    now name it, and the proposal says what changed."""
    import re as re_

    with served.client() as c:
        _create(c, "keyed", PETSTORE.read_bytes())
        c.post("/v1/skills/keyed/versions/newest/publish", json={})  # live, with no credential
        bare = c.get("/v1/skills/keyed/diff").json()
        assert "credential" not in bare
        set_ = c.post(
            "/v1/skills/keyed/annotations",
            json={
                "kind": "credential",
                "value": "X-Pet-Key",
                "credential_env": "KEYED_PET_KEY",
            },
        )
        assert set_.status_code == 201, set_.text
        diff = c.get("/v1/skills/keyed/diff").json()
        assert diff["credential"] == "none → header X-Pet-Key (apiKey, from $KEYED_PET_KEY)"
        again = c.post(
            "/v1/skills/keyed/annotations", json={"kind": "credential", "value": "Authorization"}
        )
        assert "set already" in _problem(again, 422)["detail"]
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, follow_redirects=False) as browser:
        page = browser.get("/skills/keyed").text
        said = re_.search(r'<p id="credential">(.*?)</p>', page, re_.S)
        assert said is not None
        assert "header X-Pet-Key (apiKey, from $KEYED_PET_KEY), set by a person" in said.group(1)
        csrf = re_.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        # the console's form: a second one is refused in words, on the page
        refused = browser.post(
            "/skills/keyed/annotations",
            data={
                "csrf": csrf.group(1),
                "kind": "credential",
                "value": "Authorization",
                "credential_kind": "bearer",
            },
        )
        assert refused.status_code == 303
        shown = browser.get(refused.headers["location"]).text
        assert "the skill&#39;s credential is set already" in shown


def test_the_skills_list_pages_and_finds_over_the_api_and_the_console(served: Served) -> None:
    """#61.2: `GET /v1/skills` answers a page (a `Link` to the next, `X-Total-Count` of all) and
    finds by a part of a slug or title; the console's list pages too, under the counts."""
    import re as re_

    with served.client() as c:
        for slug in ("paged-a", "paged-b", "paged-c"):
            _create(c, slug, PETSTORE.read_bytes())
        whole = c.get("/v1/skills", params={"limit": 500})
        everyone = [s["slug"] for s in whole.json()]
        assert "Link" not in whole.headers and whole.headers["X-Total-Count"] == str(len(everyone))
        seen: list[str] = []
        url: str | None = "/v1/skills?limit=2"
        while url:
            page = c.get(url)
            assert page.status_code == 200 and len(page.json()) <= 2
            seen += [s["slug"] for s in page.json()]
            found = re_.match(r'<([^>]+)>; rel="next"', page.headers.get("Link", ""))
            url = found.group(1) if found else None
        assert seen == everyone
        paged = c.get("/v1/skills", params={"q": "PAGED-", "limit": 2})
        assert [s["slug"] for s in paged.json()] == ["paged-a", "paged-b"]
        assert paged.headers["Link"] == '</v1/skills?after=paged-b&limit=2&q=PAGED->; rel="next"'
        assert _problem(c.get("/v1/skills", params={"limit": 0}), 422)
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, follow_redirects=False) as browser:
        page = browser.get("/skills", params={"q": "paged"}).text
        assert re_.findall(r'<a href="/skills/(paged-[abc])">', page) == [
            "paged-a",
            "paged-b",
            "paged-c",
        ]
        totals = re_.search(r'<p id="totals" role="status">(.*?)</p>', page, re_.S)
        assert totals is not None and totals.group(1).startswith(f"{len(everyone)} skills · ")
        none = browser.get("/skills", params={"q": "no-such-skill-at-all"}).text
        assert "No skill's slug or title holds “no-such-skill-at-all”." in none
