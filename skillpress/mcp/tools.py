"""The fixed tools an MCP server of skills offers every client up front (read a file, describe,
call, load, list what is loaded; `skill_run` where there are workflows), in one skill's form or
with a `skill` argument for a server of several."""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types

from skillpress.runtime.package.model import PackageError, Skill

__all__ = ["HOW_TO_DIRECT", "base_tools", "direct_tools", "serves_directly", "skill_run_tool"]

# a skill of at most this many operations may be served directly (its own tools, listed up
# front) where that costs less than the fixed tools it then leaves out
DIRECT_AT_MOST = 12

HOW_TO_DIRECT = (
    "Each operation of this skill is a tool: call it by name. read_skill_file reads the files"
    " named here. A result with `next` has another page: call again with `next.arguments`."
)


def _which(slugs: list[str]) -> dict[str, Any]:
    """The `skill` argument: its slugs named when they are few (four tools carried the whole
    list of 184 skills, each, before the first call)."""
    named = f"one of {', '.join(slugs)}" if len(slugs) <= 5 else "its slug"
    return {"type": "string", "description": f"which skill: {named} (the instructions list them)"}


def base_tools(skill: Skill, several: list[str] | None = None) -> list[types.Tool]:
    """The fixed tools; with `several` (the slugs served), those that name an operation or a file
    take the skill it belongs to."""
    tools = _one_skill_tools(skill if several is None else None)
    if several is None:
        return tools
    for tool in tools:
        if tool.name in ("read_skill_file", "describe_operation", "call_operation", "load_tools"):
            schema = dict(tool.input_schema)
            schema["properties"] = {"skill": _which(several), **schema["properties"]}
            schema["required"] = ["skill", *schema.get("required", [])]
            tool.input_schema = schema
    return tools


def skill_run_tool(several: list[str] | None) -> types.Tool:
    props: dict[str, Any] = {
        "workflow": {
            "type": "string",
            "description": "the workflow's name (the instructions list them)",
        },
        "arguments": {"type": "object", "description": "its parameters"},
    }
    if several is not None:
        props = {"skill": _which(several), **props}
    return types.Tool(
        name="skill_run",
        description="Run one of the skill's workflows in one go: a hardened one runs its steps as"
        " written; a guided or draft one is carried out by the server's model with the skill's"
        " tools. Every call goes through the same checks and approvals as call_operation.",
        input_schema={
            "type": "object",
            "properties": props,
            "required": [*(["skill"] if several is not None else []), "workflow"],
            "additionalProperties": False,
        },
    )


def _one_skill_tools(skill: Skill | None) -> list[types.Tool]:
    named = f"the {skill.slug} skill" if skill is not None else "a skill"
    return [
        types.Tool(
            name="read_skill_file",
            description=f"Read a file of {named}: a category's list of operations (<category>.md),"
            " an operation's detail (<operation>.md), or a type it refers to"
            " (types.json#/types/<Name>). The instructions name the files.",
            input_schema={
                "type": "object",
                "properties": {"path": {"type": "string", "description": "e.g. create_booking.md"}},
                "required": ["path"],
                "additionalProperties": False,
            },
        ),
        types.Tool(
            name="describe_operation",
            description=f"An operation of {named} as a tool: its description and the JSON Schema of"
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
            description=f"Call an operation of {named} by the name the instructions list it under;"
            " the request is built from `arguments` and checked exactly as the operation's own tool would"
            " (a wrong argument is refused before anything is sent). Works without loading anything.",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the operation's name"},
                    "arguments": {"type": "object", "description": "its arguments"},
                    "page_url": {
                        "type": "string",
                        "description": "the `next.page_url` a previous result of this operation"
                        " gave: fetch that page (with the same arguments)",
                    },
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


def _listed(tool: types.Tool) -> int:
    """What a tool costs in a tools/list answer, in bytes of its JSON (tokens follow bytes
    closely for JSON of one kind)."""
    return len(json.dumps([tool.name, tool.description, tool.input_schema]))


def direct_tools(skill: Skill) -> list[str]:
    """The fixed tools a skill served directly still lists: read_skill_file (its files), and
    call_operation where a read pages by URL (a `next.page_url` is taken only there)."""
    pages = any(
        t.declaration.paging is not None and t.declaration.method == "GET" for t in skill.tools
    )
    return ["read_skill_file", *(["call_operation"] if pages else [])]


def serves_directly(skill: Skill) -> bool:
    """Whether a server of this one skill lists its operations as tools up front, the fixed
    tools that find and load them left out: a small API (at most DIRECT_AT_MOST operations)
    whose own tools cost no more than those fixed tools do (Petstore: its four tools against
    describe, call, load and list). A tool that does not load keeps the deferred form."""
    if len(skill.operations) > DIRECT_AT_MOST:
        return False
    try:
        own = [
            types.Tool(name=t.name, description=t.description, input_schema=t.offered_schema)
            for t in skill.tools
        ]
        kept = direct_tools(skill)
    except PackageError:
        return False
    left_out = [t for t in _one_skill_tools(skill) if t.name not in kept]
    return sum(map(_listed, own)) <= sum(map(_listed, left_out))
