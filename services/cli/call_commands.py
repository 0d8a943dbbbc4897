"""`skillpress call` and `skillpress run`: an operation of a package, translated and (unless a dry run) sent."""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillpress.services.app.package_dir import OutputDirError, read_package_dir
from skillpress.services.cli.common import (
    fail,
    failures,
    load_target,
    open_ctx,
    say_base_url,
    settings,
)

if TYPE_CHECKING:  # the runtime (jsonschema, httpx) loads only when a command runs
    from skillpress.services.runtime.calls import CallSetup, Gatekeeper, Placed
    from skillpress.services.runtime.execute import CallLimits, CallResult, Credential
    from skillpress.services.runtime.gates import GateCheck
    from skillpress.services.runtime.mcp_server import Loaded
    from skillpress.services.runtime.skill import Skill, Tool

__all__ = ["register"]

AUTH_KINDS = ("apiKey", "bearer", "basic")

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
) -> Skill:
    from skillpress.services.runtime.skill import AuthHeader, PackageError, load_skill

    if auth_kind not in AUTH_KINDS:
        fail(f"--auth-kind {auth_kind!r}: choose one of {', '.join(AUTH_KINDS)}")
    override = AuthHeader(auth_header, auth_kind) if auth_header else None
    try:
        files = read_package_dir(package_dir, hand_written=True)
        skill = load_skill(
            files, slug=package_dir.resolve().name, auth=override, base_url=base_url, lazy=True
        )
    except (OutputDirError, PackageError) as exc:
        fail(str(exc))
    say_base_url(skill, base_url)
    return skill


def _credential(skill: Skill, auth_env: str | None) -> Credential | None:
    from skillpress.services.runtime.execute import Credential

    if skill.auth is None:
        return None
    from skillpress.services.runtime.execute import credential_env

    return Credential(
        skill.auth,
        credential_env(skill.slug, skill.auth, auth_env),
        allow_private_token_url=_allow_private(),
    )


def _allow_private() -> bool:
    """SKILLPRESS_FETCH_ALLOW_PRIVATE: a token URL on a trusted network may be reached too."""
    return settings().fetch_allow_private


def _print_result(result: CallResult, as_json: bool) -> None:
    if as_json:
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

    def decide(gate: GateCheck) -> None:
        from skillpress.services.app import approvals
        from skillpress.services.app.operators import OPERATOR_TOKEN_ENV, operator_for
        from skillpress.services.runtime.calls import GateClosed

        who = _who()
        ctx = open_ctx()
        try:
            with failures():
                approver = (
                    operator_for(ctx.settings, os.environ.get(OPERATOR_TOKEN_ENV))
                    if approve
                    else None
                )
                row = approvals.settle(
                    ctx, skill.slug, gate, who, f"{approver} at the terminal" if approver else None
                )
                if row.status != "pending":
                    typer.echo(
                        f"approved by {row.decided_by} (#{row.id}): {gate.describe()}", err=True
                    )
                    return
                typer.echo(
                    f"waiting for approval #{row.id}: {gate.describe()}."
                    f" A person approves it: skillpress approve {row.id} (or deny {row.id})",
                    err=True,
                )
                deadline = time.monotonic() + wait
                assert row.id is not None
                while True:
                    row = approvals.consume(ctx, row.id)
                    if row.status == "used":
                        typer.echo(f"approved by {row.decided_by} (#{row.id})", err=True)
                        return
                    if row.status in ("denied", "expired") or time.monotonic() >= deadline:
                        break
                    time.sleep(0.5)
        finally:
            ctx.close()
        # not sent (raised outside `failures`, which would end the command: a run records it)
        if row.status == "denied":
            raise GateClosed(
                f"not sent: approval #{row.id} was denied by {row.decided_by}", row.id, denied=True
            )
        if row.status == "expired":
            raise GateClosed(
                f"not sent: approval #{row.id} expired before anyone decided it;"
                " calling again asks anew"
            )
        raise GateClosed(
            f"not sent: approval #{row.id} is still pending; the same call once"
            " it is approved goes through",
            row.id,
        )

    return decide


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
) -> None:
    """One call from the command line: refused (exit 2) before anything is sent when its
    arguments are wrong; a dry run prints the request; a gated call waits for its approval;
    with `all_pages` (a page cap), its next pages followed."""
    from skillpress.services.runtime.calls import GateClosed, place_call, prepare_call
    from skillpress.services.runtime.execute import ExecutionFailed
    from skillpress.services.runtime.skill import PackageError
    from skillpress.services.runtime.translate import CallRefused

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
            return place_call(tool, given, skill.hosts, setup, gate, page)

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
    _print_result(placed.result, as_json)


def _setup(
    skill: Skill, auth_env: str | None, limits: CallLimits, files_dir: Path | None
) -> CallSetup:
    from skillpress.services.runtime.calls import CallSetup
    from skillpress.services.runtime.files import local_files

    return CallSetup(
        credential=_credential(skill, auth_env),
        limits=limits,
        files=local_files(files_dir or Path.cwd()),
    )


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
    as_json: AsJson = False,
) -> None:
    """Call one operation: refused (exit 2) before anything is sent when the arguments are wrong,
    or when the operation is gated and nobody approved the call."""
    from skillpress.services.runtime.execute import CallLimits
    from skillpress.services.runtime.skill import PackageError, UnknownOperation

    skill = _load(package_dir, auth_header, auth_kind, base_url)
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
    from skillpress.services.runtime.execute import CallLimits
    from skillpress.services.runtime.skill import PackageError, UnknownOperation
    from skillpress.services.runtime.slash import (
        SlashError,
        help_text,
        parse_slash,
        slash_arguments,
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
        package_dir = Path(target)
        skill = _load(package_dir, auth_header, auth_kind, base_url)
        files = read_package_dir(package_dir, hand_written=True)
        sandboxed = not unsafe
    try:
        command = parse_slash(line)
        workflows = _workflows(files, skill, None if skill_slug else Path(target).resolve().parent)
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
    except (SlashError, UnknownOperation, PackageError) as exc:
        fail(str(exc))
    _place(
        skill,
        tool,
        arguments,
        setup,
        dry_run=dry_run,
        approve=approve,
        wait=approval_timeout,
        as_json=as_json,
    )


SANDBOXED = (
    "a workflow from a package you did not publish runs sandboxed: nothing that writes is sent"
    " unless you give --unsafe"
)


def _workflows(files: Mapping[str, bytes], skill: Skill, beside: Path | None) -> dict[str, Any]:
    """The workflows of the skill; a skill one `uses` is the package folder of that slug beside
    this one (`beside`), or else the published skill's live version."""
    from skillpress.services.runtime.skill import load_skill
    from skillpress.services.runtime.workflows import WorkflowRefused, load_workflows

    def other(slug: str) -> Skill | None:
        from skillpress.services.app.exports import skill_files

        where = beside / slug if beside is not None and (beside / slug).is_dir() else slug
        try:
            found, named = skill_files(str(where), open_ctx)
            return load_skill(found, slug=named, lazy=True)
        except (SystemExit, Exception):  # noqa: BLE001 (not available: the caller says so)
            return None

    try:
        return load_workflows(files, skill, other)
    except WorkflowRefused as exc:
        fail(str(exc))


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
    """A workflow (a hardened one step by step: each call translated and checked like any other, gated
    calls approved first, destructive ones refused in the sandbox (a package directory from
    elsewhere) unless `unsafe`; a dry run prints each request in order and sends nothing."""
    from dataclasses import replace

    from skillpress.services.runtime.calls import placed_step
    from skillpress.services.runtime.gates import check_gate
    from skillpress.services.runtime.run_log import RunLog, journaled
    from skillpress.services.runtime.workflows import (
        Pending,
        Run,
        StepFailed,
        WorkflowRefused,
        has_pending,
        kinds_by_owner,
        prepare_step,
        run_workflow,
        workflow_arguments,
    )

    try:
        given = workflow_arguments(workflows[name], raw_args)
    except StepFailed as exc:
        fail(str(exc))

    def shown(value: Any) -> Any:
        return json.loads(json.dumps(value, default=str))

    kinds_of = kinds_by_owner(skill, files)

    def run(log: RunLog) -> Run:
        def call(
            step: str, tool: Tool, args: dict[str, Any], owner: Skill, rules: Any = None
        ) -> Any:
            kinds = kinds_of(owner)
            own = setup if owner is skill else replace(setup, credential=_credential(owner, None))
            pending = has_pending(args)
            try:
                request = prepare_step(
                    step, tool, shown(args) if pending else args, owner, kinds, sandboxed, SANDBOXED
                )
            except StepFailed as exc:
                if not (dry_run and pending) or "writes, and" in exc.message:
                    raise
                typer.echo(
                    f"# step {step}: {tool.operation} {json.dumps(shown(args))} (built when run)"
                )
                return Pending(step, "answer")
            if dry_run:
                typer.echo(
                    f"# step {step}: {owner.slug}.{tool.operation}"
                    if owner is not skill
                    else f"# step {step}: {tool.operation}"
                )
                gate = check_gate(tool, args)
                if gate is not None:
                    typer.echo(f"gated: sending it needs an approval ({gate.describe()})", err=True)
                extra = own.credential.placeholder() if own.credential else {}
                typer.echo(json.dumps(request.as_dict(extra), indent=2, ensure_ascii=False))
                return Pending(step, "answer")
            replaying = log.replaying
            answer = placed_step(
                step, tool, args, owner, own, _terminal_gate(owner, approve, wait), log, rules
            )
            if not as_json:
                done = log.steps[-1]
                typer.echo(
                    f"  ↺ step {step}: {tool.operation} (sent before this run resumed: not again)"
                    if replaying
                    else f"  ✓ step {step}: {tool.operation} → {done.status}",
                    err=True,
                )
            return answer

        if by_model is None:
            return run_workflow(workflows, name, given, skill, call, dry_run=dry_run)
        result: Run = by_model(given, call)
        return result

    wf = workflows[name]
    by_model = None if wf.execution == "hardened" else _model_runner(wf, skill, files, dry_run)
    journal = None if dry_run else _runs()
    try:
        done, log = journaled(journal, skill.slug, None, wf, given, _who(), run)
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
    typer.echo(json.dumps(shown(done.result), indent=None if as_json else 2, ensure_ascii=False))


def _model_runner(wf: Any, skill: Skill, files: Mapping[str, bytes], dry_run: bool) -> Any:
    """How a guided or draft workflow runs: the configured model (SKILLPRESS_LLM_*) decides the
    calls (a function of the arguments and the call); refused before anything starts when there
    is no model, or for a dry run (nothing to print before the model decides)."""
    from skillpress.services.runtime.model_runs import draft_run, guided_run

    if dry_run:
        fail(
            f"/{wf.name} is {wf.execution}: a model decides its calls, so there is nothing to print before it runs"
        )
    chat = _model_chat()
    if chat is None:
        fail(
            f"/{wf.name} is {wf.execution}: it needs a model; set SKILLPRESS_LLM_BASE_URL and"
            " SKILLPRESS_LLM_MODEL (and SKILLPRESS_LLM_API_KEY_ENV naming the key's variable)"
        )
    run = guided_run if wf.execution == "guided" else draft_run
    return lambda given, call: run(wf, skill, files, given, chat, call)


class _Runs:
    """Workflow runs kept in the records, which are opened (and their modules loaded) at the
    first run, not when a command or a server starts."""

    def __init__(self) -> None:
        self._kept: Any = None

    def _journal(self) -> Any:
        if self._kept is None:
            from skillpress.services.app.runs import RecordedRuns

            self._kept = RecordedRuns(open_ctx)
        return self._kept

    def begin(self, *args: Any) -> Any:
        return self._journal().begin(*args)

    def end(self, *args: Any, **kwargs: Any) -> None:
        self._journal().end(*args, **kwargs)


def _runs() -> Any:
    """Workflow runs kept in the records."""
    return _Runs()


def _model_chat() -> Any:
    """The chat function of the configured model (SKILLPRESS_LLM_*), or None when there is none;
    it raises ChatFailed when the model does not answer usefully."""
    from skillpress.services.platform.llm import chat_client

    client = chat_client(settings())
    return client.with_tools if client is not None else None


def _gatekeeper(slug: str) -> Gatekeeper:
    """An agent's gated call over MCP: sent under `auto_below`, or when a person granted exactly
    that call (used once); otherwise recorded as a request the agent is told to wait on
    (GateClosed naming it). The records are opened at the first gated call, not when the server
    starts."""

    def decide(gate: GateCheck) -> None:
        from skillpress.services.app import approvals
        from skillpress.services.runtime.calls import GateClosed

        ctx = open_ctx()
        try:
            row = approvals.settle(ctx, slug, gate, gate.caller or "an MCP client")
            until = approvals.expires_at(ctx, row)
        finally:
            ctx.close()
        if row.status != "pending":
            return
        assert until is not None  # a pending request always has its time
        raise GateClosed(
            f"not sent: {gate.describe()}. It waits for a person's approval (request #{row.id}),"
            f" open until {until:%Y-%m-%d %H:%M} UTC;"
            " tell the user what you would send and why, and call again with the same arguments"
            " once they say it is approved.",
            row.id,
        )

    return decide


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
    base_url: BaseUrl = None,
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
    from skillpress.services.runtime.execute import CallLimits
    from skillpress.services.runtime.mcp_server import build_mcp_server

    if auth_kind not in AUTH_KINDS:
        fail(f"--auth-kind {auth_kind!r}: choose one of {', '.join(AUTH_KINDS)}")
    if every:
        limits = CallLimits(timeout, max_response_bytes, retries, max_wait)
        server = _catalog_server(target, eager, limits, unsafe)
        _serve_mcp(server, "every skill", transport, port)
        return
    if target is None:
        fail("name a skill (its slug, or a package directory), or give --all")
    skill, files = load_target(target, auth_header, auth_kind, base_url, lazy=True)
    from skillpress.services.app.follow import folder_stamp, followed_version

    stamp = [folder_stamp(Path(target))]

    def reload() -> Loaded | None:
        """The skill anew when `skillpress follow` swapped its folder to another version."""
        now = folder_stamp(Path(target))
        if now == stamp[0]:
            return None
        try:
            fresh, fresh_files = load_target(target, auth_header, auth_kind, base_url, lazy=True)
        except (SystemExit, Exception):  # noqa: BLE001 (a half-swapped folder: keep serving the old)
            return None
        stamp[0] = now
        return fresh, fresh_files, followed_version(Path(target))

    server = build_mcp_server(
        skill,
        files,
        eager=eager,
        credential=_credential(skill, auth_env),
        limits=CallLimits(timeout, max_response_bytes, retries, max_wait),
        gatekeeper=_gatekeeper(skill.slug),
        reload=reload if Path(target).is_dir() else None,
        version=followed_version(Path(target)),
        sandboxed=Path(target).is_dir() and not unsafe,
        model=_model_chat,
        runs=_runs(),
    )
    _serve_mcp(server, skill.slug, transport, port)


def _catalog_server(target: str | None, eager: bool, limits: CallLimits, unsafe: bool) -> Any:
    """Several skills behind one MCP server, each with its own credential variable and gate."""
    from skillpress.services.app.catalog import folder_catalog, live_catalog
    from skillpress.services.app.package_dir import OutputDirError
    from skillpress.services.runtime.mcp_server import build_catalog_server
    from skillpress.services.runtime.skill import PackageError

    try:
        with failures():
            catalog = folder_catalog(Path(target)) if target else live_catalog(open_ctx())
            skills = catalog.current()
    except (OutputDirError, PackageError) as exc:
        fail(str(exc))
    if not skills:
        fail(
            f"no skill package under {target}"
            if target
            else "no skill is live yet: publish one first (skillpress versions SLUG)"
        )
    return build_catalog_server(
        skills,
        eager=eager,
        credentials=lambda slug, sk: _credential(sk, None),
        limits=limits,
        gatekeepers=_gatekeeper,
        refresh=catalog.changed,
        sandboxed=target is not None and not unsafe,
        model=_model_chat,
        runs=_runs(),
    )


def _serve_mcp(server: Any, what: str, transport: str, port: int) -> None:
    import asyncio

    from skillpress.services.runtime.mcp_server import serve_http, serve_stdio

    if transport == "stdio":
        asyncio.run(serve_stdio(server))
    elif transport == "http":
        typer.echo(
            f"serving {what} over MCP (streamable HTTP) at http://127.0.0.1:{port}/mcp", err=True
        )
        serve_http(server, "127.0.0.1", port)
    else:
        fail(f"--transport {transport!r}: stdio or http")


def register(app: typer.Typer) -> None:
    app.command()(call)
    app.command()(run)
    app.command()(mcp)
