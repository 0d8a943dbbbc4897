"""`skillpress run`: direct use in the slash form (an operation, `/help`, or a workflow run step by
step, each call checked, gated and recorded like any other)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillpress.cli.call_commands import (
    ApprovalWait,
    AsJson,
    AuthEnv,
    AuthHeaderOpt,
    AuthKind,
    BaseUrl,
    DryRun,
    FilesDir,
    MaxBytes,
    MaxWait,
    Retries,
    RunApprove,
    Timeout,
    loaded,
    placed_call,
    setup_of,
    terminal_gate,
    who_runs,
)
from skillpress.cli.common import (
    fail,
    load_target,
    open_ctx,
    settings,
)

if TYPE_CHECKING:  # the runtime loads only when a command runs
    from skillpress.runtime.calling.calls import CallSetup
    from skillpress.runtime.package.model import Skill
    from skillpress.runtime.workflows.model_runs import Chat
    from skillpress.runtime.workflows.run import Workflow
    from skillpress.runtime.workflows.run_log import RunJournal, RunLog

__all__ = ["model_chat", "register", "run_journal"]


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
    from skillpress.app.serving.calling import workflows_for
    from skillpress.runtime.calling.execute import CallLimits
    from skillpress.runtime.calling.request import CallRefused
    from skillpress.runtime.package.model import PackageError, UnknownOperation
    from skillpress.runtime.workflows.run import WorkflowRefused
    from skillpress.runtime.workflows.slash import (
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
        skill, files = loaded(Path(target), auth_header, auth_kind, base_url)
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
        setup = setup_of(
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
    placed_call(
        skill,
        tool,
        arguments,
        setup,
        dry_run=dry_run,
        approve=approve,
        wait=approval_timeout,
        as_json=as_json,
        kept=run_journal(),
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
    from skillpress.app.serving.calling import RunOptions, run_here
    from skillpress.runtime.workflows.run import StepFailed, WorkflowRefused

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
            lambda owner: terminal_gate(owner, approve, wait),
            RunOptions(dry_run, sandboxed, who_runs(), settings().fetch_allow_private),
            Shown(),
            run_journal(),
            model_chat,
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


def run_journal() -> RunJournal:
    """Workflow runs kept in the records."""
    return _Runs()


def model_chat() -> Chat | None:
    """The chat function of the configured model (SKILLPRESS_LLM_*), or None when there is none;
    it raises ChatFailed when the model does not answer usefully."""
    from skillpress.app.serving.calling import model_chat

    return model_chat(settings())


def register(app: typer.Typer) -> None:
    app.command()(run)
