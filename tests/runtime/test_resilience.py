"""Calls that survive real APIs, against a local server that misbehaves on purpose: retries
that cannot double a write, Retry-After honoured up to a bound, deadlines that hold while
headers drip, a gzip bomb stopped at the limit, the rate limit shown, no credential echoed."""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from skillpress.runtime.calling.calls import CallSetup, place_call
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits, send
from skillpress.runtime.calling.request import ExecutionFailed
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.model import AuthHeader, Skill
from skillpress.runtime.package.skill import load_skill


def _bomb() -> bytes:
    """50 MB of zeros, gzip-compressed a megabyte at a time (the server never holds them)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"0" * 1_000_000
    return b"".join(packer.compress(block) for _ in range(50)) + packer.flush()


class _Unruly:
    """Answers by path: `/flaky/KEY` 429 (Retry-After: 1) the first time, then 200; `/busy` 503
    with an HTTP-date an hour away; `/reset` reads the request and closes without answering;
    `/drip` sends a header line a second; `/bomb` a gzip bomb; `/limited` rate-limit headers."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.seen[(self.command, self.path)] += 1
                count = outer.seen[(self.command, self.path)]
                if self.path.startswith("/flaky/"):
                    if count == 1:
                        return self._send(429, {"error": "slow down"}, {"Retry-After": "1"})
                    return self._send(200, {"ok": True, "try": count})
                if self.path == "/busy":
                    later = formatdate(time.time() + 3600, usegmt=True)
                    return self._send(503, {"error": "maintenance"}, {"Retry-After": later})
                if self.path == "/reset":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return None
                if self.path == "/drip":
                    self.send_response(200)
                    for n in range(30):
                        self.wfile.write(f"X-Drip-{n}: {n}\r\n".encode())
                        self.wfile.flush()
                        time.sleep(1)
                    return None
                if self.path == "/bomb":
                    bomb = _bomb()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(bomb)))
                    self.end_headers()
                    self.wfile.write(bomb)
                    return None
                if self.path == "/many":
                    items = [
                        {"id": n, "name": f"item {n}", "note": "x" * 60} for n in range(20_000)
                    ]
                    return self._send(200, {"data": items, "has_more": True})
                if self.path == "/page":
                    html = b"<!doctype html><html><head><title>Sign in</title></head><body><p>Hello</p></body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(html)))
                    self.end_headers()
                    self.wfile.write(html)
                    return None
                if self.path == "/limited":
                    return self._send(
                        200,
                        [],
                        {
                            "RateLimit-Limit": "100",
                            "RateLimit-Remaining": "0",
                            "RateLimit-Reset": "30",
                            "Set-Cookie": "s=1",
                        },
                    )
                return self._send(404, {"error": "no"})

            def _send(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(value).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def unruly() -> Iterator[_Unruly]:
    server = _Unruly()
    yield server
    server.close()


def _skill(url: str) -> Skill:
    files = {
        "read.md": f"---\noperation:\n  method: GET\n  url: {url}/{{kind}}/{{key}}\n---\n\n# read\n\nR.\n",
        "get_any.md": f"---\noperation:\n  method: GET\n  url: {url}/{{kind}}\n---\n\n# get_any\n\nG.\n",
        "create.md": (
            f"---\noperation:\n  method: POST\n  url: {url}/{{kind}}/{{key}}\n  body: [name]\n"
            "identity: [name]\n---\n\n# create\n\nC.\n"
        ),
        "write.md": (
            f"---\noperation:\n  method: POST\n  url: {url}/{{kind}}/{{key}}\n  body: [name]\n"
            "---\n\n# write\n\nW.\n"
        ),
        "post_any.md": f"---\noperation:\n  method: POST\n  url: {url}/{{kind}}\n  body: [name]\n---\n\n# post_any\n\nP.\n",
    }
    return load_skill({k: v.encode() for k, v in files.items()}, slug="unruly")


def _call(skill: Skill, op: str, args: dict[str, Any], **limits: Any) -> Any:
    waits: list[float] = []
    request = build_request(skill.tool(op), args, skill.hosts)
    result = send(request, limits=CallLimits(**limits), sleep=waits.append)
    return result, waits


def test_a_read_and_an_identity_keyed_write_succeed_on_the_second_try(unruly: _Unruly) -> None:
    skill = _skill(unruly.url)
    got, waits = _call(skill, "read", {"kind": "flaky", "key": "r"})
    assert (got.status, got.tries, waits) == (200, 2, [1.0])
    assert got.as_dict()["tries"] == 2 and got.as_dict()["waited"] == 1.0
    made, waits = _call(skill, "create", {"kind": "flaky", "key": "c", "name": "x"})
    assert (made.status, made.tries, waits) == (200, 2, [1.0])
    assert unruly.seen[("POST", "/flaky/c")] == 2  # the same Idempotency-Key both times


def test_a_plain_write_is_sent_once_and_says_why_it_was_not_retried(unruly: _Unruly) -> None:
    skill = _skill(unruly.url)
    got, waits = _call(skill, "write", {"kind": "flaky", "key": "w", "name": "x"})
    assert (got.status, got.tries, waits) == (429, 1, [])
    shown = got.as_dict()
    assert shown["not_retried"].startswith("a POST without an Idempotency-Key is never sent twice")
    assert "retry_at" in shown
    assert unruly.seen[("POST", "/flaky/w")] == 1


def test_a_retry_after_past_the_bound_says_when_to_try_again(unruly: _Unruly) -> None:
    skill = _skill(unruly.url)
    got, waits = _call(skill, "get_any", {"kind": "busy"}, max_wait=10.0)
    assert (got.status, waits) == (503, [])
    when = datetime.fromisoformat(got.as_dict()["retry_at"].replace("Z", "+00:00"))
    assert 3500 < when.timestamp() - time.time() <= 3600  # the hour the server asked for
    assert got.as_dict()["rate_limit"]["retry_after"].endswith("GMT")


def test_a_connection_reset_after_sending_is_not_retried_for_a_write(unruly: _Unruly) -> None:
    skill = _skill(unruly.url)
    with pytest.raises(ExecutionFailed, match="not tried again: a POST without an Idempotency-Key"):
        _call(skill, "post_any", {"kind": "reset", "name": "x"})
    assert unruly.seen[("POST", "/reset")] == 1
    with pytest.raises(ExecutionFailed):
        _call(skill, "get_any", {"kind": "reset"}, retries=2, max_wait=5)
    assert unruly.seen[("GET", "/reset")] == 3  # a read is safe to try again


def test_the_whole_exchange_is_bounded_headers_included_and_a_gzip_bomb_stops_at_the_limit(
    unruly: _Unruly,
) -> None:
    import resource

    skill = _skill(unruly.url)
    started = time.monotonic()
    with pytest.raises(ExecutionFailed, match="no answer within 2 s"):
        _call(skill, "get_any", {"kind": "drip"}, timeout=2.0, retries=0)
    assert time.monotonic() - started < 20  # a hang guard: the drip never ends by itself
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    got, _ = _call(skill, "get_any", {"kind": "bomb"}, max_response_bytes=100_000)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert got.truncated and got.body == b"0" * 100_000
    assert after - before < 30_000  # KiB: the 50 MB behind it were never inflated


def test_the_rate_limit_comes_back_and_the_credential_never_does(unruly: _Unruly) -> None:
    skill = _skill(unruly.url)
    got, _ = _call(skill, "get_any", {"kind": "limited"})
    shown = got.as_dict(for_agent=True)
    assert shown["rate_limit"] == {"limit": 100, "remaining": 0, "reset": 30}
    assert "set-cookie" not in shown["headers"]
    # a key read from a file with its line end: stripped, and never in an error's text
    setup = CallSetup(
        credential=Credential(AuthHeader("X-Key", "apiKey"), "K"),
        environ={"K": "sk-secret-value\r\n"},
        limits=CallLimits(retries=0),
    )
    done = place_call(skill.tool("get_any"), {"kind": "limited"}, skill.hosts, setup, skill="s")
    assert done.result is not None and done.result.status == 200
    bad = CallSetup(
        credential=Credential(AuthHeader("X-Key", "apiKey"), "K"),
        environ={"K": "sk-secret\nvalue"},
        limits=CallLimits(retries=0),
    )
    with pytest.raises(ExecutionFailed) as failed:
        place_call(skill.tool("get_any"), {"kind": "limited"}, skill.hosts, bad, skill="s")
    assert "secret" not in str(failed.value) and "<credential>" in str(failed.value)


def test_a_large_json_answer_reaches_an_agent_as_valid_smaller_json_saying_what_was_cut(
    unruly: _Unruly,
) -> None:
    skill = _skill(unruly.url)
    got, _ = _call(skill, "get_any", {"kind": "many"})
    assert len(got.body) > 1_500_000 and not got.truncated
    shown = got.as_dict(for_agent=True)
    text = json.dumps(shown["body"], separators=(",", ":"))
    assert len(text) <= 48 * 1024 and json.loads(text)["has_more"] is True
    kept = len(shown["body"]["data"])
    assert 0 < kept < 20_000
    assert shown["cut"] == [{"at": "$.data", "items_of": 20_000, "kept": kept}]
    assert shown["body"]["data"][0] == {"id": 0, "name": "item 0", "note": "x" * 60}
    page, _ = _call(skill, "get_any", {"kind": "page"})
    assert page.as_dict(for_agent=True)["body"] == {
        "html": True,
        "bytes": len(page.body),
        "title": "Sign in",
        "text": "Hello",
    }


def test_a_workflow_step_retries_only_when_safe_and_its_record_shows_each_try(
    unruly: _Unruly,
) -> None:
    from skillpress.runtime.calling.calls import closed_gate
    from skillpress.runtime.workflows.load import load_workflows
    from skillpress.runtime.workflows.run import StepFailed, run_workflow
    from skillpress.runtime.workflows.run_log import RunLog
    from skillpress.runtime.workflows.steps import placed_step

    skill = _skill(unruly.url)
    flows = load_workflows(
        {
            "workflows.yaml": b"""workflows:
  - name: read_then_write
    execution: hardened
    steps:
      - {id: fetch, tool: read, args: {kind: flaky, key: wf}, save_as: got}
      - {id: keyed, tool: create, args: {kind: flaky, key: wk, name: "try {{got.try}}"}}
      - {id: plain, tool: write, args: {kind: flaky, key: wp, name: x}}
"""
        },
        skill,
    )
    log = RunLog()

    def call(step: str, tool: Any, given: dict[str, Any], owner: Skill, rules: Any) -> Any:
        setup = CallSetup(limits=CallLimits(retries=2, max_wait=5))
        return placed_step(step, tool, given, owner, setup, closed_gate, log, rules)

    with pytest.raises(StepFailed, match=r"step plain failed: write answered 429"):
        run_workflow(flows, "read_then_write", {}, skill, call)
    fetch, keyed, plain = log.steps
    # a read and an identity-keyed write: tried again after the Retry-After asked for
    assert fetch.tries == [{"status": 429, "then_waited": 1.0}, {"status": 200}]
    assert (fetch.outcome, fetch.waited, fetch.answer) == ("sent", 1.0, {"ok": True, "try": 2})
    assert keyed.tries == [{"status": 429, "then_waited": 1.0}, {"status": 200}]
    assert keyed.request is not None and "Idempotency-Key" in keyed.request["headers"]
    # a plain write: sent once, and the record says it stopped there
    assert (plain.outcome, plain.status, plain.tries) == ("failed", 429, [{"status": 429}])
    assert unruly.seen[("POST", "/flaky/wp")] == 1 and unruly.seen[("POST", "/flaky/wk")] == 2
    assert fetch.ms >= 1000 > plain.ms


def test_a_step_of_its_own_succeeds_on_the_statuses_it_names_and_retries_only_when_safe(
    unruly: _Unruly,
) -> None:
    from skillpress.runtime.calling.calls import closed_gate
    from skillpress.runtime.workflows.load import load_workflows
    from skillpress.runtime.workflows.model import StepRules, WorkflowRefused
    from skillpress.runtime.workflows.run import StepFailed, run_workflow
    from skillpress.runtime.workflows.run_log import RunLog
    from skillpress.runtime.workflows.steps import placed_step

    skill = _skill(unruly.url)
    flows = load_workflows(
        {
            "workflows.yaml": b"""workflows:
  - name: own_rules
    execution: hardened
    steps:
      - {id: fetch, tool: read, args: {kind: flaky, key: sr}, success: ["$statusCode == 200"],
         retry: {limit: 1, after: 0.2}}
      - {id: plain, tool: write, args: {kind: flaky, key: pw, name: x}}
  - name: wants_created
    execution: hardened
    steps:
      - {id: limited, tool: get_any, args: {kind: limited}, success: ["$statusCode == 201"]}
"""
        },
        skill,
    )
    log, waits = RunLog(), []

    def call(step: str, tool: Any, given: dict[str, Any], owner: Skill, rules: Any = None) -> Any:
        setup = CallSetup(limits=CallLimits(retries=0))  # only the step's own retry
        return placed_step(step, tool, given, owner, setup, closed_gate, log, rules, waits.append)

    with pytest.raises(StepFailed) as stopped:
        run_workflow(flows, "own_rules", {}, skill, call)
    fetch, plain = log.steps
    assert fetch.tries == [{"status": 429, "then_waited": 0.2}, {"status": 200}]
    assert (fetch.outcome, fetch.waited, waits) == ("sent", 0.2, [0.2])
    assert plain.tries == [{"status": 429}] and unruly.seen[("POST", "/flaky/pw")] == 1
    # a retry on the plain write is refused where it is written (#54.3); and whatever rules a
    # step is given, the runtime never sends a plain write twice
    with pytest.raises(WorkflowRefused, match="retry: write is a POST with no identity"):
        load_workflows(
            {
                "workflows.yaml": b"""workflows:
  - name: plain
    execution: hardened
    steps:
      - {id: plain, tool: write, args: {kind: flaky, key: pw, name: x}, retry: {limit: 2}}
"""
            },
            skill,
        )
    with pytest.raises(StepFailed) as stopped:
        call(
            "plain",
            skill.tool("write"),
            {"kind": "flaky", "key": "pw2", "name": "x"},
            skill,
            StepRules(retry_limit=2),
        )
    assert unruly.seen[("POST", "/flaky/pw2")] == 1
    assert str(stopped.value).endswith(
        "not tried again: a POST without an Idempotency-Key might be done twice"
    )
    with pytest.raises(StepFailed, match=r"answered 200 \(it succeeds on \$statusCode == 201\)"):
        run_workflow(flows, "wants_created", {}, skill, call)


def test_a_retry_for_some_statuses_tries_again_only_on_those(unruly: _Unruly) -> None:
    """`retry: {when: [...]}` (an Arazzo retry's criteria on the status): a read answered 429
    is tried again when the retry is for 429, and not when it is for 503 only."""
    from skillpress.runtime.calling.calls import closed_gate
    from skillpress.runtime.workflows.load import load_workflows
    from skillpress.runtime.workflows.run import StepFailed, run_workflow
    from skillpress.runtime.workflows.run_log import RunLog
    from skillpress.runtime.workflows.steps import placed_step

    skill = _skill(unruly.url)
    flows = load_workflows(
        {
            "workflows.yaml": b"""workflows:
  - name: for_429
    execution: hardened
    steps:
      - {id: fetch, tool: read, args: {kind: flaky, key: w1},
         retry: {limit: 2, after: 0, when: ["$statusCode == 429"]}}
  - name: for_503
    execution: hardened
    steps:
      - {id: fetch, tool: read, args: {kind: flaky, key: w2},
         retry: {limit: 2, after: 0, when: ["$statusCode >= 500"]}}
"""
        },
        skill,
    )
    log = RunLog()

    def call(step: str, tool: Any, given: dict[str, Any], owner: Skill, rules: Any) -> Any:
        setup = CallSetup(limits=CallLimits(retries=0, max_wait=5))
        return placed_step(step, tool, given, owner, setup, closed_gate, log, rules)

    assert run_workflow(flows, "for_429", {}, skill, call).result == {"ok": True, "try": 2}
    with pytest.raises(StepFailed, match=r"step fetch failed: read answered 429"):
        run_workflow(flows, "for_503", {}, skill, call)
    assert [len(r.tries) for r in log.steps] == [2, 1]
    assert unruly.seen[("GET", "/flaky/w1")] == 2 and unruly.seen[("GET", "/flaky/w2")] == 1
