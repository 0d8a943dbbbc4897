"""When a tool step of workflows.yaml succeeds and how often it is tried again (`success`,
`retry`), read into its StepRules: status tests (several joined by `||`, one of which must hold),
tests of the answer's body, and a retry's bounds."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skillpress.format.keys import unknown_keys
from skillpress.runtime.workflows.criteria import BodyTest, CriterionRefused, body_test
from skillpress.runtime.workflows.model import StepRules
from skillpress.runtime.workflows.scope import _refuse

__all__ = ["MAX_RETRY_AFTER", "MAX_RETRY_LIMIT", "STATUS", "rules_of"]

MAX_RETRY_LIMIT, MAX_RETRY_AFTER = 10, 60.0

STATUS = re.compile(r"^\$statusCode\s*(==|!=|<=|>=|<|>)\s*([1-5][0-9]{2})$")


def _either(cond: str, where: str) -> tuple[tuple[str, int], ...]:
    """Status tests joined by `||`: one of them must hold."""
    parts = [STATUS.match(part.strip()) for part in cond.split("||")]
    if not all(parts):
        raise _refuse(where, f"success {cond!r}: `||` joins status tests ('$statusCode == 201')")
    return tuple((p.group(1), int(p.group(2))) for p in parts if p)


def rules_of(
    item: Mapping[str, Any],
    where: str,
    keep_status: bool = False,
    keep_headers: tuple[str, ...] = (),
) -> StepRules | None:
    """A tool step's success tests and retry, and whether its call gives back its status and
    which headers (lowercase), as its `status_as` and `headers_as` say (None: a status below
    400, no retry, the body alone)."""
    raw_success = item.get("success")
    success: list[tuple[str, int]] = []
    body: list[BodyTest] = []
    either: list[tuple[tuple[str, int], ...]] = []
    if raw_success is not None:
        given = raw_success if isinstance(raw_success, list) else [raw_success]
        for cond in given:
            m = STATUS.match(cond.strip()) if isinstance(cond, str) else None
            if m is not None:
                success.append((m.group(1), int(m.group(2))))
                continue
            if isinstance(cond, str) and "||" in cond:
                either.append(_either(cond, where))
                continue
            try:
                test = body_test(cond)
            except CriterionRefused as exc:
                raise _refuse(where, f"success {exc}") from None
            if test is None:
                raise _refuse(
                    where, f"success {cond!r}: a status test is like '$statusCode == 201'"
                )
            body.append(test)
    limit, after, when = _retry(item.get("retry"), where)
    if not (success or body or limit or either or keep_status or keep_headers):
        return None
    return StepRules(
        tuple(success),
        limit,
        float(after),
        tuple(body),
        tuple(either),
        keep_status,
        keep_headers,
        when,
    )


def _retry(retry: Any, where: str) -> tuple[int, float, tuple[tuple[str, int], ...]]:
    """`retry: {limit, after, when}` as (further tries, seconds between, the status tests a
    retry is for: `when: ["$statusCode == 503"]`); (0, 0.0, ()) when none."""
    limit, after = 0, 0.0
    when: list[tuple[str, int]] = []
    if retry is not None:
        unknown = unknown_keys(retry, ("limit", "after", "when")) if isinstance(retry, dict) else ""
        if not isinstance(retry, dict) or unknown:
            raise _refuse(
                where,
                f"retry is {{limit: N, after: SECONDS, when: [STATUS TESTS]}}"
                f"{f' ({unknown})' if unknown else ''}",
            )
        for said in retry.get("when") or []:
            m = STATUS.match(said.strip()) if isinstance(said, str) else None
            if m is None:
                raise _refuse(
                    where, f"retry.when {said!r}: a status test, like '$statusCode == 503'"
                )
            when.append((m.group(1), int(m.group(2))))
        limit, after = retry.get("limit", 1), retry.get("after", 1.0)
        if (
            not isinstance(limit, int)
            or isinstance(limit, bool)
            or not 1 <= limit <= MAX_RETRY_LIMIT
        ):
            raise _refuse(
                where, f"retry.limit {limit!r}: a whole number from 1 to {MAX_RETRY_LIMIT}"
            )
        if (
            not isinstance(after, int | float)
            or isinstance(after, bool)
            or not 0 <= after <= MAX_RETRY_AFTER
        ):
            raise _refuse(where, f"retry.after {after!r}: seconds from 0 to {MAX_RETRY_AFTER:g}")
    return limit, float(after), tuple(when)
