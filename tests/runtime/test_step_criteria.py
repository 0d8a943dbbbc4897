"""A step's success tests on its answer's body (#45.5), as Arazzo's successCriteria write them:
comparisons, regex and jsonpath tests, read from workflows.yaml and Arazzo and written back the
same way."""

from __future__ import annotations

from typing import Any

import pytest

from skillpress.runtime.workflows.criteria import (
    CriterionRefused,
    body_test,
    from_criterion,
    to_criterion,
    to_entry,
)
from skillpress.runtime.workflows.model import StepRules

ANSWER = {"status": "approved", "id": "app-7", "count": 3, "items": [{"ok": False}], "none": None}


@pytest.mark.parametrize(
    ("entry", "holds"),
    [
        ("$response.body#/status == 'approved'", True),
        ('$response.body#/status != "approved"', False),
        ("$response.body#/count >= 3", True),
        ("$response.body#/count < 3", False),
        ("$response.body#/status > 3", False),  # an order of a string and a number: not held
        ("$response.body#/none == null", True),
        ("$response.body#/missing == null", True),  # not there is null, as runners read it
        ({"context": "$response.body", "jsonpath": "$.missing != null"}, False),
        ("$response.body#/items/0/ok == false", True),
        ({"context": "$response.body#/id", "regex": "^app-[0-9]+$"}, True),
        ({"context": "$response.body#/count", "regex": "3"}, False),  # a regex tests a string
        ({"context": "$response.body", "jsonpath": "$.items[0].ok"}, True),  # there, if false
        ({"context": "$response.body", "jsonpath": "$.items[1]"}, False),
        # #56.1: RFC 9535 queries, as the OAI's examples write them (a filter holds when it
        # selects something: over an object, its members' values)
        ({"context": "$response.body", "jsonpath": "$.items[?@.ok == false]"}, True),
        ({"context": "$response.body", "jsonpath": "$.items[?@.ok == true]"}, False),
        ({"context": "$response.body", "jsonpath": "$[?count(@) > 0]"}, True),
        (
            {
                "context": "$response.body#/items",
                "jsonpath": "$[?count(@.ok) >= 1 && @.ok == false]",
            },
            True,
        ),
        (
            {
                "context": "$response.body#/items",
                "jsonpath": "$[?count(@.no) >= 1 || @.ok == true]",
            },
            False,
        ),
        ({"context": "$response.body", "jsonpath": "$..ok"}, True),
        ({"context": "$response.body", "jsonpath": "$[?match(@, 'app-[0-9]+')]"}, True),
    ],
)
def test_a_body_test_holds_as_arazzo_says(entry: Any, holds: bool) -> None:
    test = body_test(entry)
    assert test is not None and test.holds(ANSWER) is holds
    assert body_test(to_entry(test)) == test  # workflows.yaml, and back
    criterion = to_criterion(test)
    again = (
        body_test(criterion["condition"]) if "type" not in criterion else from_criterion(criterion)
    )
    assert again == test  # Arazzo, and back


def test_the_oai_oauth_examples_filter_reads_as_other_runners_read_it() -> None:
    """The OAI's oauth example tests a token answer with `$[?@.access_token != null]`: over an
    object, the filter runs on its members' values, and a member that is not there is Nothing,
    which is not null: so (as every RFC 9535 implementation reads it) it holds for an answer
    with any member, and not for `{}` or `[]`."""
    test = from_criterion(
        {
            "context": "$response.body",
            "condition": "$[?@.access_token != null]",
            "type": "jsonpath",
        }
    )
    assert test.holds({"access_token": "tok", "expires_in": 3600})
    assert not test.holds({})
    assert test.holds([{"access_token": "tok"}]) and test.holds([{"error": "x"}])
    assert not test.holds([]) and not test.holds([{"access_token": None}])


def test_every_test_of_a_step_must_hold() -> None:
    rules = StepRules((("==", 200),), body=(body_test("$response.body#/status == 'approved'"),))  # type: ignore[arg-type]
    assert rules.succeeded(200, ANSWER)
    assert not rules.succeeded(201, ANSWER)
    assert not rules.succeeded(200, {**ANSWER, "status": "declined"})
    assert rules.said() == "$statusCode == 200 and $response.body#/status == 'approved'"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("$response.header.Location != null", "a test is '$statusCode == 201' or"),
        ("$response.body#/status == approved", "'approved' is not a literal"),
        ({"context": "$response.body", "regex": "("}, "regex '(': missing ), unterminated"),
        ({"context": "$response.body", "jsonpath": "$[?@.ok ==]"}, "is not an RFC 9535 query"),
        ({"context": "$response.body", "jsonpath": "$.items[?@.ok = 1]"}, "is not an RFC 9535"),
        ({"context": "$request.body", "jsonpath": "$.x"}, "context: $response.body"),
    ],
)
def test_a_test_outside_what_a_step_holds_is_refused_saying_what_it_takes(
    entry: Any, said: str
) -> None:
    with pytest.raises(CriterionRefused) as refused:
        body_test(entry)
    assert said in str(refused.value)


def test_status_tests_joined_by_or_hold_when_one_does_and_travel_both_ways() -> None:
    """#56.2: `$statusCode == 200 || $statusCode == 201` (the pay-later example's create step:
    200 is "not eligible", 201 "created") is one success test that holds when either does; it
    loads from workflows.yaml, is written back to Arazzo as the same condition and read again."""
    import yaml

    from skillpress.runtime.interop.arazzo_in_parts import criterion_in
    from skillpress.runtime.workflows.step_rules import rules_of as _rules

    said = "$statusCode == 200 || $statusCode == 201"
    rules = _rules({"success": [said]}, "w step s")
    assert rules is not None and rules.either == ((("==", 200), ("==", 201)),)
    assert [rules.succeeded(s, {}) for s in (200, 201, 202, 404)] == [True, True, False, False]
    assert rules.said() == said
    assert criterion_in({"condition": "$statusCode == 200  ||$statusCode == 201"}, "w") == said
    with pytest.raises(Exception, match="`||` joins status tests"):
        _rules({"success": ["$statusCode == 200 || $response.body#/ok == true"]}, "w step s")
    assert yaml.safe_load(yaml.safe_dump({"c": said}))["c"] == said
