"""#57.4: a number that is not known is a gap, not a value. `skillpress_approvals_waiting` is
serve's alone (a worker exported 0 for it) and is absent while the records do not answer (serve
exported -1, which Prometheus stored as a count)."""

from __future__ import annotations

import re

from skillpress.platform.metrics import approvals_waiting_from, exposition


def _waiting(text: str) -> list[str]:
    return re.findall(r"^skillpress_approvals_waiting .*$", text, re.M)


def test_approvals_waiting_is_absent_until_counted_and_while_the_records_are_down() -> None:
    said: list[int | None] = [3]
    approvals_waiting_from(lambda: said[0])
    assert _waiting(exposition().decode()) == ["skillpress_approvals_waiting 3.0"]
    said[0] = None  # the records do not answer
    assert _waiting(exposition().decode()) == []
    said[0] = 0
    assert _waiting(exposition().decode()) == ["skillpress_approvals_waiting 0.0"]
    approvals_waiting_from(lambda: 7)  # serve started again in this process: one series
    assert _waiting(exposition().decode()) == ["skillpress_approvals_waiting 7.0"]
