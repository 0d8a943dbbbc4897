"""Calling a skill's operations and running its workflows from a face that is not a host: the
command line's `call` and `run` (the gatekeepers every face decides a gated call with are in
`gatekeepers.py`). Each use-case here
is what the face calls; the face parses its input and prints.

- `open_package` / `open_target`: a package directory, or a published skill's live version,
  loaded (lazily: each tool built when first asked for);
- `call_setup`: the credential (by the variable it is read from), limits and the file folder a
  call may read a file argument from;
- `workflows_for` and `run_here`: a skill's workflows (another skill's found beside it or
  published), and one run step by step, each call checked, gated and recorded like any other.

The runtime's call types and errors are not re-exported: the command line's agent commands
import them from the runtime itself, as `SkillHost` and the MCP server do (a written door in
pyproject's import contracts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillpress.app.base.package_dir import read_package_dir
from skillpress.runtime.calling.calls import (
    CallSetup,
    Gatekeeper,
)
from skillpress.runtime.calling.credential import Credential, credential_env
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.files import local_files
from skillpress.runtime.package.model import AuthHeader, PackageError, Skill
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.model_runs import Chat
from skillpress.runtime.workflows.run import (
    Run,
    Workflow,
    WorkflowRefused,
    workflow_arguments,
)
from skillpress.runtime.workflows.run_log import RunJournal, RunLog
from skillpress.runtime.workflows.runner import StepPlace, StepReport, run_flow

if TYPE_CHECKING:
    from skillpress.app.base.context import AppContext
    from skillpress.platform.settings import Settings

__all__ = [
    "AUTH_KINDS",
    "SANDBOXED",
    "RunOptions",
    "ToolList",
    "bound_name",
    "call_setup",
    "credential_for",
    "model_chat",
    "open_package",
    "open_target",
    "run_here",
    "skill_files",
    "tool_list",
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
    say what is wrong; TooManyTools, more than the provider takes in one request."""
    from skillpress.runtime.interop.tool_lists import package_tools
    from skillpress.runtime.package.model import PROVIDERS
    from skillpress.runtime.package.profiles import check_tool_count
    from skillpress.runtime.workflows.load import loadable_workflows

    if provider not in PROVIDERS:
        raise PackageError(f"unknown format {provider!r}: choose one of {', '.join(PROVIDERS)}")
    files = read_package_dir(package_dir, hand_written=True)
    notes: dict[str, list[str]] = {}
    tools = package_tools(files, provider, notes, only, with_model)
    check_tool_count(provider, len(tools), "choose those an agent needs with --only NAME")
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
