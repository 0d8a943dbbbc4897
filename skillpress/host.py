"""The agent host's face, a face of its own beside the command line and MCP (an agent face: it
serves the runtime, which it imports by the written contract the agent faces share; the
derivation core it never reaches): the runtime API for agent hosts: skills bound from a folder (of package folders, or the one
`skillpress follow` keeps live), their tools in a provider's shape, and a call by tool name that
goes through the same translation, checks and gates as `skillpress call`.

A skill is reloaded when its folder changes (a follower swapping `DIR/<slug>` to a new version),
so a host always serves what is live, without restarting. A folder may be a derived package, a
hand-written one, or an Agent Skills folder (`follow --format agent-skills`, `export`).

Every error it raises is a `skillpress.errors.SkillpressError`: Permanent (CallRefused, GateClosed,
PackageError, UnknownOperation: change the call or the folder) or Retryable (ExecutionFailed: no
complete answer came back).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skillpress.app.base.package_dir import read_package_dir
from skillpress.app.serving.calling import credential_for
from skillpress.app.serving.followers import folder_stamp
from skillpress.format.provider_names import original_names
from skillpress.runtime.calling.calls import (
    CallSetup,
    GateClosed,
    Gatekeeper,
    closed_gate,
    place_call,
    prepare_call,
)
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.request import PreparedRequest
from skillpress.runtime.calling.results import CallResult
from skillpress.runtime.package.model import (
    PackageError,
    Skill,
    Tool,
    UnknownOperation,
    shaped_tool,
)
from skillpress.runtime.package.profiles import TooManyTools, check_tool_count
from skillpress.runtime.package.skill import load_skill, tool_clash
from skillpress.runtime.workflows.load import load_workflows
from skillpress.runtime.workflows.model_runs import Chat
from skillpress.runtime.workflows.run import Workflow
from skillpress.runtime.workflows.run_log import RunJournal
from skillpress.runtime.workflows.runner import StepPlace, run_flow

__all__ = ["SkillHost", "GateClosed", "TooManyTools"]


@dataclass
class _Bound:
    skill: Skill
    stamp: str  # the folder's identity when loaded (a follower's link target, or the path)
    files: Mapping[str, bytes] = field(default_factory=dict)
    flows: dict[str, Workflow] | None = None  # its workflows, read when first asked for

    def workflows(self) -> dict[str, Workflow]:
        """Its workflows by name ({} without workflows.yaml; WorkflowRefused when they do not
        load: a folder whose workflows are wrong is refused, never half-served)."""
        if self.flows is None:
            self.flows = load_workflows(self.files, self.skill)
        return self.flows


@dataclass
class SkillHost:
    """Skills bound from `folder`: every subfolder that is a package (or `skills` only)."""

    folder: Path | str
    skills: tuple[str, ...] = ()
    credentials: dict[str, str] = field(default_factory=dict)  # slug → env var NAME
    limits: CallLimits = field(default_factory=CallLimits)
    allow_private_token_url: bool = False  # an OAuth 2 token URL on a trusted network
    # folder name → where its API is (a skill whose servers are paths, a mock, a region)
    base_urls: dict[str, str] = field(default_factory=dict)
    # decides a gated call (returns to send it, raises GateClosed): the host's own approvals,
    # each call named by the skill whose operation it is (`GateCheck.skill`); by default only a
    # call under its gate's auto_below goes
    gatekeeper: Gatekeeper = closed_gate
    # the host's model for guided and draft workflows (messages, tools, tool_choice → the
    # assistant's message, OpenAI-shaped); without one only hardened workflows are tools
    chat: Chat | None = None
    # where workflow runs are kept (a run waiting at a gate resumes when called again with the
    # same arguments); without one a run's steps come back in its result only
    runs: RunJournal | None = None
    # who runs the workflows, as their records name them
    caller: str = "an agent host"
    _bound: dict[str, _Bound] = field(default_factory=dict, init=False, repr=False)
    # calls come from many threads at once (an agent's parallel tool calls): binding is one at
    # a time, so no call meets a skill another is reloading half-way
    _binding: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def bound(self) -> list[Skill]:
        """The bound skills, each reloaded if its folder now holds another version (PackageError
        for a folder that is not a loadable package)."""
        with self._binding:
            return self._bind()

    def _bind(self) -> list[Skill]:
        root = Path(self.folder)
        names = self.skills or tuple(
            sorted(p.name for p in root.iterdir() if not p.name.startswith(".") and p.is_dir())
        )
        out: list[Skill] = []
        changed = False
        for name in names:
            path = root / name
            stamp = folder_stamp(path)
            held = self._bound.get(name)
            if held is None or held.stamp != stamp:
                files = read_package_dir(path, hand_written=True)
                skill = load_skill(files, slug=name, base_url=self.base_urls.get(name), lazy=True)
                held = self._bound[name] = _Bound(skill, stamp, files)
                changed = True
            same = next((s for s in out if s.slug == held.skill.slug), None)
            if same is not None:  # their tools would share names: a call could reach either
                raise PackageError(
                    f"{path} is skill {same.slug}, which another folder under {root} binds"
                    " already; bind one of them"
                )
            out.append(held.skill)
        if changed:  # tool names are made from each slug; two slugs can still meet in one, and a
            # workflow's tool can be named like another skill's operation
            flows = {
                s.slug: [wf.tool_name for wf in self._held(s).workflows().values()] for s in out
            }
            clash = tool_clash({s.slug: s for s in out}, flows)
            if clash is not None:
                self._bound.clear()  # refused whole: the next call binds (and checks) again
                raise PackageError(f"{clash} under {root}: bind one of them")
        return out

    def tools(self, provider: str = "anthropic", only: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Every bound skill's tools in `provider`'s shape (anthropic, openai, openai-strict,
        gemini, mcp): its operations, then its workflows (one tool runs each): the hardened
        ones, and with a `chat` model the guided and draft ones too. `only`: just the tools of
        these names. TooManyTools where they are more than the provider takes in one request
        (OpenAI: 128)."""
        wanted = set(only)
        out = []
        for skill in self.bound():
            out += [t.adapted(provider)[0] for t in skill.tools if not wanted or t.name in wanted]
            for wf in self._held(skill).workflows().values():
                if self._can_run(wf) and (not wanted or wf.tool_name in wanted):
                    tool, _ = shaped_tool(
                        wf.tool_name, wf.description or wf.name, wf.to_tool_schema(), provider
                    )
                    out.append(tool)
        check_tool_count(
            provider, len(out), "choose those the agent needs: tools(provider, only=[names])"
        )
        return out

    def _held(self, skill: Skill) -> _Bound:
        """What is bound for `skill` (or, reloaded since by another call, for its slug now)."""
        held = list(self._bound.values())
        found = next((b for b in held if b.skill is skill), None)
        if found is None:
            found = next((b for b in held if b.skill.slug == skill.slug), None)
        if found is None:
            raise PackageError(f"{skill.slug} is no longer bound under {self.folder}")
        return found

    def _flow(self, name: str) -> tuple[Skill, Workflow] | None:
        for skill in self.bound():
            for wf in self._held(skill).workflows().values():
                if self._can_run(wf) and name == wf.tool_name:
                    return skill, wf
        return None

    def _can_run(self, wf: Workflow) -> bool:
        """Whether this host can run `wf`: a hardened one always, a model's with `chat`."""
        return wf.execution == "hardened" or self.chat is not None

    def _find(self, name: str) -> tuple[Skill, Tool]:
        skills = self.bound()
        for skill in skills:
            try:
                return skill, skill.tool(name)
            except UnknownOperation:
                continue
        raise UnknownOperation(
            f"no bound skill ({', '.join(s.slug for s in skills) or 'none'}) has a tool {name!r}"
        )

    def _setup(
        self,
        skill: Skill,
        environ: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CallSetup:
        credential = credential_for(
            skill, self.credentials.get(skill.slug), self.allow_private_token_url
        )
        limits = self.limits if timeout is None else replace(self.limits, timeout=timeout)
        return CallSetup(credential=credential, limits=limits, environ=environ)

    def prepare(self, name: str, args: dict[str, Any]) -> PreparedRequest:
        """The request a call would send (CallRefused when its arguments are wrong)."""
        skill, tool = self._find(name)
        return prepare_call(tool, args, skill.hosts, self._setup(skill)).request

    def call(
        self,
        name: str,
        args: dict[str, Any],
        page_url: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CallResult:
        """Call a tool by name (`page_url`: a previous result's `next.page_url`). `environ`
        holds this call's credential variables (a host serving many tenants passes each one's;
        default: the process environment), `timeout` bounds this call's exchange. A gated call
        goes only as the host's `gatekeeper` decides (GateClosed otherwise; by default only
        under its gate's `auto_below`: approvals are a person's)."""
        flow = self._flow(name) if page_url is None else None
        if flow is not None:  # its inputs under the names its tool was offered with, read back
            return self._run(
                *flow, original_names(flow[1].to_tool_schema(), args), environ, timeout
            )
        skill, tool = self._find(name)
        setup = self._setup(skill, environ, timeout)
        placed = place_call(
            tool, args, skill.hosts, setup, self.gatekeeper, page_url, skill=skill.slug
        )
        assert placed.result is not None
        return placed.result

    def _run(
        self,
        skill: Skill,
        wf: Workflow,
        args: dict[str, Any],
        environ: Mapping[str, str] | None,
        timeout: float | None,
    ) -> CallResult:
        """A workflow (hardened: its steps; guided or draft: the host's model), each step a call
        like any other (its gate decided by the host's gatekeeper); StepFailed names the step
        that stopped it. Its result is the
        workflow's answer, as the body of a 200."""
        place = StepPlace(
            lambda owner: self._setup(owner, environ, timeout), lambda owner: self.gatekeeper
        )
        done, log = run_flow(
            self._held(skill).workflows(),
            wf,
            skill,
            self._held(skill).files,
            args,
            place,
            chat=self.chat,  # a guided or draft workflow is offered only with the host's model
            journal=self.runs,
            version=None,
            by=self.caller,
        )
        answer = {
            "workflow": wf.name,
            "result": done.result,
            "steps": [s.as_dict() for s in log.steps],
        } | ({"run": log.run_id} if log.run_id is not None else {})
        data = json.dumps(answer, ensure_ascii=False, default=str).encode()
        return CallResult(200, {"content-type": "application/json"}, data)

    async def acall(
        self,
        name: str,
        args: dict[str, Any],
        page_url: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CallResult:
        """`call` for an async host: the exchange runs off its event loop."""
        return await asyncio.to_thread(
            self.call, name, args, page_url, environ=environ, timeout=timeout
        )
