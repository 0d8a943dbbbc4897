"""`skillpress call` and `skillpress run`: an operation of a package, translated and (unless a dry run) sent."""
# size: call, run, tools, mcp and their shared options: each command's options are its signature

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
    load_target,
    open_ctx,
    say_base_url,
    settings,
)

if TYPE_CHECKING:  # the runtime (jsonschema, httpx) loads only when a command runs
    from skillpress.app.serving.calling import (
        CallLimits,
        CallResult,
        CallSetup,
        Chat,
        GateCheck,
        Gatekeeper,
        Placed,
        RunJournal,
        RunLog,
        Skill,
        Tool,
        Workflow,
    )
    from skillpress.app.serving.gatekeepers import Desk

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


def _load(
    package_dir: Path, auth_header: str | None, auth_kind: str, base_url: str | None
) -> tuple[Skill, Mapping[str, bytes]]:
    from skillpress.app.serving.calling import OutputDirError, PackageError, open_package

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


def _who() -> str:
    """The person at this terminal, by their login name."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this user id
        return f"uid {os.getuid()}"


def _terminal_gate(skill: Skill, approve: bool, wait: float) -> Gatekeeper:
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

    decide = terminal_gatekeeper(desk, skill.slug, _who(), approver, wait, say)

    def gate(check: GateCheck) -> None:
        with failures_of_the_records():
            decide(check)

    return gate


@contextlib.contextmanager
def failures_of_the_records() -> Iterator[None]:
    """What goes wrong while a gate is decided (the records unreachable, a request refused) ends
    the command in one line; a gate that stays closed (GateClosed) is the caller's to handle (a
    run records it)."""
    from skillpress.app.serving.calling import GateClosed

    try:
        yield
    except GateClosed:
        raise
    except Exception as exc:  # noqa: BLE001 (failures() says each in one line, or re-raises)
        with failures():
            raise exc


def _place(
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
    from skillpress.app.serving.calling import (
        CallRefused,
        ExecutionFailed,
        GateClosed,
        PackageError,
        kept_call,
        place_call,
        prepare_call,
    )

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
        gate = _terminal_gate(skill, approve, wait)

        def place(given: Any, page: str | None) -> Placed:
            return place_call(tool, given, skill.hosts, setup, gate, page, skill=skill.slug)

        if kept is not None:
            prepared = placed
            placed = kept_call(
                kept, skill, tool, args, _who(), prepared, setup, lambda: place(args, page_url)
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


def _setup(
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
    from skillpress.app.serving.calling import CallLimits, PackageError, UnknownOperation

    skill, _ = _load(package_dir, auth_header, auth_kind, base_url)
    try:
        parsed: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        fail(f"--args is not valid JSON ({exc.msg} at column {exc.colno})")
    try:
        tool = skill.tool(operation)
    except (UnknownOperation, PackageError) as exc:
        fail(str(exc))
    setup = _setup(
        skill, auth_env, CallLimits(timeout, max_response_bytes, retries, max_wait), files_dir
    )
    _place(
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


def run(
    target: Annotated[
        str,
        typer.Argument(
            metavar="DIR_OR_LINE",
            help="a skill package directory, then the line; with --skill, just the line",
        ),
    ],
    line: Annotated[
        str | None,
        typer.Argument(
            metavar="LINE",
            help='a slash command: /operation {"k": "v"}, /operation text, /help [operation],'
            " /workflow {...} or /run workflow {...}",
        ),
    ] = None,
    skill_slug: Annotated[
        str | None,
        typer.Option("--skill", help="a published skill (its live version), instead of a DIR"),
    ] = None,
    dry_run: DryRun = False,
    approve: RunApprove = False,
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
    as_json: AsJson = False,
    unsafe: Annotated[
        bool,
        typer.Option(
            "--unsafe",
            help="let a workflow from a package you did not publish call operations that write",
        ),
    ] = False,
) -> None:
    """Direct use in the slash form: `/create_booking {"room_id": "r1", ...}`, `/help create_booking`,
    or a workflow: `/book_room {"room_id": "oak", ...}` (a hardened one runs its steps as written,
    no model). A package directory is sandboxed: its workflows send nothing that writes unless
    --unsafe; a published skill (--skill SLUG) is the operator's own."""
    # size: a typer command: its options are its signature
    from skillpress.app.serving.calling import (
        CallLimits,
        CallRefused,
        PackageError,
        SlashError,
        UnknownOperation,
        WorkflowRefused,
        help_text,
        parse_slash,
        slash_arguments,
        workflows_for,
    )

    if skill_slug is not None:
        if line is not None:
            fail("with --skill SLUG give only the line (no DIR)")
        line = target
        skill, files = load_target(skill_slug, auth_header, auth_kind, base_url, lazy=True)
        sandboxed = False
    else:
        if line is None:
            fail("give a package DIR and a line, or --skill SLUG and a line")
        skill, files = _load(Path(target), auth_header, auth_kind, base_url)
        sandboxed = not unsafe
    try:
        command = parse_slash(line)
        beside = None if skill_slug else Path(target).resolve().parent
        try:
            workflows = workflows_for(files, skill, beside, open_ctx)
        except WorkflowRefused as exc:
            fail(str(exc))
        if command.is_help:
            typer.echo(help_text(skill, command.raw_args or None, workflows))
            return
        name, raw = command.name, command.raw_args
        if name == "run":  # `/run workflow {...}`: skill-forward, by the workflow's name
            name, _, raw = raw.partition(" ")
            raw = raw.strip()
        setup = _setup(
            skill, auth_env, CallLimits(timeout, max_response_bytes, retries, max_wait), files_dir
        )
        if name in workflows:
            _run_workflow(
                skill,
                files,
                workflows,
                name,
                raw,
                dry_run=dry_run,
                approve=approve,
                wait=approval_timeout,
                setup=setup,
                sandboxed=sandboxed,
                as_json=as_json,
            )
            return
        if command.name == "run":
            fail(f"/run {name}: {skill.slug} has no workflow {name!r}")
        tool = skill.tool(command.name)
        arguments = slash_arguments(tool, command.raw_args)
    except (SlashError, UnknownOperation, PackageError, CallRefused) as exc:
        fail(str(exc))  # a line that cannot be placed: one line, exit 2, never a traceback
    _place(
        skill,
        tool,
        arguments,
        setup,
        dry_run=dry_run,
        approve=approve,
        wait=approval_timeout,
        as_json=as_json,
        kept=_runs(),
    )


def _run_workflow(
    skill: Skill,
    files: Mapping[str, bytes],
    workflows: dict[str, Any],
    name: str,
    raw_args: str,
    *,
    dry_run: bool,
    approve: bool,
    wait: float,
    setup: CallSetup,
    sandboxed: bool,
    as_json: bool,
) -> None:
    """A workflow run from here (app.calling.run_here), its steps shown as they go: a dry run
    prints each request in order and sends nothing."""
    from skillpress.app.serving.calling import (
        RunOptions,
        StepFailed,
        WorkflowRefused,
        run_here,
    )

    class Shown:
        def planned(
            self, step: str, operation: str, request: dict[str, Any], gated: str | None
        ) -> None:
            typer.echo(f"# step {step}: {operation}")
            if gated is not None:
                typer.echo(f"gated: sending it needs an approval ({gated})", err=True)
            typer.echo(json.dumps(request, indent=2, ensure_ascii=False))

        def deferred(self, step: str, operation: str, arguments: Any) -> None:
            typer.echo(f"# step {step}: {operation} {json.dumps(arguments)} (built when run)")

        def sent(self, step: str, operation: str, status: int | None, replayed: bool) -> None:
            if as_json:
                return
            typer.echo(
                f"  ↺ step {step}: {operation} (sent before this run resumed: not again)"
                if replayed
                else f"  ✓ step {step}: {operation} → {status}",
                err=True,
            )

    try:
        done, log = run_here(
            skill,
            files,
            workflows,
            name,
            raw_args,
            setup,
            lambda owner: _terminal_gate(owner, approve, wait),
            RunOptions(dry_run, sandboxed, _who(), settings().fetch_allow_private),
            Shown(),
            _runs(),
            _model_chat,
        )
    except (StepFailed, WorkflowRefused) as exc:
        fail(str(exc), 1 if isinstance(exc, StepFailed) and exc.step != "arguments" else 2)
    if dry_run:
        typer.echo("# dry run: nothing was sent", err=True)
        return
    if log.run_id is not None and not as_json:
        typer.echo(
            f"run #{log.run_id}: {len(log.steps)} steps (skillpress runs --show {log.run_id})",
            err=True,
        )
    result = json.loads(json.dumps(done.result, default=str))
    typer.echo(json.dumps(result, indent=None if as_json else 2, ensure_ascii=False))


class _Runs:
    """Workflow runs kept in the records, which are opened (and their modules loaded) at the
    first run, not when a command or a server starts."""

    def __init__(self) -> None:
        self._kept: RunJournal | None = None

    def _journal(self) -> RunJournal:
        if self._kept is None:
            from skillpress.app.records.runs import RecordedRuns

            self._kept = RecordedRuns(open_ctx)
        return self._kept

    def begin(
        self, slug: str, version: str | None, wf: Workflow, arguments: dict[str, Any], by: str
    ) -> RunLog:
        return self._journal().begin(slug, version, wf, arguments, by)

    def end(self, log: RunLog, status: str, result: Any = None, error: str | None = None) -> None:
        self._journal().end(log, status, result, error)


def _runs() -> RunJournal:
    """Workflow runs kept in the records."""
    return _Runs()


def _model_chat() -> Chat | None:
    """The chat function of the configured model (SKILLPRESS_LLM_*), or None when there is none;
    it raises ChatFailed when the model does not answer usefully."""
    from skillpress.app.serving.calling import model_chat

    return model_chat(settings())


def _is_slug_url(value: str) -> bool:
    name, eq, url = value.partition("=")
    return bool(eq) and "://" not in name and url.startswith(("http://", "https://"))


def _slug_urls(given: list[str]) -> dict[str, str]:
    """`--base-url SLUG=URL` values (with --all), each skill at most once."""
    out: dict[str, str] = {}
    for value in given:
        if not _is_slug_url(value):
            fail(f"--base-url {value!r}: with --all, give SLUG=URL (once for each skill it moves)")
        slug, _, url = value.partition("=")
        if slug in out:
            fail(f"--base-url names {slug} twice")
        out[slug] = url
    return out


def mcp(
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="SLUG|DIR",
            help="a published skill's slug or a package directory; with --all, a folder of packages",
        ),
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="serve several skills: every live one (or every package folder under DIR, like the one skillpress follow keeps)",
        ),
    ] = False,
    eager: Annotated[
        bool, typer.Option("--eager", help="offer every operation as a tool up front (small APIs)")
    ] = False,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio | http (streamable HTTP)")
    ] = "stdio",
    port: Annotated[int, typer.Option("--port", help="port for --transport http")] = 8765,
    auth_env: AuthEnv = None,
    auth_header: AuthHeaderOpt = None,
    auth_kind: AuthKind = "apiKey",
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            help="where the API is (every request goes there, said on stderr); with --all, SLUG=URL once for each skill it moves",
        ),
    ] = None,
    timeout: Timeout = 30.0,
    max_response_bytes: MaxBytes = 4 * 1024 * 1024,
    retries: Retries = 2,
    max_wait: MaxWait = 30.0,
    unsafe: Annotated[
        bool,
        typer.Option(
            "--unsafe",
            help="let workflows of packages you did not publish call operations that write",
        ),
    ] = False,
) -> None:
    """Serve a skill over MCP: the body as instructions, operations loaded as tools on request."""
    # size: a typer command: its options are its signature, and --all's refusals
    from skillpress.app.serving.calling import CallLimits, OutputDirError, PackageError
    from skillpress.mcp.serving import (
        NoSkills,
        ServeOptions,
        catalog_server,
        serve,
        skill_server,
    )

    if auth_kind not in AUTH_KINDS:
        fail(f"--auth-kind {auth_kind!r}: choose one of {', '.join(AUTH_KINDS)}")
    if transport not in ("stdio", "http"):
        fail(f"--transport {transport!r}: stdio or http")
    limits = CallLimits(timeout, max_response_bytes, retries, max_wait)
    options = ServeOptions(
        eager,
        limits,
        unsafe,
        lambda: settings().fetch_allow_private,
        approvals_url=lambda: settings().approvals_url,
    )
    given = list(base_url or [])
    if every:
        # a flag that redirects calls or credentials holds, or is refused: never ignored
        for flag, value in (
            ("--auth-env", auth_env),
            ("--auth-header", auth_header),
            ("--auth-kind", None if auth_kind == "apiKey" else auth_kind),
        ):
            if value is not None:
                fail(
                    f"{flag} names one skill's credential; with --all each skill reads its own"
                    " (the variable chosen at import, else <SLUG>_API_KEY): leave it out"
                )
        moved = _slug_urls(given)
        try:
            with failures():
                server = catalog_server(target, options, open_ctx, _model_chat, _runs(), moved)
        except (OutputDirError, PackageError, NoSkills) as exc:
            fail(str(exc))
        for slug, url in sorted(moved.items()):
            typer.echo(
                f"note: --base-url: every request of {slug} goes to {url.rstrip('/')}", err=True
            )
        what = "every skill"
    else:
        if target is None:
            fail("name a skill (its slug, or a package directory), or give --all")
        if len(given) > 1 or any(_is_slug_url(u) for u in given):
            fail("--base-url takes one URL for one skill (SLUG=URL is for --all)")
        one = given[0] if given else None
        try:
            with failures():
                skill, server = skill_server(
                    target,
                    auth_env,
                    auth_header,
                    auth_kind,
                    one,
                    options,
                    open_ctx,
                    _model_chat,
                    _runs(),
                )
        except (OutputDirError, PackageError) as exc:
            fail(str(exc))
        say_base_url(skill, one)
        what = skill.slug
    token = None
    if transport == "http":
        from skillpress.mcp.serving import MCP_TOKEN_ENV, http_token

        token, made = http_token(os.environ)
        typer.echo(
            f"serving {what} over MCP (streamable HTTP) at http://127.0.0.1:{port}/mcp;"
            " every request bears Authorization: Bearer "
            + (
                f"{token} (made for this run; set {MCP_TOKEN_ENV} to choose it)"
                if made
                else f"${MCP_TOKEN_ENV}"
            ),
            err=True,
        )
    serve(server, transport, port, token)


def register(app: typer.Typer) -> None:
    app.command()(call)
    app.command()(run)
    app.command()(mcp)
