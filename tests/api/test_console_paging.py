"""#59.2: a long proposal and many annotations are shown a part at a time on the skill page
(GitHub's page was 186 KB once a group of gates was confirmed: every annotation a row with its own
form), and nothing is cut: each list's rest comes whole from the link that stands in for it."""

from __future__ import annotations

import re

import httpx

from tests.api.conftest import Served
from tests.api.test_api import _create
from tests.synthetic import synthetic_spec


def _names(html: str) -> list[str]:
    return re.findall(r"<code>(\w+)</code>", html)


def test_a_long_proposal_and_many_annotations_are_paged_and_nothing_is_cut(
    served: Served,
) -> None:
    from skillpress.api.skill_page import ANNOTATIONS_SHOWN, LISTED

    with served.client() as c:
        assert _create(c, "long", synthetic_spec(300), "long.json")[-1]["subject"].endswith(
            "version.proposed"
        )
        added = c.get("/v1/skills/long/diff").json()["added"]
        assert len(added) == 300
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    with httpx.Client(base_url=served.base, cookies=cookie, timeout=60) as browser:
        page = browser.get("/skills/long").text
        box = page.split('<details id="added">', 1)[1].split("</details>", 1)[0]
        assert _names(box) == added[:LISTED]
        link = re.search(r'<a href="([^"]+)" hx-get="\1" hx-target="closest \.more"', box)
        assert link is not None and f"… and {300 - LISTED} more" in box
        url = link.group(1).replace("&amp;", "&")
        rest = browser.get(url, headers={"HX-Request": "true"})
        assert rest.status_code == 200 and "<html" not in rest.text
        assert _names(rest.text) == added[LISTED:]  # in the link's place: the rest, exactly
        whole = browser.get(url).text  # without script: a page of the whole list
        assert _names(whole.split('<p id="changes">', 1)[1].split("</p>", 1)[0]) == added
        assert browser.get(url.replace("list=added", "list=secrets")).status_code == 404
        newest = browser.get("/skills/long/changes", params={"list": "added"}).text  # no v
        assert _names(newest.split('<p id="changes">', 1)[1].split("</p>", 1)[0]) == added

    with served.client() as c:
        c.post("/v1/skills/long/versions/newest/publish", json={}).raise_for_status()
        confirmed = c.post("/v1/skills/long/suggestions/confirm", json={"groups": ["deletes"]})
        assert confirmed.status_code == 200, confirmed.text
        gates = c.get("/v1/skills/long/annotations").json()
        diff = c.get("/v1/skills/long/diff").json()
    assert len(gates) > ANNOTATIONS_SHOWN and len(diff["changed"]) > LISTED
    with httpx.Client(base_url=served.base, cookies=cookie, timeout=60) as browser:
        page = browser.get("/skills/long").text
        changed = page.split('<details open id="changed">', 1)[1]
        shown = re.findall(r"^<li><code>(\w+)</code>", changed.replace("<li>", "\n<li>"), re.M)
        assert shown[:LISTED] == [x["operation"] for x in diff["changed"][:LISTED]]
        url = re.search(r'<li class="more"><a href="([^"]+)"', changed)
        assert url is not None
        rest = browser.get(url.group(1).replace("&amp;", "&"), headers={"HX-Request": "true"})
        got = re.findall(r"^<li><code>(\w+)</code>", rest.text.replace("<li>", "\n<li>"), re.M)
        assert got == [x["operation"] for x in diff["changed"][LISTED:]]
        assert len(page.encode()) < 100_000, len(page.encode())

        ids = [a["id"] for a in gates]
        rows = re.findall(r'<code class="id">(\w+)</code>', page)
        assert rows == ids[:ANNOTATIONS_SHOWN]
        assert f"1–{ANNOTATIONS_SHOWN} of {len(ids)}" in page
        second = browser.get("/skills/long", params={"ap": 2}).text
        assert re.findall(r'<code class="id">(\w+)</code>', second) == ids[ANNOTATIONS_SHOWN:]
        assert re.search(r'<a href="/skills/long\?ap=2"[^>]*aria-current="page"', second)
        last = browser.get("/skills/long", params={"ap": 99}).text  # past the end: the last
        assert re.findall(r'<code class="id">(\w+)</code>', last) == ids[ANNOTATIONS_SHOWN:]

        # a row's Retire button posts the one form of the table, with its own address
        csrf = re.search(
            r'<form method="post" id="retire" hidden><input type="hidden"'
            r' name="csrf" value="([^"]+)">',
            second,
        )
        action = re.search(r'form="retire" formaction="([^"]+)"', second)
        assert csrf is not None and action is not None
        assert action.group(1) == f"/skills/long/annotations/{ids[ANNOTATIONS_SHOWN]}/retire"
        done = browser.post(action.group(1), data={"csrf": csrf.group(1)})
        assert done.status_code == 303, done.text
    with served.client() as c:
        left = [a["id"] for a in c.get("/v1/skills/long/annotations").json()]
    assert ids[ANNOTATIONS_SHOWN] not in left and len(left) == len(ids) - 1


def test_a_review_rows_buttons_post_the_lists_one_form(served: Served) -> None:
    """Each row of the review was a form of its own (five hidden fields): the list is one form
    now, and a row's button names its suggestion, as `suggestion` (confirm) or `dismiss`."""
    with served.client() as c:
        _create(c, "rows", synthetic_spec(40), "rows.json")
        before = c.get("/v1/skills/rows/suggestions").json()
        cookie = c.get(f"/sign-in?token={served.token}", follow_redirects=False).cookies
    deletes = [s["id"] for s in before["groups"]["deletes"]]
    with httpx.Client(base_url=served.base, cookies=cookie, timeout=60) as browser:
        page = browser.get("/skills/rows/review").text
        # the sign-out form's, and each group's two: its "all" buttons' and its list's
        assert page.count('name="csrf"') == 1 + 2 * sum(1 for g in before["groups"].values() if g)
        assert f'name="dismiss" value="{deletes[0]}"' in page
        assert f'name="suggestion" value="{deletes[1]}"' in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        for field, sid in (("dismiss", deletes[0]), ("suggestion", deletes[1])):
            done = browser.post("/skills/rows/review", data={"csrf": csrf.group(1), field: sid})
            assert done.status_code == 303, done.text
    with served.client() as c:
        after = c.get("/v1/skills/rows/suggestions").json()
        gates = [a["target"] for a in c.get("/v1/skills/rows/annotations").json()]
    assert after["remaining"] == before["remaining"] - 2
    left = {s["id"] for s in after["groups"]["deletes"]}
    assert not {deletes[0], deletes[1]} & left and len(gates) == 1
