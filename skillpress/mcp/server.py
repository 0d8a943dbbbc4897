"""A skill as an MCP server, read the way the package is designed to be read: deferred.

The body is the server's instructions. Three tools are offered up front — read a file of the
skill (a category, an operation's detail), load operations as tools by their manifest names,
and list what is loaded — and each loaded operation then becomes a tool of its own, called
through the runtime's translation and execution (a refusal comes back as a tool error, before
anything is sent). Nothing hands the model every schema at once unless `eager` is asked for,
or the API is so small that its own tools cost less than the fixed ones (served directly).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server

from skillpress.format.frontmatter import prose_text
from skillpress.mcp.catalog import (
    HOW_TO,
    WORKFLOWS,
    Catalog,
    Found,
    Loaded,
    index_of,
    workflow_list,
)
from skillpress.mcp.tools import HOW_TO_DIRECT, base_tools, skill_run_tool
from skillpress.runtime.calling.calls import CallSetup, GateClosed, Gatekeeper, place_call
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.fit import render
from skillpress.runtime.calling.gates import GateCheck
from skillpress.runtime.calling.request import CallRefused, ExecutionFailed
from skillpress.runtime.package.model import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.package.reading import TYPES_FILE, type_at
from skillpress.runtime.workflows.model_runs import Chat
from skillpress.runtime.workflows.run_log import RunJournal

__all__ = ["BASE_TOOLS", "build_catalog_server", "build_mcp_server"]

BASE_TOOLS = (
    "read_skill_file",
    "describe_operation",
    "call_operation",
    "load_tools",
    "loaded_tools",
)


# what an operation's file read over MCP says in place of its declaration
DECLARATION_LEFT_OUT = (
    "(This file's declaration, the request line and argument schema the call is built from,"
    " is left out: describe_operation gives the schema.)"
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
    deferred: bool = False,
    credential: Credential | None = None,
    limits: CallLimits | None = None,
    gatekeeper: Gatekeeper | None = None,
    reload: Callable[[], Loaded | None] | None = None,
    version: str | None = None,
    sandboxed: bool = False,
    model: Callable[[], Chat | None] | None = None,
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
        deferred=deferred,
        credentials=lambda slug, sk: credential,
        limits=limits,
        gatekeepers=(lambda slug: gatekeeper) if gatekeeper else None,
        refresh=refresh if reload is not None else None,
        several=False,
        sandboxed=sandboxed,
        model=model,
        runs=runs,
    )


class _CatalogServer(Catalog):
    """The MCP server over a `Catalog`: its tool handlers, each call through the runtime's
    checks and gates."""

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
        kept = self.direct()  # served directly: its own tools stand for the fixed ones
        fixed = [t for t in fixed if t.name in kept] if kept is not None else fixed
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
            found = self.workflow(skill, files, str(args.get("workflow", "")))
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
        if found is None:  # a tool its file names, called before load_tools: as call_operation
            owners = [k for k, (sk, _, _) in self.state.items() if sk.has_tool(name)]
            found = self.owner(owners[0], name) if len(owners) == 1 else None
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
        if path.startswith(TYPES_FILE):  # a type an operation's file refers to, by its pointer
            return _text(*type_at(files, path))
        if not path.endswith(".md") or path not in files:
            return _text(
                f"{skill.slug} has no file {path!r}; the instructions name its files", error=True
            )
        prose = prose_text(files[path])
        if prose is None:
            return _text(files[path].decode("utf-8", "replace"))
        # an operation's file without its declaration: the request line and argument schema
        # are the runtime's (Stripe's post_payment_intents.md was 7,316 tokens, 5,400 of them
        # the schema a model gets from describe_operation or load_tools when it needs it)
        return _text(f"{DECLARATION_LEFT_OUT}\n{prose.lstrip(chr(10))}")

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
            tool_name = self._load_name(skill, files, str(raw), problems)
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

    def _load_name(
        self, skill: Skill, files: Mapping[str, bytes], raw: str, problems: list[str]
    ) -> str | None:
        """The tool name `raw` loads as (an operation's, or a runnable workflow's), or None with
        why in `problems`."""
        try:
            return skill.tool(raw).name
        except (UnknownOperation, PackageError) as exc:
            flow = self.workflow(skill, files, raw) if WORKFLOWS in files else None
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
            found = self.workflow(skill, files, wanted)
            if found is None:
                return _text(str(exc), error=True)
            flow = found[1]
            if name == "describe_operation":
                described: dict[str, Any] = {
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

    async def _run(
        self, slug: str, skill: Skill, files: Mapping[str, bytes], found: Found, args: Any
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
                (HOW_TO if self.direct() is None else HOW_TO_DIRECT)
                + "\n\n"
                + only[1].get("body.md", b"").decode("utf-8", "replace")
                + workflow_list(only[0], only[1])
                if only is not None
                else index_of(self.state)
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
    deferred: bool = False,
    credentials: Callable[[str, Skill], Credential | None] | None = None,
    limits: CallLimits | None = None,
    gatekeepers: Callable[[str], Gatekeeper] | None = None,
    refresh: Callable[[], Mapping[str, Loaded] | None] | None = None,
    several: bool = True,
    sandboxed: bool = False,
    model: Callable[[], Chat | None] | None = None,
    runs: RunJournal | None = None,
) -> Server[Any]:
    """The MCP server for a set of skills by slug (`Catalog`'s docstring says what
    each argument gives."""
    return _CatalogServer(
        skills,
        eager=eager,
        deferred=deferred,
        credentials=credentials,
        limits=limits,
        gatekeepers=gatekeepers,
        refresh=refresh,
        several=several,
        sandboxed=sandboxed,
        model=model,
        runs=runs,
    ).server()
