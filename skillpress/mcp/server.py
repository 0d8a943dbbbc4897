"""A skill as an MCP server, read the way the package is designed to be read: deferred.

The body is the server's instructions. Three tools are offered up front — read a file of the
skill (a category, an operation's detail), load operations as tools by their manifest names,
and list what is loaded — and each loaded operation then becomes a tool of its own, called
through the runtime's translation and execution (a refusal comes back as a tool error, before
anything is sent). Nothing hands the model every schema at once unless `eager` is asked for.
"""
# size: one server's state and its tool handlers, a small method each, in one class

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server

from skillpress.mcp.tools import base_tools, skill_run_tool
from skillpress.runtime.calling.calls import CallSetup, GateClosed, Gatekeeper, place_call
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.fit import render
from skillpress.runtime.calling.gates import GateCheck
from skillpress.runtime.calling.request import CallRefused, ExecutionFailed
from skillpress.runtime.package.model import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.package.skill import tool_clash
from skillpress.runtime.workflows.run_log import RunJournal

__all__ = [
    "BASE_TOOLS",
    "Loaded",
    "build_catalog_server",
    "build_mcp_server",
]

Loaded = tuple[Skill, Mapping[str, bytes], str | None]  # a skill, its files, its version

WORKFLOWS = "workflows.yaml"
BASE_TOOLS = (
    "read_skill_file",
    "describe_operation",
    "call_operation",
    "load_tools",
    "loaded_tools",
)


# this server's own verbs, before the body (which names no face's tools)
HOW_TO = (
    "Over this server: read a file the skill names with read_skill_file (body.md, a category's"
    " file, an operation's <name>.md); call an operation with call_operation, or load it as a"
    " tool of its own with load_tools; describe_operation shows its arguments. A result with"
    " `next` has another page: call again with `next.arguments`, or with call_operation's"
    " `page_url` set to `next.page_url`."
)


# the MCP client whose tool call is being served (its gated calls are asked in its name)
_CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("mcp_caller", default=None)


def _client_name(ctx: Any) -> str:
    """'MCP client NAME VERSION' as the client said at initialize (bounded), else 'an MCP client'."""
    try:
        info = ctx.session.client_params.client_info
        said = f"{info.name} {info.version}".strip()
    except AttributeError:
        return "an MCP client"
    clean = "".join(c for c in said if c.isprintable())[:80]
    return f"MCP client {clean}" if clean else "an MCP client"


def _text(value: Any, error: bool = False) -> types.CallToolResult:
    text = render(value)  # what is measured against the budget is what is sent
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _as_mcp(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name, description=tool.description, input_schema=tool.offered_schema
    )


def build_mcp_server(
    skill: Skill,
    files: Mapping[str, bytes],
    *,
    eager: bool = False,
    credential: Credential | None = None,
    limits: CallLimits | None = None,
    gatekeeper: Gatekeeper | None = None,
    reload: Callable[[], Loaded | None] | None = None,
    version: str | None = None,
    sandboxed: bool = False,
    model: Callable[[], Any] | None = None,
    runs: RunJournal | None = None,
) -> Server[Any]:
    """The MCP server for one skill; `files` are the package's (what read_skill_file may return).
    `gatekeeper` decides a gated call (it returns to send, raises GateClosed with the message
    the agent gets): the operator's approvals; without one a gated call is never sent. `runs`
    keeps each workflow run (a run waiting at a gate resumes when called again). `reload` gives the skill anew
    when its version changed (None when not): the next request after a publication uses the new
    version, and results name the version they came from (`version`)."""

    def refresh() -> dict[str, Loaded] | None:
        fresh = reload() if reload is not None else None
        return {skill.slug: fresh} if fresh is not None else None

    return build_catalog_server(
        {skill.slug: (skill, files, version)},
        eager=eager,
        credentials=lambda slug, sk: credential,
        limits=limits,
        gatekeepers=(lambda slug: gatekeeper) if gatekeeper else None,
        refresh=refresh if reload is not None else None,
        several=False,
        sandboxed=sandboxed,
        model=model,
        runs=runs,
    )


def _loadable(skill: Skill, files: Mapping[str, bytes]) -> Mapping[str, Any]:
    from skillpress.runtime.workflows.load import loadable_workflows

    return loadable_workflows(files, skill)


def _workflow_list(skill: Skill, files: Mapping[str, bytes]) -> str:
    """The skill's workflows as the instructions list them for `skill_run` ("" when none, or
    when its workflows do not load: skill_run then says so)."""
    from skillpress.runtime.workflows.load import loadable_workflows

    flows = loadable_workflows(files, skill)
    if not flows:
        return ""
    lines = [f"\nWorkflows of {skill.slug} (run one with skill_run):"]
    for name, wf in sorted(flows.items()):
        first = wf.description.splitlines()[0] if wf.description else ""
        required = ", ".join(wf.parameters.get("required") or []) or "nothing required"
        lines.append(f"- `{name}` ({wf.execution}; takes {required}): {first}".rstrip())
    return "\n".join(lines) + "\n"


def _index(skills: Mapping[str, Loaded]) -> str:
    """The instructions of a server of several skills: each skill's name and what it is for,
    and where its body is read (bodies are read on demand, like every other file)."""
    lines = [
        f"{len(skills)} skills. Read a skill's body before its first use:"
        " read_skill_file with its `skill` and path `body.md`; every tool that names an operation"
        " or a file takes the skill it belongs to. " + HOW_TO,
        "",
    ]
    for slug, (skill, files, _) in sorted(skills.items()):
        body = files.get("body.md", b"").decode("utf-8", "replace").splitlines()
        title = next((ln[2:].strip() for ln in body if ln.startswith("# ")), slug)
        about = next((ln.strip() for ln in body[1:] if ln.strip() and not ln.startswith("#")), "")
        lines.append(f"- `{slug}` — {title}: {about} ({len(skill.operations)} operations)")
    flows = "".join(_workflow_list(skill, files) for _, (skill, files, _) in sorted(skills.items()))
    return "\n".join(lines) + "\n" + flows


class _CatalogServer:
    """The MCP server for a set of skills by slug (`several`: the fixed tools take a `skill`).
    `refresh` gives the skills anew when one changed (None when none did): skills it names are
    replaced, so a publication is what the next request sees. `credentials` and `gatekeepers`
    give a skill's credential and approvals by its slug (a skill published later included).
    `sandboxed` (skills the operator did not publish): a workflow's steps that write are not sent.
    `model` gives the chat function guided and draft workflows run with (None: no model).
    `runs` keeps each workflow run as a record (None: not kept, and a waiting run cannot resume)."""

    def __init__(
        self,
        skills: Mapping[str, Loaded],
        *,
        eager: bool,
        credentials: Callable[[str, Skill], Credential | None] | None,
        limits: CallLimits | None,
        gatekeepers: Callable[[str], Gatekeeper] | None,
        refresh: Callable[[], Mapping[str, Loaded] | None] | None,
        several: bool,
        sandboxed: bool,
        model: Callable[[], Any] | None,
        runs: RunJournal | None,
    ) -> None:
        self.eager, self.credentials, self.gatekeepers = eager, credentials, gatekeepers
        self.refresh, self.several, self.sandboxed = refresh, several, sandboxed
        self.model, self.runs = model, runs
        self.limits = limits or CallLimits()
        self.state: dict[str, Loaded] = {}
        self.left_out: dict[str, str] = {}  # a key not served, and why
        # What a client loaded is its own where the transport says who the client is (a
        # streamable-HTTP session id); over stdio the process serves one client. mcp 2.x makes a
        # session per request. Each is (the skill's key, the tool's name): a call goes to the
        # skill it was loaded from.
        self.loaded_by_client: dict[str, list[tuple[str, str]]] = {}
        self.broken: dict[tuple[str, str], str] = {}  # a tool that does not load, and why
        self.read_flows: dict[str, tuple[Mapping[str, bytes], Mapping[str, Any]]] = {}  # by slug
        self.take(skills)
        self.slugs = sorted(self.state)

    def take(self, fresh: Mapping[str, Loaded]) -> None:
        """Serve `fresh`, each skill once: a second folder of a slug already served would give
        its tools the same names, so a call could reach the wrong skill's gates; it is left out."""
        for key, loaded in sorted(fresh.items()):
            other = next(
                (
                    k
                    for k, (sk, _, _) in self.state.items()
                    if sk.slug == loaded[0].slug and k != key
                ),
                None,
            )
            if other is not None:
                self.left_out[key] = (
                    f"{key} is skill {loaded[0].slug}, which {other} serves already"
                )
                continue
            try:
                served = {k: v for k, v in self.state.items() if k != key} | {key: loaded}
                flows = {
                    k: [wf.tool_name for wf in _loadable(sk, files).values()]
                    for k, (sk, files, _) in served.items()
                    if WORKFLOWS in files
                }
                clash = tool_clash({k: sk for k, (sk, _, _) in served.items()}, flows)
            except PackageError as exc:  # a package that does not list: not served
                self.left_out[key] = f"{key} does not load ({exc})"
                continue
            if clash is not None:
                self.left_out[key] = f"{key} is not served: {clash}"
                continue
            self.state[key] = loaded

    async def current(self) -> dict[str, Loaded]:
        if self.refresh is not None:  # a stat, a readlink or a query, off the event loop
            fresh = await asyncio.to_thread(self.refresh)
            if fresh:
                self.take(fresh)
        return self.state

    def versioned(self, slug: str, value: Any) -> Any:
        version = self.state[slug][2] if slug in self.state else None
        if isinstance(value, dict) and (version or self.several):
            return {
                **({"skill": slug} if self.several else {}),
                **({"version": version} if version else {}),
                **value,
            }
        return value

    def loaded_for(self, ctx: Any) -> list[tuple[str, str]]:
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        key = getattr(connection, "session_id", None) or "-"
        if key not in self.loaded_by_client:
            # eager: every tool by name, from the index (each is built when it is listed)
            self.loaded_by_client[key] = (
                [
                    (k, e.tool)
                    for k, (sk, _, _) in self.state.items()
                    for e in sk.operations
                    if e.tool
                ]
                + [  # and its workflows, each a tool of its own
                    (k, wf.tool_name)
                    for k, (sk, files, _) in self.state.items()
                    if WORKFLOWS in files
                    for wf in _loadable(sk, files).values()
                    if self.runnable(wf)
                ]
                if self.eager
                else []
            )
        return self.loaded_by_client[key]

    def owner(self, key: str, tool_name: str) -> tuple[str, Tool] | None:
        if key not in self.state:
            return None
        try:
            return key, self.state[key][0].tool(tool_name)
        except UnknownOperation:
            return None  # gone in this version
        except PackageError as exc:  # one tool that does not load never takes the server down
            self.broken[(key, tool_name)] = str(exc)
            return None

    def loaded_tools(self, ctx: Any) -> list[tuple[str, Tool]]:
        return [
            found
            for k, n in self.loaded_for(ctx)
            if self.flow_of(k, n) is None and (found := self.owner(k, n)) is not None
        ]

    def runnable(self, wf: Any) -> bool:
        """Whether this server runs `wf`: a hardened one always, a model's with a model."""
        return bool(
            wf.execution == "hardened" or (self.model is not None and self.model() is not None)
        )

    def flow_of(self, key: str, tool_name: str) -> Any:
        """The (workflows, workflow) a loaded tool name runs, or None (an operation's name)."""
        if key not in self.state:
            return None
        sk, files, _ = self.state[key]
        if WORKFLOWS not in files:
            return None
        found = self._workflow(sk, files, tool_name)
        return found if found is not None and found[1].tool_name == tool_name else None

    def loaded_flows(self, ctx: Any) -> list[types.Tool]:
        out = []
        for k, n in self.loaded_for(ctx):
            found = self.flow_of(k, n)
            if found is not None and self.runnable(found[1]):
                wf = found[1]
                out.append(
                    types.Tool(
                        name=wf.tool_name,
                        description=wf.description or wf.name,
                        input_schema=wf.to_tool_schema(),
                    )
                )
        return out

    def chosen(self, args: dict[str, Any]) -> tuple[str, Skill, Mapping[str, bytes]] | str:
        """The skill a fixed tool's call names (the only one, when one is served), or why not;
        a skill is named by its slug or the folder it is served from."""
        given = str(args.get("skill", "")) if self.several else self.slugs[0]
        key = (
            given
            if given in self.state
            else next((k for k, (sk, _, _) in self.state.items() if sk.slug == given), None)
        )
        if key is None:
            why = f" ({self.left_out[given]})" if given in self.left_out else ""
            return (
                f"missing `skill`: one of {', '.join(sorted(self.state))}"
                if not given
                else f"no skill {given!r} here{why}: one of {', '.join(sorted(self.state))}"
            )
        sk, files, _ = self.state[key]
        return key, sk, files

    def _input_refusal(self, name: str, args: dict[str, Any]) -> str | None:
        """Why `args` do not fit fixed tool `name`'s input schema (an unknown key, a missing or
        mistyped one: `skill_run` given `name` for `workflow`), or None."""
        from jsonschema import Draft202012Validator

        first = next(iter(self.state.values()))[0]
        several = sorted(self.state) if self.several else None
        fixed = [*base_tools(first, several), skill_run_tool(several)]
        schema = next((t.input_schema for t in fixed if t.name == name), None)
        if schema is None:
            return None
        problems = sorted(
            Draft202012Validator(schema).iter_errors(args), key=lambda e: (list(e.path), e.message)
        )
        if not problems:
            return None
        said = "; ".join(
            f"{'.'.join(map(str, e.path)) + ': ' if e.path else ''}{e.message}"
            for e in problems[:3]
        )
        takes = ", ".join(sorted(schema.get("properties") or {}))
        return f"{name}: {said} (it takes {takes})"

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        now = await self.current()
        first = next(iter(now.values()))[0]
        fixed = base_tools(first, sorted(now) if self.several else None)
        if any(WORKFLOWS in files for _, files, _ in now.values()):
            fixed.append(skill_run_tool(sorted(now) if self.several else None))
        return types.ListToolsResult(
            tools=[
                *fixed,
                *(_as_mcp(t) for _, t in self.loaded_tools(ctx)),
                *self.loaded_flows(ctx),
            ]
        )

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """One tool call: a fixed tool, or an operation or workflow the client loaded."""
        name, args = params.name, dict(params.arguments or {})
        _CALLER.set(_client_name(ctx))
        await self.current()
        loaded = self.loaded_for(ctx)
        if name == "loaded_tools":
            return _text(sorted(n for _, n in loaded))
        if name not in ("skill_run", *BASE_TOOLS):
            return await self._loaded_call(name, args, loaded)
        wrong = self._input_refusal(name, args)  # a fixed tool holds callers to its own schema
        if wrong is not None:
            return _text(wrong, error=True)
        picked = self.chosen(args)
        if isinstance(picked, str):
            return _text(picked, error=True)
        slug, skill, files = picked
        if name == "skill_run":
            found = self._workflow(skill, files, str(args.get("workflow", "")))
            if found is None:
                return _text(f"{skill.slug} has no workflow {args.get('workflow')!r}", error=True)
            return await self._run(slug, skill, files, found, args.get("arguments") or {})
        if name == "read_skill_file":
            return self._read_file(skill, files, args)
        if name == "load_tools":
            return await self._load(ctx, slug, skill, files, args, loaded)
        return await self._named(name, slug, skill, files, args)

    async def _loaded_call(
        self, name: str, args: dict[str, Any], loaded: list[tuple[str, str]]
    ) -> types.CallToolResult:
        """A tool the client loaded by its own name: an operation's, or a workflow's."""
        key = next((k for k, n in loaded if n == name), None)
        flow = self.flow_of(key, name) if key is not None else None
        if key is not None and flow is not None:
            sk, files, _ = self.state[key]
            return await self._run(key, sk, files, flow, args)
        found = self.owner(key, name) if key is not None else None
        if found is None:
            known = any(
                e.tool == name or e.name == name
                for sk, _, _ in self.state.values()
                for e in sk.operations
                if e.tool
            )
            hint = " (load it first with load_tools)" if known else ""
            return _text(f"no tool {name!r} is loaded{hint}", error=True)
        return await self._call(found[0], found[1], args)

    def _read_file(
        self, skill: Skill, files: Mapping[str, bytes], args: dict[str, Any]
    ) -> types.CallToolResult:
        path = str(args.get("path", "")).removeprefix(f"skill/{skill.slug}/").lstrip("/")
        if not path.endswith(".md") or path not in files:
            return _text(
                f"{skill.slug} has no file {path!r}; the instructions name its files", error=True
            )
        return _text(files[path].decode("utf-8", "replace"))

    async def _load(
        self,
        ctx: Any,
        slug: str,
        skill: Skill,
        files: Mapping[str, bytes],
        args: dict[str, Any],
        loaded: list[tuple[str, str]],
    ) -> types.CallToolResult:
        """Operations (or workflows) loaded as tools of their own, by the names listed."""
        names = args.get("names")
        if not isinstance(names, list) or not names:
            return _text(
                "give names: the operations to load, as the instructions list them", error=True
            )
        added: list[str] = []
        problems: list[str] = []
        for raw in names[:20]:
            tool_name = self._loadable(skill, files, str(raw), problems)
            if tool_name is None:
                continue
            taken = next((k for k, n in loaded if n == tool_name and k != slug), None)
            if taken is not None:
                problems.append(f"{tool_name}: {taken} has a loaded tool of that name")
                continue
            if (slug, tool_name) not in loaded:
                loaded.append((slug, tool_name))
                added.append(tool_name)
        if added:
            try:
                await ctx.session.send_tool_list_changed()
            except Exception:  # noqa: BLE001 (a client that does not listen still sees them in tools/list)
                pass
        return _text(
            {
                "loaded": added,
                "already_loaded": [n for _, n in loaded if n not in added],
                "problems": problems,
            },
            error=bool(problems) and not added,
        )

    def _loadable(
        self, skill: Skill, files: Mapping[str, bytes], raw: str, problems: list[str]
    ) -> str | None:
        """The tool name `raw` loads as (an operation's, or a runnable workflow's), or None with
        why in `problems`."""
        try:
            return skill.tool(raw).name
        except (UnknownOperation, PackageError) as exc:
            flow = self._workflow(skill, files, raw) if WORKFLOWS in files else None
            if flow is None:
                problems.append(str(exc))
                return None
            if not self.runnable(flow[1]):
                problems.append(
                    f"{flow[1].name} is {flow[1].execution}: a model carries it out, and"
                    " this server has none"
                )
                return None
            return str(flow[1].tool_name)

    async def _named(
        self,
        name: str,
        slug: str,
        skill: Skill,
        files: Mapping[str, bytes],
        args: dict[str, Any],
    ) -> types.CallToolResult:
        """describe_operation or call_operation: an operation (or a workflow) by its name."""
        wanted = str(args.get("name", ""))
        if not wanted.strip():
            return _text(
                f"missing `name`: the operation's name, as the instructions list it; {name}"
                ' takes {"name": …' + (', "arguments": {…}}' if name == "call_operation" else "}"),
                error=True,
            )
        try:
            tool = skill.tool(wanted)
        except (UnknownOperation, PackageError) as exc:
            found = self._workflow(skill, files, wanted)
            if found is None:
                return _text(str(exc), error=True)
            flow = found[1]
            if name == "describe_operation":
                described = {
                    "name": flow.name,
                    "tool": flow.tool_name,
                    "description": flow.description,
                    "input_schema": flow.to_tool_schema(),
                    "workflow": flow.execution,
                }
                return _text(self.versioned(slug, described))
            return await self._run(slug, skill, files, found, args.get("arguments") or {})
        if name == "describe_operation":
            described = {
                "name": tool.operation,
                "tool": tool.name,
                "description": tool.description,
                "input_schema": tool.offered_schema,
                "gated": tool.declaration.approval is not None,
            }
            return _text(self.versioned(slug, described))
        page = args.get("page_url") if name == "call_operation" else None
        return await self._call(slug, tool, args.get("arguments") or {}, page)

    def gate_for(self, slug: str) -> Gatekeeper:
        """A gated call is sent as the operator's approvals decide (GateClosed naming the
        request it waits on), or, with no gatekeeper, only under its gate's `auto_below`."""
        gatekeeper = self.gatekeepers(slug) if self.gatekeepers is not None else None

        def decide(gate: GateCheck) -> None:
            if gatekeeper is not None:
                gatekeeper(dataclasses.replace(gate, caller=_CALLER.get()))
            elif not gate.auto:
                raise GateClosed(
                    f"not sent: {gate.describe()}. A person approves each such call; tell the"
                    " user what you would send and why, and leave the sending to them."
                )

        return decide

    def setup_for(self, slug: str, sk: Skill) -> CallSetup:
        return CallSetup(
            credential=self.credentials(slug, sk) if self.credentials else None, limits=self.limits
        )

    def _workflow(self, skill: Skill, files: Mapping[str, bytes], wanted: str) -> Any:
        """(the skill's workflows, the one named `wanted`), or None when there is none; a
        version's workflows are read once (a new version's files are another mapping)."""
        held = self.read_flows.get(skill.slug)
        if held is None or held[0] is not files:
            held = self.read_flows[skill.slug] = (files, _loadable(skill, files))
        flows = held[1]
        flow = next((w for w in flows.values() if wanted in (w.name, w.tool_name)), None)
        return (flows, flow) if flow is not None else None

    async def _run(
        self, slug: str, skill: Skill, files: Mapping[str, bytes], found: Any, args: Any
    ) -> types.CallToolResult:
        """A workflow: a hardened one step after step, a guided or draft one by the server's
        model; every call through the same checks as any call; sandboxed (a package from
        elsewhere) nothing that writes is sent."""
        from skillpress.runtime.workflows.run import StepFailed, WorkflowRefused
        from skillpress.runtime.workflows.runner import StepPlace, run_flow

        flows, wf = found
        flow = wf.name
        given = args if isinstance(args, dict) else {}
        chat = self.model() if self.model is not None and wf.execution != "hardened" else None
        if wf.execution != "hardened" and chat is None:
            return _text(
                f"{flow} is {wf.execution}: a model carries it out, and this server has"
                " none (SKILLPRESS_LLM_BASE_URL, SKILLPRESS_LLM_MODEL); do its steps"
                " yourself with call_operation",
                error=True,
            )
        place = StepPlace(
            lambda owner: self.setup_for(owner.slug, owner),
            lambda owner: self.gate_for(owner.slug),
            self.sandboxed,
        )
        by = _CALLER.get() or "an MCP client"
        try:
            done, log = await asyncio.to_thread(
                lambda: run_flow(
                    flows,
                    wf,
                    skill,
                    files,
                    given,
                    place,
                    chat=chat,
                    journal=self.runs,
                    version=self.state[slug][2],
                    by=by,
                )
            )
        except (StepFailed, WorkflowRefused, ExecutionFailed) as exc:
            return _text(str(exc), error=True)
        answer: dict[str, Any] = {"workflow": flow, "result": done.result}
        if log.run_id is not None:
            answer["run"] = log.run_id
        return _text(self.versioned(slug, answer))

    async def _call(
        self, slug: str, tool: Tool, args: Any, page_url: Any = None
    ) -> types.CallToolResult:
        """One call: built and checked, held at its gate (a person's approvals are in the
        records), sent; all of it off the event loop."""
        try:
            placed = await asyncio.to_thread(
                place_call,
                tool,
                args,
                self.state[slug][0].hosts,
                self.setup_for(slug, self.state[slug][0]),
                self.gate_for(slug),
                None if page_url is None else str(page_url),
                skill=slug,
            )
        except (CallRefused, GateClosed, ExecutionFailed) as exc:
            return _text(str(exc), error=True)
        result = placed.result
        assert result is not None
        return _text(
            self.versioned(slug, result.as_dict(for_agent=True)), error=result.status >= 400
        )

    def server(self) -> Server[Any]:
        """The MCP server over this catalog."""
        only = self.state[self.slugs[0]] if not self.several else None
        server: Server[Any] = Server(
            f"skillpress-{self.slugs[0]}" if only is not None else "skillpress",
            version="1",
            instructions=(
                HOW_TO
                + "\n\n"
                + only[1].get("body.md", b"").decode("utf-8", "replace")
                + _workflow_list(only[0], only[1])
                if only is not None
                else _index(self.state)
                + "".join(f"\nNot served: {why}.\n" for why in sorted(self.left_out.values()))
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )
        return server


def build_catalog_server(
    skills: Mapping[str, Loaded],
    *,
    eager: bool = False,
    credentials: Callable[[str, Skill], Credential | None] | None = None,
    limits: CallLimits | None = None,
    gatekeepers: Callable[[str], Gatekeeper] | None = None,
    refresh: Callable[[], Mapping[str, Loaded] | None] | None = None,
    several: bool = True,
    sandboxed: bool = False,
    model: Callable[[], Any] | None = None,
    runs: RunJournal | None = None,
) -> Server[Any]:
    """The MCP server for a set of skills by slug: `_CatalogServer`'s, whose docstring says what
    each argument gives."""
    return _CatalogServer(
        skills,
        eager=eager,
        credentials=credentials,
        limits=limits,
        gatekeepers=gatekeepers,
        refresh=refresh,
        several=several,
        sandboxed=sandboxed,
        model=model,
        runs=runs,
    ).server()
