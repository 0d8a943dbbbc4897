"""A skill as an MCP server, read the way the package is designed to be read: deferred.

The body is the server's instructions. Three tools are offered up front — read a file of the
skill (a category, an operation's detail), load operations as tools by their manifest names,
and list what is loaded — and each loaded operation then becomes a tool of its own, called
through the runtime's translation and execution (a refusal comes back as a tool error, before
anything is sent). Nothing hands the model every schema at once unless `eager` is asked for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server

from services.runtime.execute import CallLimits, Credential, ExecutionFailed, send
from services.runtime.gates import GateCheck, check_gate
from services.runtime.skill import PackageError, Skill, Tool, UnknownOperation
from services.runtime.translate import CallRefused, build_request

__all__ = ["BASE_TOOLS", "Loaded", "build_mcp_server", "serve_http", "serve_stdio"]

Loaded = tuple[Skill, Mapping[str, bytes], str | None]  # a skill, its files, its version

BASE_TOOLS = (
    "read_skill_file",
    "describe_operation",
    "call_operation",
    "load_tools",
    "loaded_tools",
)


def _text(value: Any, error: bool = False) -> types.CallToolResult:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _base_tools(skill: Skill) -> list[types.Tool]:
    return [
        types.Tool(
            name="read_skill_file",
            description=f"Read a file of the {skill.slug} skill: a category's list of operations (<category>.md) or an"
            " operation's detail (<operation>.md). The instructions name the files.",
            input_schema={
                "type": "object",
                "properties": {"path": {"type": "string", "description": "e.g. create_booking.md"}},
                "required": ["path"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="describe_operation",
            description=f"An operation of the {skill.slug} skill as a tool: its description and the JSON Schema of"
            " its arguments (what call_operation checks them against).",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "its name in the instructions"}
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="call_operation",
            description=f"Call an operation of the {skill.slug} skill by the name the instructions list it under;"
            " the request is built from `arguments` and checked exactly as the operation's own tool would"
            " (a wrong argument is refused before anything is sent). Works without loading anything.",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the operation's name"},
                    "arguments": {"type": "object", "description": "its arguments"},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="load_tools",
            description="Load operations as tools by the names the instructions list them under; each becomes a tool you can call,"
            " with its request built for you.",
            input_schema={
                "type": "object",
                "properties": {
                    "names": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": 20,
                    }
                },
                "required": ["names"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="loaded_tools",
            description="The operations loaded as tools so far.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ),
    ]


def _as_mcp(tool: Tool) -> types.Tool:
    return types.Tool(name=tool.name, description=tool.description, input_schema=tool.schema)


def build_mcp_server(
    skill: Skill,
    files: Mapping[str, bytes],
    *,
    eager: bool = False,
    credential: Credential | None = None,
    limits: CallLimits | None = None,
    gatekeeper: Callable[[GateCheck], tuple[bool, str]] | None = None,
    reload: Callable[[], Loaded | None] | None = None,
    version: str | None = None,
) -> Server[Any]:
    """The MCP server for one skill; `files` are the package's (what read_skill_file may return).
    `gatekeeper` decides a gated call (True to send, else the message the agent gets): the
    operator's approvals; without one a gated call is never sent. `reload` gives the skill anew
    when its version changed (None when not): the next request after a publication uses the new
    version, and results name the version they came from (`version`)."""
    limits = limits or CallLimits()
    state: dict[str, Any] = {"skill": skill, "files": files, "version": version}

    async def current() -> tuple[Skill, Mapping[str, bytes]]:
        if reload is not None:  # a stat or readlink, off the event loop
            fresh = await asyncio.to_thread(reload)
            if fresh is not None:
                state["skill"], state["files"], state["version"] = fresh
        return state["skill"], state["files"]

    def versioned(value: Any) -> Any:
        if state["version"] and isinstance(value, dict):
            return {"version": state["version"], **value}
        return value

    # What a client loaded is its own where the transport says who the client is (a streamable-HTTP
    # session id); over stdio the process serves one client. mcp 2.x makes a session per request.
    loaded_by_client: dict[str, list[str]] = {}  # tool names, resolved in the current version

    def loaded_for(ctx: Any) -> list[str]:
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        key = getattr(connection, "session_id", None) or "-"
        if key not in loaded_by_client:
            loaded_by_client[key] = [t.name for t in state["skill"].tools] if eager else []
        return loaded_by_client[key]

    def loaded_tools(ctx: Any) -> list[Tool]:
        skill = state["skill"]
        out = []
        for name in loaded_for(ctx):
            try:
                out.append(skill.tool(name))
            except (UnknownOperation, PackageError):
                continue  # gone in this version
        return out

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        skill, _ = await current()
        return types.ListToolsResult(
            tools=[*_base_tools(skill), *(_as_mcp(t) for t in loaded_tools(ctx))]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, dict(params.arguments or {})
        skill, files = await current()
        loaded = loaded_for(ctx)
        if name == "read_skill_file":
            path = str(args.get("path", "")).removeprefix(f"skill/{skill.slug}/").lstrip("/")
            if not path.endswith(".md") or path not in files:
                return _text(
                    f"{skill.slug} has no file {path!r}; the instructions name its files",
                    error=True,
                )
            return _text(files[path].decode("utf-8", "replace"))
        if name == "load_tools":
            names = args.get("names")
            if not isinstance(names, list) or not names:
                return _text(
                    "give names: the operations to load, as the instructions list them", error=True
                )
            added, problems = [], []
            for raw in names[:20]:
                try:
                    tool = skill.tool(str(raw))
                except (UnknownOperation, PackageError) as exc:
                    problems.append(str(exc))
                    continue
                if tool.name not in loaded:
                    loaded.append(tool.name)
                    added.append(tool.name)
            if added:
                try:
                    await ctx.session.send_tool_list_changed()
                except Exception:  # noqa: BLE001 (a client that does not listen still sees them in tools/list)
                    pass
            return _text(
                {
                    "loaded": added,
                    "already_loaded": [n for n in loaded if n not in added],
                    "problems": problems,
                },
                error=bool(problems) and not added,
            )
        if name == "loaded_tools":
            return _text(sorted(loaded))
        if name == "describe_operation":
            try:
                tool = skill.tool(str(args.get("name", "")))
            except (UnknownOperation, PackageError) as exc:
                return _text(str(exc), error=True)
            return _text(
                versioned(
                    {
                        "name": tool.operation,
                        "tool": tool.name,
                        "description": tool.description,
                        "input_schema": tool.schema,
                        "gated": tool.declaration.approval is not None,
                    }
                )
            )
        if name == "call_operation":
            try:
                tool = skill.tool(str(args.get("name", "")))
            except (UnknownOperation, PackageError) as exc:
                return _text(str(exc), error=True)
            return await _call(tool, args.get("arguments") or {})
        chosen = next((t for t in loaded_tools(ctx) if t.name == name), None)
        if chosen is None:
            hint = (
                " (load it first with load_tools)"
                if any(e.tool == name or e.name == name for e in skill.operations if e.tool)
                else ""
            )
            return _text(f"no tool {name!r} is loaded{hint}", error=True)
        return await _call(chosen, args)

    async def _call(tool: Tool, args: Any) -> types.CallToolResult:
        try:
            request = build_request(tool, args, state["skill"].hosts)
        except CallRefused as exc:
            return _text(str(exc), error=True)
        gate = check_gate(tool, args if isinstance(args, dict) else {})
        if gate is not None and gatekeeper is not None:
            allowed, message = await asyncio.to_thread(gatekeeper, gate)
            if not allowed:
                return _text(message, error=True)
        elif gate is not None and not gate.auto:
            return _text(
                f"not sent: {gate.describe()}. A person approves each such call; tell the user"
                " what you would send and why, and leave the sending to them.",
                error=True,
            )
        try:
            result = await asyncio.to_thread(send, request, credential=credential, limits=limits)
        except ExecutionFailed as exc:
            return _text(str(exc), error=True)
        return _text(versioned(result.as_dict()), error=result.status >= 400)

    server: Server[Any] = Server(
        f"skillpress-{skill.slug}",
        version="1",
        instructions=files.get("body.md", b"").decode("utf-8", "replace"),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(
            read,
            write,
            server.create_initialization_options(NotificationOptions(tools_changed=True)),
        )


def serve_http(server: Server[Any], host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(server.streamable_http_app(host=host), host=host, port=port, log_level="warning")
