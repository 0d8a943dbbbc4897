"""Calling a skill's operations and running its workflows from a face that is not a host: the
command line's `call` and `run`, and the gatekeepers every server face uses. Each use-case here
is what the face calls; the face parses its input and prints.

- `open_package` / `open_target`: a package directory, or a published skill's live version,
  loaded (lazily: each tool built when first asked for);
- `call_setup`: the credential (by the variable it is read from), limits and the file folder a
  call may read a file argument from;
- `terminal_gatekeeper`: a gated call from a terminal waits for a person's approval (or carries
  the operator's own, `--approve`), every decision recorded; `agent_gatekeeper`: an agent's gated
  call is recorded as a request it is told to wait on;
- `workflows_for` and `run_here`: a skill's workflows (another skill's found beside it or
  published), and one run step by step, each call checked, gated and recorded like any other.

The runtime's call types and errors the faces handle are re-exported here, so a face imports
nothing below the application layer.
"""
# size: a call's setup, the two desks and the gatekeepers over them, and a run from the command line: one door for every face that calls

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from skillpress.app.base.package_dir import OutputDirError, read_package_dir
from skillpress.runtime.calling.calls import (
    CallSetup,
    GateClosed,
    Gatekeeper,
    Placed,
    place_call,
    prepare_call,
)
from skillpress.runtime.calling.execute import (
    CallLimits,
    CallResult,
    Credential,
    ExecutionFailed,
    credential_env,
)
from skillpress.runtime.calling.files import local_files
from skillpress.runtime.calling.gates import GateCheck
from skillpress.runtime.calling.translate import CallRefused
from skillpress.runtime.package.model import AuthHeader, PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.model_runs import Chat
from skillpress.runtime.workflows.run import (
    Run,
    StepFailed,
    Workflow,
    WorkflowRefused,
    workflow_arguments,
)
from skillpress.runtime.workflows.run_log import RunJournal, RunLog
from skillpress.runtime.workflows.runner import StepPlace, StepReport, run_flow
from skillpress.runtime.workflows.slash import SlashError, help_text, parse_slash, slash_arguments
from skillpress.runtime.workflows.steps import kept_call

if TYPE_CHECKING:
    from skillpress.app.base.context import AppContext
    from skillpress.app.base.views import ApprovalView
    from skillpress.platform.settings import Settings

__all__ = [
    "kept_call",
    "AUTH_KINDS",
    "Chat",
    "RunJournal",
    "RunLog",
    "SANDBOXED",
    "CallLimits",
    "CallRefused",
    "CallResult",
    "CallSetup",
    "Credential",
    "ExecutionFailed",
    "GateCheck",
    "GateClosed",
    "Gatekeeper",
    "OutputDirError",
    "PackageError",
    "Placed",
    "RunOptions",
    "Skill",
    "SlashError",
    "StepFailed",
    "StepReport",
    "Tool",
    "UnknownOperation",
    "Workflow",
    "WorkflowRefused",
    "NOT_HERE",
    "ApiDesk",
    "Desk",
    "LocalDesk",
    "agent_gatekeeper",
    "api_gatekeeper",
    "bound_name",
    "call_setup",
    "credential_for",
    "desk_opener",
    "help_text",
    "model_chat",
    "open_package",
    "open_target",
    "parse_slash",
    "place_call",
    "prepare_call",
    "run_here",
    "skill_files",
    "slash_arguments",
    "terminal_gatekeeper",
    "tool_list",
    "ToolList",
    "workflows_for",
]

AUTH_KINDS = ("apiKey", "bearer", "basic")
SANDBOXED = (
    "a workflow from a package you did not publish runs sandboxed: nothing that writes is sent"
    " unless you give --unsafe"
)


def bound_name(folder: Path) -> str:
    """The slug a package folder is bound as: its name as given (a followed `DIR/<slug>` link
    is its slug, never the `.versions/<slug>@<id>` it points to); `.` and `..` by what they are."""
    name = folder.name
    return name if name not in ("", ".", "..") else folder.resolve().name


def _override(auth_header: str | None, auth_kind: str) -> AuthHeader | None:
    if auth_kind not in AUTH_KINDS:
        raise PackageError(f"--auth-kind {auth_kind!r}: choose one of {', '.join(AUTH_KINDS)}")
    return AuthHeader(auth_header, auth_kind) if auth_header else None


def skill_files(
    target: str, open_ctx: Callable[[], AppContext] | None = None
) -> tuple[Mapping[str, bytes], str | None]:
    """A package directory's files (and its folder name, the slug of a hand-written skill), or the
    live version's files of the skill named `target` (slug None: the package names itself)."""
    path = Path(target)
    if path.is_dir():
        return read_package_dir(path, hand_written=True), bound_name(path)
    from skillpress.app.base.context import open_app
    from skillpress.app.records.versions import live_files

    ctx = (open_ctx or open_app)()
    try:
        return live_files(ctx, target), None
    finally:
        ctx.close()


def model_chat(settings: Settings) -> Chat | None:
    """The chat function of the configured model (SKILLPRESS_LLM_*) that guided and draft
    workflows run with, or None when there is none; it raises ChatFailed when the model does not
    answer usefully."""
    from skillpress.platform.llm import chat_client

    client = chat_client(settings)
    return client.with_tools if client is not None else None


def open_package(
    package_dir: Path,
    auth_header: str | None = None,
    auth_kind: str = "apiKey",
    base_url: str | None = None,
) -> tuple[Skill, Mapping[str, bytes]]:
    """A package directory (derived, hand-written or an Agent Skills folder) as a skill named
    after its folder, each tool built when first asked for. PackageError / OutputDirError say
    what is wrong with it."""
    override = _override(auth_header, auth_kind)
    files = read_package_dir(package_dir, hand_written=True)
    skill = load_skill(
        files, slug=bound_name(package_dir), auth=override, base_url=base_url, lazy=True
    )
    return skill, files


def open_target(
    target: str,
    auth_header: str | None,
    auth_kind: str,
    base_url: str | None,
    open_ctx: Callable[[], AppContext],
    *,
    lazy: bool = False,
) -> tuple[Skill, Mapping[str, bytes]]:
    """A package directory, or a skill's live version from the records and blob store, loaded
    (`lazy`: each tool built when first asked for)."""
    override = _override(auth_header, auth_kind)
    files, slug = skill_files(target, open_ctx)
    return load_skill(files, slug=slug, auth=override, base_url=base_url, lazy=lazy), files


@dataclass(frozen=True)
class ToolList:
    """A package's tools in a provider's shape, what the provider's profile changed in each,
    and the workflows left out because no model is there to run them."""

    tools: list[dict[str, Any]]
    adapted: dict[str, list[str]]
    left_out: list[Workflow]


def tool_list(
    package_dir: Path, provider: str, only: tuple[str, ...], with_model: bool
) -> ToolList:
    """Every tool of the package (or those named in `only`, reading only their files) in
    `provider`'s shape: its operations, its hardened workflows, and its guided and draft ones
    when a model runs them (`with_model`). PackageError / UnknownOperation / OutputDirError
    say what is wrong."""
    from skillpress.runtime.interop.tool_lists import package_tools
    from skillpress.runtime.package.model import PROVIDERS
    from skillpress.runtime.workflows.load import loadable_workflows

    if provider not in PROVIDERS:
        raise PackageError(f"unknown format {provider!r}: choose one of {', '.join(PROVIDERS)}")
    files = read_package_dir(package_dir, hand_written=True)
    notes: dict[str, list[str]] = {}
    tools = package_tools(files, provider, notes, only, with_model)
    left: list[Workflow] = []
    if not with_model:
        flows = loadable_workflows(files, load_skill(files, lazy=True))
        left = [
            wf
            for wf in flows.values()
            if wf.execution != "hardened" and (not only or wf.name in only)
        ]
    return ToolList(tools, notes, left)


def credential_for(
    skill: Skill, auth_env: str | None, allow_private_token_url: bool = False
) -> Credential | None:
    """The skill's credential as the variable it is read from (`auth_env`, else the one chosen at
    import, else <SLUG>_API_KEY); None for a skill that sends none."""
    if skill.auth is None:
        return None
    return Credential(
        skill.auth,
        credential_env(skill.slug, skill.auth, auth_env),
        allow_private_token_url=allow_private_token_url,
    )


def call_setup(
    skill: Skill,
    auth_env: str | None,
    limits: CallLimits,
    files_dir: Path | None,
    allow_private_token_url: bool = False,
) -> CallSetup:
    """What every call of the skill from here goes out with: its credential, the limits, and the
    folder a file argument's path may name a file under (default: the current one)."""
    return CallSetup(
        credential=credential_for(skill, auth_env, allow_private_token_url),
        limits=limits,
        files=local_files(files_dir or Path.cwd()),
    )


class Desk(Protocol):
    """Where a gated call is settled: the records here (`LocalDesk`), or the approvals of a
    skillpress API a runtime reaches with a token that decides nothing (`ApiDesk`)."""

    def settle(
        self, slug: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
    ) -> ApprovalView:
        """The call's decision as it stands: `auto`, `used` (go, once), or `pending`."""

    def consume(self, request_id: int) -> ApprovalView:
        """The decision the call waiting on `request_id` gets now (`used`: send it); GrantSpent
        when another call used the grant first."""

    def close(self) -> None:
        """Let go of what it holds."""


class LocalDesk:
    """Gated calls settled in this home's records (opened at the first gate, not before)."""

    def __init__(self, open_ctx: Callable[[], AppContext]) -> None:
        from skillpress.app.records import approval_requests as approvals

        self._approvals = approvals
        self.ctx = open_ctx()

    def settle(
        self, slug: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
    ) -> ApprovalView:
        row = self._approvals.settle(self.ctx, slug, gate, asked_by, approved_by)
        return self._approvals.as_dict(row, self.ctx)

    def consume(self, request_id: int) -> ApprovalView:
        return self._approvals.as_dict(self._approvals.consume(self.ctx, request_id), self.ctx)

    def close(self) -> None:
        self.ctx.close()


NOT_HERE = (
    "gated calls here are decided through the approvals API (SKILLPRESS_APPROVALS_URL), where a"
    " person grants them: nothing at this terminal approves"
)


class ApiDesk:
    """Gated calls settled through a skillpress API's approvals with a runtime's token: the
    server evaluates the live gate on the call's arguments and a person decides there; nothing
    here can approve."""

    def __init__(self, url: str, token: str) -> None:
        from skillpress.platform.approvals_api import ApprovalsApi

        self.api = ApprovalsApi(url, token)

    def settle(
        self, slug: str, gate: GateCheck, asked_by: str, approved_by: str | None = None
    ) -> ApprovalView:
        if approved_by:
            from skillpress.errors import Refused

            raise Refused(NOT_HERE)
        return _view(self.api.settle(slug, gate.operation, gate.args, gate.page_url, asked_by))

    def consume(self, request_id: int) -> ApprovalView:
        from skillpress.platform.approvals_api import ApprovalsRefused
        from skillpress.runtime.calling.gates import GrantSpent

        try:
            return _view(self.api.consume(request_id))
        except ApprovalsRefused as exc:
            if exc.kind == "grant-spent":
                raise GrantSpent(str(exc)) from None
            raise

    def close(self) -> None:
        self.api.close()


def _view(found: dict[str, Any]) -> ApprovalView:
    """An approval as the API answered it, held to the shape the gatekeepers read."""
    from typing import cast

    from skillpress.platform.approvals_api import ApprovalsUnavailable

    if not isinstance(found.get("id"), int) or not isinstance(found.get("status"), str):
        raise ApprovalsUnavailable("the approvals API answered without a request's id and status")
    return cast("ApprovalView", found)


def desk_opener(
    approvals_url: str | None, open_ctx: Callable[[], AppContext]
) -> Callable[[], Desk]:
    """How this process settles gated calls: through the approvals API at `approvals_url`
    (SKILLPRESS_APPROVALS_URL) with the runtime token in SKILLPRESS_RUNTIME_TOKEN, or in the
    records here. The one place the two are chosen, for every face."""
    if not approvals_url:
        return lambda: LocalDesk(open_ctx)
    url = approvals_url

    def api() -> Desk:
        import os

        from skillpress.app.base.roles import RUNTIME_TOKEN_ENV
        from skillpress.errors import Refused

        token = os.environ.get(RUNTIME_TOKEN_ENV, "").strip()
        if not token:
            raise Refused(
                f"SKILLPRESS_APPROVALS_URL is {url}: this runtime asks for approvals there with"
                f" its token, in {RUNTIME_TOKEN_ENV}, which is not set; the call was not sent"
            )
        return ApiDesk(url, token)

    return api


def _goes(row: ApprovalView) -> bool:
    """Whether a decision sends the call: `auto` or a grant this call used (`GO`), nothing else."""
    from skillpress.runtime.calling.gates import GO

    return row["status"] in GO


def decided_under(bound: str | None, gate: GateCheck) -> str:
    """The skill a gated call is decided under: the one whose operation it is (`gate.skill`, as
    the face placing the call bound it), never the skill of a workflow calling it or another a
    host binds. A gatekeeper made for one skill (`bound`) decides no other's call: GateClosed."""
    named = gate.skill or bound
    if named is None:
        raise GateClosed(f"not sent: {gate.operation}'s call names no skill to decide it under")
    if bound is not None and named != bound:
        raise GateClosed(
            f"not sent: {gate.operation} is an operation of {named}, and this gatekeeper decides"
            f" {bound}'s calls only; a host binding several skills decides each under its own"
            " (api_gatekeeper(url, token) without a slug)"
        )
    return named


def terminal_gatekeeper(
    open_desk: Callable[[], Desk],
    slug: str,
    who: str,
    approver: Callable[[], str | None],
    wait: float,
    say: Callable[[str], None],
) -> Gatekeeper:
    """A gated call from a terminal goes only with a person's approval (or under the gate's
    `auto_below`), and every decision is recorded: the operator's own (`approver` names them,
    `--approve`), or a request another person grants (waited for up to `wait` seconds, polled
    twice a second). A grant another identical call used first is not this call's: it asks anew
    and waits on. Raises GateClosed, naming the request, when it is denied, expires or is still
    pending. What it says names no command that decides: whoever runs the call may be an agent."""
    from skillpress.runtime.calling.gates import GrantSpent

    def decide(gate: GateCheck) -> None:
        skill = decided_under(slug, gate)
        desk = open_desk()
        try:
            by = approver()
            row = desk.settle(skill, gate, who, f"{by} at the terminal" if by else None)
            if _goes(row):
                say(f"approved by {row['decided_by']} (#{row['id']}): {gate.describe()}")
                return
            if row["status"] == "pending":
                say(
                    f"waiting for approval #{row['id']}: {gate.describe()}."
                    " It waits for a person's decision"
                )
            deadline = time.monotonic() + wait
            while row["status"] == "pending":
                asked = row["id"]
                assert asked is not None
                try:
                    row = desk.consume(asked)
                except GrantSpent:
                    row = desk.settle(skill, gate, who)
                    if row["status"] == "pending":
                        say(
                            f"approval #{asked} was used by another call with the same values;"
                            f" this one waits for approval #{row['id']}"
                        )
                if _goes(row):
                    say(f"approved by {row['decided_by']} (#{row['id']})")
                    return
                if row["status"] != "pending" or time.monotonic() >= deadline:
                    break
                time.sleep(0.5)
        finally:
            desk.close()
        if row["status"] == "denied":
            raise GateClosed(
                f"not sent: approval #{row['id']} was denied by {row['decided_by']}",
                row["id"],
                denied=True,
            )
        if row["status"] == "pending":
            raise GateClosed(
                f"not sent: approval #{row['id']} is still pending; the same call once"
                " it is approved goes through",
                row["id"],
            )
        raise GateClosed(
            f"not sent: approval #{row['id']} {row['status']} before this call could use it;"
            " calling again asks anew"
        )

    return decide


def agent_gatekeeper(open_desk: Callable[[], Desk], slug: str | None = None) -> Gatekeeper:
    """An agent's gated call (over MCP, or a host's): sent under `auto_below`, or when a person
    granted exactly that call and this call used the grant (once); otherwise recorded as a
    request the agent is told to wait on (GateClosed naming it). Each call is decided under the
    skill whose operation it is; made for one `slug`, it decides that skill's calls only. The
    desk is opened at the first gated call, not when the server starts."""

    def decide(gate: GateCheck) -> None:
        skill = decided_under(slug, gate)
        desk = open_desk()
        try:
            row = desk.settle(skill, gate, gate.caller or "an MCP client")
        finally:
            desk.close()
        if _goes(row):
            return
        if row["status"] != "pending":
            raise GateClosed(
                f"not sent: approval #{row['id']} {row['status']} before this call could use it;"
                " calling again with the same arguments asks anew"
            )
        until = (row["expires_at"] or "")[:16].replace("T", " ")
        raise GateClosed(
            f"not sent: {gate.describe()}. It waits for a person's approval (request"
            f" #{row['id']}), open until {until} UTC;"
            " tell the user what you would send and why, and call again with the same arguments"
            " once they say it is approved.",
            row["id"],
        )

    return decide


def api_gatekeeper(url: str, token: str, slug: str | None = None) -> Gatekeeper:
    """`agent_gatekeeper` over the approvals of the skillpress API at `url`, with a runtime's
    `token`: what an agent host (`SkillHost(gatekeeper=...)`) uses when the approvals live with
    `skillpress serve`, out of the agent's reach. Without `slug` it decides every skill's calls,
    each under its own (a host of several skills); with one, that skill's only."""
    return agent_gatekeeper(lambda: ApiDesk(url, token), slug)


def workflows_for(
    files: Mapping[str, bytes],
    skill: Skill,
    beside: Path | None,
    open_ctx: Callable[[], AppContext],
) -> dict[str, Workflow]:
    """The workflows of the skill; a skill one `uses` is the package folder of that slug beside
    this one (`beside`), or else the published skill's live version. WorkflowRefused when they
    do not load."""

    def other(slug: str) -> Skill | None:
        where = beside / slug if beside is not None and (beside / slug).is_dir() else slug
        try:
            found, named = skill_files(str(where), open_ctx)
            return load_skill(found, slug=named, lazy=True)
        except (SystemExit, Exception):  # noqa: BLE001 (not available: the caller says so)
            return None

    return load_workflows(files, skill, other)


@dataclass(frozen=True)
class RunOptions:
    """How a run from here goes: a dry run sends nothing; a sandboxed one (a package from
    elsewhere) sends nothing that writes; `who` started it; a credential's token URL may be on a
    private network (SKILLPRESS_FETCH_ALLOW_PRIVATE) for another skill a step calls too."""

    dry_run: bool
    sandboxed: bool
    who: str
    allow_private_token_url: bool = False


def run_here(
    skill: Skill,
    files: Mapping[str, bytes],
    workflows: dict[str, Workflow],
    name: str,
    raw_args: str,
    setup: CallSetup,
    gate_for: Callable[[Skill], Gatekeeper],
    options: RunOptions,
    report: StepReport,
    journal: RunJournal | None,
    model: Callable[[], Chat | None],
) -> tuple[Run, RunLog]:
    """A workflow run from the command line (`run_flow`, as every face runs one): its
    arguments read from `raw_args`, a skill it `uses` called with that skill's own credential,
    a guided or draft one refused here without a model (`model()`, asked only for those) or
    in a dry run (a model decides its calls: nothing to print before it runs)."""
    wf = workflows[name]
    given = workflow_arguments(wf, raw_args)
    chat = None
    if wf.execution != "hardened":
        if options.dry_run:
            raise WorkflowRefused(
                f"/{wf.name} is {wf.execution}: a model decides its calls, so there is nothing"
                " to print before it runs"
            )
        chat = model()
        if chat is None:
            raise WorkflowRefused(
                f"/{wf.name} is {wf.execution}: it needs a model; set SKILLPRESS_LLM_BASE_URL and"
                " SKILLPRESS_LLM_MODEL (and SKILLPRESS_LLM_API_KEY_ENV naming the key's variable)"
            )
    allow = options.allow_private_token_url

    def setup_for(owner: Skill) -> CallSetup:
        if owner is skill:
            return setup
        return replace(setup, credential=credential_for(owner, None, allow))

    place = StepPlace(setup_for, gate_for, options.sandboxed, SANDBOXED)
    return run_flow(
        workflows,
        wf,
        skill,
        files,
        given,
        place,
        chat=chat,
        journal=journal,
        version=None,
        by=options.who,
        dry_run=options.dry_run,
        report=report,
    )
