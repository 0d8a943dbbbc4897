"""A run's record as pure data: what is redacted, what a resumed run replays and what it
refuses to replay, and how big an answer it keeps."""

from __future__ import annotations

import pytest

from skillpress.runtime.workflows.run_log import (
    MAX_ANSWER_BYTES,
    REDACTED,
    ReplayRefused,
    RunLog,
    StepRecord,
    redact,
)


def test_fields_named_like_secrets_and_known_secret_values_are_redacted() -> None:
    given = {
        "name": "Rex",
        "password": "hunter2",
        "nested": [{"access_token": "t-1", "tokens_left": 3, "note": "key sk-9 inside"}],
        "X-Api-Key": "k",
        "clientSecret": "c",
        "private_key": "p",
        "keyword": "not a secret",
        "empty_secret": "",
    }
    assert redact(given, ("sk-9",)) == {
        "name": "Rex",
        "password": REDACTED,
        "nested": [{"access_token": REDACTED, "tokens_left": 3, "note": REDACTED}],
        "X-Api-Key": REDACTED,
        "clientSecret": REDACTED,
        "private_key": REDACTED,
        "keyword": "not a secret",
        "empty_secret": "",  # nothing there to hide
    }


def _sent(step: str, url: str, answer: object) -> StepRecord:
    return StepRecord(
        step, "get_it", "sent", skill="s", request={"method": "GET", "url": url}, answer=answer
    )


def test_a_resumed_run_replays_what_it_sent_only_while_each_request_is_the_same() -> None:
    prior = [_sent("a", "https://x/1", {"id": 1}), StepRecord("b", "post_it", "waiting")]
    log = RunLog(1, prior)
    assert log.replaying
    assert log.replay("a", "get_it", {"method": "GET", "url": "https://x/1"}) == {"id": 1}
    assert not log.replaying  # the waiting step is sent anew, not replayed
    other = RunLog(1, prior)
    with pytest.raises(ReplayRefused, match=r"step a would now send another request"):
        other.replay("a", "get_it", {"method": "GET", "url": "https://x/2"})
    with pytest.raises(ReplayRefused, match=r"the record's next step is a \(get_it\)"):
        RunLog(1, prior).replay("z", "get_it", {"method": "GET", "url": "https://x/1"})


def test_a_value_kept_redacted_is_never_sent_and_a_big_answer_is_not_kept() -> None:
    log = RunLog(1, [_sent("a", "https://x/1", {"token": REDACTED})])
    log.replay("a", "get_it", {"method": "GET", "url": "https://x/1"})
    with pytest.raises(ReplayRefused, match="keeps redacted"):
        log.check_sendable("b", {"auth": REDACTED})
    RunLog().check_sendable("b", {"auth": REDACTED})  # a new run sends what it is given
    seen: list[int] = []
    fresh = RunLog(2, on_change=lambda lg: seen.append(len(lg.steps)))
    big = _sent("a", "https://x/1", ["x" * 1000] * (MAX_ANSWER_BYTES // 1000 + 1))
    fresh.add(big, fresh.started()[1])
    assert not big.answer_kept and str(big.answer).endswith("bytes: not kept)") and seen == [1]
    with pytest.raises(ReplayRefused, match="too big to keep"):
        RunLog(3, [big]).replay("a", "get_it", {"method": "GET", "url": "https://x/1"})
    assert StepRecord.from_dict({**big.as_dict(), "later_field": 1}) == big
