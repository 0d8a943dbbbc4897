"""`skillpress call`: an operation of a package, translated and (unless a dry run) sent; the
options, loading and gate `run` (`run_commands`) and `mcp` (`mcp_commands`) share."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillpress.cli.common import (
    fail,
    failures,
    open_ctx,
    say_base_url,
    settings,
)

if TYPE_CHECKING:  # the runtime (jsonschema, httpx) loads only when a command runs
    from skillpress.app.serving.gatekeepers import Desk
    from skillpress.runtime.calling.calls import CallSetup, Gatekeeper, Placed
    from skillpress.runtime.calling.execute import CallLimits
    from skillpress.runtime.calling.gates import GateCheck
    from skillpress.runtime.calling.results import CallResult
    from skillpress.runtime.package.model import Skill, Tool
    from skillpress.runtime.workflows.run_log import RunJournal

__all__ = ["register"]

AUTH_KINDS = ("apiKey", "bearer", "basic")  # as app.calling.AUTH_KINDS (not imported for --help)

PackageDir = Annotated[
    Path,
    typer.Argument(help="a skill package directory (derived, or hand-written operation files)"),
]
AuthEnv = Annotated[
    str | None,
    typer.Option(
        "--auth-env",
        help="environment variable holding the credential (default: the one chosen at import, else <SLUG>_API_KEY)",
    ),
]
AuthHeaderOpt = Annotated[
    str | None,
    typer.Option(
        "--auth-header",
        help="header the credential goes in (default: the skill's, from skill.json)",
    ),
]
AuthKind = Annotated[
    str,
    typer.Option("--auth-kind", help="apiKey (value as is) | bearer | basic, with --auth-header"),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="print the request as JSON instead of sending it")
]
Approve = Annotated[
    bool,
    typer.Option(
        "--approve",
        help="you approve this exact call to a gated operation, as the operator whose token SKILLPRESS_OPERATOR_TOKEN holds (recorded, said on stderr)",
    ),
]
RunApprove = Annotated[
    bool,
    typer.Option(
        "--approve",
        help="you approve every gated call this run makes, as the operator whose token SKILLPRESS_OPERATOR_TOKEN holds (each recorded, said on stderr), including values a step computes from an earlier answer, which no one has seen before it runs: --dry-run first lists each gated step and which of its values wait for an answer",
    ),
]
ApprovalWait = Annotated[
    float,
    typer.Option(
        "--approval-timeout",
        help="seconds to wait for a person to approve a gated call (skillpress approve ID)",
    ),
]
Timeout = Annotated[float, typer.Option("--timeout", help="seconds for the whole exchange")]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="where the API is: every request goes there (a mock, a proxy, a region; said on stderr), and a skill whose URLs are paths needs one",
    ),
]
MaxBytes = Annotated[
    int, typer.Option("--max-response-bytes", help="read at most this much of the response")
]
Retries = Annotated[
    int,
    typer.Option(
        "--retries",
        help="tries after the first for a call safe to repeat (a read, or a write with an identity) on 429/502/503/504 or a failed connection",
    ),
]
MaxWait = Annotated[
    float, typer.Option("--max-wait", help="seconds waited in all between tries (Retry-After)")
]
FilesDir = Annotated[
    Path | None,
    typer.Option(
        "--files-dir",
        help="the folder a file argument's path may name a file under (default: the current one)",
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="print status, headers and body as one JSON object")
]


def loaded(
    package_dir: Path, auth_header: str | None, auth_kind: str, base_url: str | None
) -> tuple[Skill, Mapping[str, bytes]]:
    from skillpress.app.base.package_dir import OutputDirError
    from skillpress.app.serving.calling import open_package
    from skillpress.runtime.package.model import PackageError

    if auth_kind not in AUTH_KINDS:
        fail(f"--auth-kind {auth_kind!r}: choose one of {', '.join(AUTH_KINDS)}")
    try:
        skill, files = open_package(package_dir, auth_header, auth_kind, base_url)
    except (OutputDirError, PackageError) as exc:
        fail(str(exc))
    say_base_url(skill, base_url)
    return skill, files


def _print_result(result: CallResult, as_json: bool, output: Path | None = None) -> None:
    """A result as a person reads it: its status, then its body (JSON indented, text as it is).
    `--output FILE` writes the body's bytes there; a binary body goes to a redirected standard
    output as its exact bytes (as curl does, the status on standard error) and is described on
    a terminal."""
    binary = result.binary()
    if output is not None:
        output.write_bytes(result.body)
        typer.echo(
            f"HTTP {result.status}: {len(result.body):,} bytes written to {output}", err=True
        )
    elif binary is not None and not as_json:
        if sys.stdout.isatty():
            typer.echo(f"HTTP {result.status}")
            typer.echo(
                f"(a {binary['content_type']} body of {binary['bytes']:,} bytes: --output FILE"
                " writes it, or redirect standard output)"
            )
        else:
            typer.echo(f"HTTP {result.status}", err=True)
            sys.stdout.buffer.write(result.body)
            sys.stdout.buffer.flush()
    elif as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(
            f"HTTP {result.status}"
            + (
                " (redirect not followed: " + result.headers.get("location", "") + ")"
                if 300 <= result.status < 400
                else ""
            )
        )
        value = result.body_value()
        if value not in ("", None):
            typer.echo(
                value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
            )
        if result.truncated:
            typer.echo(f"(response cut at {len(result.body):,} bytes)", err=True)
        if result.next is not None:
            typer.echo(f"next page: {_next_options(result.next)}", err=True)
        if result.next_refused:
            typer.echo(f"no next page: {result.next_refused}", err=True)
    if result.status >= 400:
        raise typer.Exit(1)


def _next_options(found: dict[str, Any]) -> str:
    """The options that fetch the next page, as a person would type them."""
    if "arguments" in found:
        shown = json.dumps(found["arguments"], ensure_ascii=False, separators=(",", ":"))
        return "--args " + shlex.quote(shown)
    return "--page-url " + shlex.quote(str(found["page_url"]))


def _all_pages(
    first: Placed, place: Callable[[Any, str | None], Placed], args: Any, max_pages: int, cap: int
) -> None:
    """Follow `next` from `first` up to `max_pages` pages and `cap` bytes of bodies in all; one
    JSON object: every page's result, why it stopped, and the next page when it stopped early."""
    pages = [first]
    size = len(first.result.body) if first.result else 0
    stopped = None
    while True:
        result = pages[-1].result
        assert result is not None
        found = result.next
        if found is None or result.status >= 400:
            break
        if len(pages) >= max_pages:
            stopped = f"--max-pages {max_pages}"
            break
        if size >= cap:
            stopped = f"--max-response-bytes {cap:,} in all"
            break
        if "arguments" in found:
            args, page_url = found["arguments"], None
        else:
            page_url = str(found["page_url"])
        pages.append(place(args, page_url))
        size += len(pages[-1].result.body) if pages[-1].result else 0
    last = pages[-1].result
    assert last is not None
    out: dict[str, Any] = {
        "pages": len(pages),
        "results": [p.result.as_dict() for p in pages if p.result],
    }
    if stopped:
        out["stopped_at"] = stopped
        out["next"] = last.next
    typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
    if last.status >= 400:
        raise typer.Exit(1)


def who_runs() -> str:
    """The person at this terminal, by their login name."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this user id
        return f"uid {os.getuid()}"


def terminal_gate(skill: Skill, approve: bool, wait: float) -> Gatekeeper:
    """A gated call goes only with a person's approval (or under the gate's `auto_below`), and
    every decision is recorded: `--approve` here, or a request another person grants (waited for
    up to `wait` seconds)."""
    from skillpress.app.base.roles import OPERATOR_TOKEN_ENV, operator_for
    from skillpress.app.serving.gatekeepers import NOT_HERE, desk_opener, terminal_gatekeeper
    from skillpress.errors import Refused

    def approver() -> str | None:
        if not approve:
            return None
        with failures():
            if settings().approvals_url:  # a flag this face cannot honour is refused
                raise Refused(NOT_HERE)
            return operator_for(settings(), os.environ.get(OPERATOR_TOKEN_ENV))

    def say(line: str) -> None:
        typer.echo(line, err=True)

    def desk() -> Desk:  # settings read at the first gate, not for every call
        return desk_opener(settings().approvals_url, open_ctx)()

    decide = terminal_gatekeeper(desk, skill.slug, who_runs(), approver, wait, say)

    def gate(check: GateCheck) -> None:
        with failures_of_the_records():
            decide(check)

    return gate


@contextlib.contextmanager
def failures_of_the_records() -> Iterator[None]:
    """What goes wrong while a gate is decided (the records unreachable, a request refused) ends
    the command in one line; a gate that stays closed (GateClosed) is the caller's to handle (a
    run records it)."""
    from skillpress.runtime.calling.calls import GateClosed

    try:
        yield
    except GateClosed:
        raise
    except Exception as exc:  # noqa: BLE001 (failures() says each in one line, or re-raises)
        with failures():
            raise exc


def placed_call(
    skill: Skill,
    tool: Tool,
    args: Any,
    setup: CallSetup,
    *,
    dry_run: bool,
    approve: bool,
    wait: float,
    as_json: bool,
    page_url: str | None = None,
    all_pages: int = 0,
    output: Path | None = None,
    kept: RunJournal | None = None,
) -> None:
    """One call from the command line: refused (exit 2) before anything is sent when its
    arguments are wrong; a dry run prints the request; a gated call waits for its approval;
    with `all_pages` (a page cap), its next pages followed; `kept`: kept as a run of one step
    (a slash line's call), as a workflow's calls are."""
    from skillpress.runtime.calling.calls import GateClosed, place_call, prepare_call
    from skillpress.runtime.calling.request import CallRefused, ExecutionFailed
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.workflows.steps import kept_call

    try:
        placed = prepare_call(tool, args, skill.hosts, setup, page_url)  # refused before asking
        if dry_run:
            if placed.gate is not None:
                typer.echo(
                    f"gated: sending it needs an approval ({placed.gate.describe()})", err=True
                )
            typer.echo(json.dumps(placed.shown_request(setup), indent=2, ensure_ascii=False))
            return
        credential = setup.credential
        if credential is not None and not credential.present(setup.environ or os.environ):
            typer.echo(
                f"warning: {credential.where()} is not set; sending without {credential.auth.header}",
                err=True,
            )
        gate = terminal_gate(skill, approve, wait)

        def place(given: Any, page: str | None) -> Placed:
            return place_call(tool, given, skill.hosts, setup, gate, page, skill=skill.slug)

        if kept is not None:
            prepared = placed
            placed = kept_call(
                kept, skill, tool, args, who_runs(), prepared, setup, lambda: place(args, page_url)
            )
        else:
            placed = place(args, page_url)
        if all_pages:
            _all_pages(placed, place, args, all_pages, setup.limits.max_response_bytes)
            return
    except (CallRefused, PackageError) as exc:
        fail(str(exc))
    except GateClosed as exc:
        fail(str(exc), 1 if exc.waits else 2)
    except ExecutionFailed as exc:
        fail(str(exc), code=1)
    assert placed.result is not None
    _print_result(placed.result, as_json, output)


def setup_of(
    skill: Skill, auth_env: str | None, limits: CallLimits, files_dir: Path | None
) -> CallSetup:
    from skillpress.app.serving.calling import call_setup

    # SKILLPRESS_FETCH_ALLOW_PRIVATE matters only to a credential's token URL: a skill that sends
    # none loads no settings
    allow_private = settings().fetch_allow_private if skill.auth is not None else False
    with failures():  # a variable the runtime may not name: one line, exit 2
        return call_setup(skill, auth_env, limits, files_dir, allow_private)


def call(
    package_dir: PackageDir,
    operation: Annotated[
        str, typer.Argument(help="the operation's manifest name or its tool name")
    ],
    args: Annotated[
        str, typer.Option("--args", help="the call's arguments as a JSON object")
    ] = "{}",
    dry_run: DryRun = False,
    approve: Approve = False,
    approval_timeout: ApprovalWait = 300.0,
    auth_env: AuthEnv = None,
    auth_header: AuthHeaderOpt = None,
    auth_kind: AuthKind = "apiKey",
    base_url: BaseUrl = None,
    timeout: Timeout = 30.0,
    max_response_bytes: MaxBytes = 4 * 1024 * 1024,
    retries: Retries = 2,
    max_wait: MaxWait = 30.0,
    files_dir: FilesDir = None,
    page_url: Annotated[
        str | None,
        typer.Option("--page-url", help="the next page a previous result named (`next.page_url`)"),
    ] = None,
    all_pages: Annotated[
        bool,
        typer.Option(
            "--all-pages",
            help="follow each result's next page; prints every page's result as one JSON object",
        ),
    ] = False,
    max_pages: Annotated[
        int, typer.Option("--max-pages", help="with --all-pages, at most this many pages", min=1)
    ] = 10,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="write the answer's body to FILE, its bytes exactly"),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Call one operation: refused (exit 2) before anything is sent when the arguments are wrong,
    or when the operation is gated and nobody approved the call."""
    from skillpress.runtime.calling.execute import CallLimits
    from skillpress.runtime.package.model import PackageError, UnknownOperation

    skill, _ = loaded(package_dir, auth_header, auth_kind, base_url)
    try:
        parsed: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        fail(f"--args is not valid JSON ({exc.msg} at column {exc.colno})")
    try:
        tool = skill.tool(operation)
    except (UnknownOperation, PackageError) as exc:
        fail(str(exc))
    setup = setup_of(
        skill, auth_env, CallLimits(timeout, max_response_bytes, retries, max_wait), files_dir
    )
    placed_call(
        skill,
        tool,
        parsed,
        setup,
        dry_run=dry_run,
        approve=approve,
        wait=approval_timeout,
        as_json=as_json,
        page_url=page_url,
        all_pages=max_pages if all_pages else 0,
        output=output,
    )


def register(app: typer.Typer) -> None:
    app.command()(call)
