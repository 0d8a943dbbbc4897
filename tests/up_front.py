"""What an MCP client of `skillpress mcp SKILL` is sent before its first call, in cl100k tokens:
the server's instructions and its tools/list answer, read from the server itself (the deferred
form's five fixed tools, or a tiny API's own tools served directly). bpe-openai ships cl100k's
encoding (tiktoken would download it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from skillpress.mcp.server import _CatalogServer
from skillpress.runtime.package.skill import load_skill


@cache
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding("cl100k_base")


def tokens(text: str) -> int:
    return len(_encoding().encode(text))


def up_front(files: Mapping[str, bytes]) -> tuple[str, list[dict[str, Any]]]:
    """(the instructions, the tools listed) a client of the one skill in `files` is sent."""
    skill = load_skill(files, lazy=True)
    catalog = _CatalogServer(
        {skill.slug: (skill, files, None)},
        eager=False,
        credentials=None,
        limits=None,
        gatekeepers=None,
        refresh=None,
        several=False,
        sandboxed=False,
        model=None,
        runs=None,
    )
    instructions = catalog.server().instructions or ""
    listed = asyncio.run(catalog.list_tools(None, None)).tools
    return instructions, [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in listed
    ]


def up_front_tokens(files: Mapping[str, bytes]) -> int:
    instructions, listed = up_front(files)
    return tokens(instructions) + tokens(json.dumps(listed))
