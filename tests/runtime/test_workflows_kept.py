"""A tool step that keeps its answer's status (`status_as`) and the headers it names
(`headers_as`, #56.3): an `if` goes on the status, a later step sends the header, the run's
record keeps only the headers named (a secret one redacted), and a resumed run reads both back
from the record instead of sending again."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.runtime.calling.calls import CallSetup, closed_gate
from skillpress.runtime.package.model import Skill
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.run import WorkflowRefused, run_workflow
from skillpress.runtime.workflows.run_log import REDACTED, RunLog
from skillpress.runtime.workflows.steps import placed_step
from tests.fake_api import FakeApi, Reply, Seen
from tests.runtime.test_arazzo_as_written import SHOP

FLOW = """workflows:
  - name: open
    execution: hardened
    parameters:
      type: object
      properties: {customer: {type: string}}
      required: [customer]
    steps:
      - id: make
        tool: create_cart
        args: {X-Channel: web, customerId: "{{customer}}"}
        status_as: made
        headers_as: {where: Location, session: X-Session-Token, absent: X-Nothing}
      - id: fresh
        if: made == 201
        then:
          - {id: look, tool: get_cart, args: {cartId: "{{where}}", X-Channel: web}, save_as: cart}
          - {id: done, return: {id: "{{cart.id}}", absent: "{{absent}}"}}
        else:
          - {id: known, return: {known: true}}
"""


def _shop(url: str) -> tuple[Skill, dict[str, bytes]]:
    spec = dict(SHOP, servers=[{"url": url}])
    files = dict(derive_package(yaml.safe_dump(spec).encode(), DeriveOptions(slug="shop")).files)
    return load_skill(files), files


def _api() -> FakeApi:
    def answer(request: Seen) -> Reply:
        if request.method == "POST":
            known = b"old" in request.body
            headers = {"Location": "c-9", "X-Session-Token": "s3cret"}
            return Reply(200 if known else 201, {"id": "c-9"}, headers)
        return Reply(200, {"id": request.route.rsplit("/", 1)[-1]})

    return FakeApi(answer)


def test_a_step_keeps_its_status_and_the_headers_it_names_and_a_resumed_run_reads_them_back() -> (
    None
):
    api = _api()
    try:
        skill, files = _shop(api.url)
        flows = load_workflows({**files, "workflows.yaml": FLOW.encode()}, skill)
        log = RunLog()

        def call(step: str, tool: Any, given: dict[str, Any], owner: Skill, rules: Any) -> Any:
            return placed_step(step, tool, given, owner, CallSetup(), closed_gate, log, rules)

        ran = run_workflow(flows, "open", {"customer": "new"}, skill, call)
        # 201: the way on, to the cart the header names; a header never answered is null
        assert ran.result == {"id": "c-9", "absent": None}
        assert [(r.method, r.route) for r in api.seen] == [
            ("POST", "/carts"),
            ("GET", "/carts/c-9"),
        ]
        make = log.steps[0]
        assert (make.status, make.headers) == (
            201,
            {"location": "c-9", "x-session-token": REDACTED},
        )
        # resumed from its record: nothing sent again, the status and the header read back
        again = RunLog(prior=log.steps)

        def resumed(step: str, tool: Any, given: dict[str, Any], owner: Skill, rules: Any) -> Any:
            return placed_step(step, tool, given, owner, CallSetup(), closed_gate, again, rules)

        assert run_workflow(flows, "open", {"customer": "new"}, skill, resumed).result == {
            "id": "c-9",
            "absent": None,
        }
        assert len(api.seen) == 2
        ran = run_workflow(flows, "open", {"customer": "old"}, skill, call)
        assert ran.result == {"known": True}  # 200: the other way
    finally:
        api.close()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            ("headers_as: {where: Location, ", "headers_as: {where: Bad Header, "),
            "workflows.yaml: open step make: headers_as 'where': 'Bad Header': a name of letters,"
            " digits and '_', and a header's name",
        ),
        (
            ("status_as: made", "status_as: customer"),
            "workflows.yaml: open step make: status_as 'customer' is used already; name it anew",
        ),
        (
            ("status_as: made", "status_as: 2x"),
            "workflows.yaml: open step make: status_as '2x': letters, digits and '_'",
        ),
    ],
)
def test_what_a_step_keeps_is_refused_when_it_could_not_be_read(
    change: tuple[str, str], said: str
) -> None:
    skill, files = _shop("https://shop.example.test")
    text = FLOW.replace(*change)
    with pytest.raises(WorkflowRefused) as refused:
        load_workflows({**files, "workflows.yaml": text.encode()}, skill)
    assert str(refused.value) == said
