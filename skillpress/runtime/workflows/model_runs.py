"""Workflows a model carries out: `guided` (one call, the workflow's tool forced, its defaults
winning over the model's arguments) and `draft` (skill-forward: the body and the procedure are
the system prompt, the arguments the user message, and the model calls tools until it is done).
Every tool call goes through the same `call` as a hardened step (translation, sandbox, gates),
and a malformed answer stops the run with what was wrong."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from skillpress.errors import ChatFailed
from skillpress.runtime.package.model import PackageError, Skill, UnknownOperation, shaped_tool
from skillpress.runtime.workflows.run import (
    Call,
    Run,
    StepFailed,
    Workflow,
    checked_arguments,
)

__all__ = ["Chat", "MAX_TURNS", "draft_run", "guided_run"]

# (messages, tools in the OpenAI function shape, tool_choice) → the assistant's message
Chat = Callable[[list[dict[str, Any]], list[dict[str, Any]], Any], dict[str, Any]]
MAX_TURNS = 8


def _asking(wf: Workflow, chat: Chat) -> Chat:
    """`chat`, a model that did not answer usefully (ChatFailed) stopping the run at step
    `model` of the workflow."""

    def ask(
        messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: Any
    ) -> dict[str, Any]:
        try:
            return chat(messages, tools, choice)
        except ChatFailed as exc:
            raise StepFailed(wf.name, "model", str(exc)) from None

    return ask


def _opening(
    wf: Workflow, files: Mapping[str, bytes], arguments: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The system prompt (the body, then the procedure) and the user's arguments."""
    body = files.get("body.md", b"").decode("utf-8", "replace")
    return [
        {"role": "system", "content": _system(wf, body)},
        {"role": "user", "content": json.dumps(dict(arguments), ensure_ascii=False)},
    ]


def _system(wf: Workflow, body: str) -> str:
    """The body as the model reads it (without a hand-written body's frontmatter), then the
    workflow's procedure."""
    if body.startswith("---\n") and "\n---\n" in body[4:]:
        body = body[4:].split("\n---\n", 1)[1]
    how = wf.procedure or wf.description
    return f"{body.strip()}\n\n# Workflow: {wf.name}\n\n{how}\n".lstrip()


def _arguments(wf: Workflow, call: Any, where: str) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of one tool call in an answer, or StepFailed saying what is wrong
    (naming the workflow)."""
    try:
        fn = call["function"]
        name = str(fn["name"])
        raw = fn.get("arguments") or "{}"
        args = json.loads(raw) if isinstance(raw, str) else raw
    except (KeyError, TypeError, ValueError):
        raise StepFailed(
            wf.name, where, "the model's tool call is malformed (no name or JSON arguments)"
        ) from None
    if not isinstance(args, dict):
        raise StepFailed(
            wf.name, where, f"the model called {name} with arguments that are not an object"
        )
    return name, args


def guided_run(
    wf: Workflow,
    skill: Skill,
    files: Mapping[str, bytes],
    arguments: Mapping[str, Any],
    chat: Chat,
    call: Call,
) -> Run:
    """One model call with the workflow's tool forced; its defaults win over the model's arguments."""
    assert wf.tool is not None
    arguments = checked_arguments(wf, arguments)  # before the model is asked anything
    tool = skill.tool(wf.tool)
    shaped, _ = shaped_tool(tool.name, tool.description, tool.schema, "openai")
    messages = _opening(wf, files, arguments)
    forced = {"type": "function", "function": {"name": tool.name}}
    answer = _asking(wf, chat)(messages, [shaped], forced)
    calls = answer.get("tool_calls") or []
    if len(calls) != 1:
        raise StepFailed(
            wf.name, "model", f"the model made {len(calls)} tool calls; {tool.name} was forced"
        )
    name, given = _arguments(wf, calls[0], "model")
    if name != tool.name:
        raise StepFailed(wf.name, "model", f"the model called {name}, not the forced {tool.name}")
    merged = {**given, **wf.defaults}  # the workflow's defaults win
    try:
        result = call("model", tool, merged, skill)
    except StepFailed as exc:
        raise StepFailed(wf.name, exc.step, exc.message, gated=exc.gated) from None
    return Run(
        result=result, trace=[f"model: {tool.operation} {json.dumps(merged, ensure_ascii=False)}"]
    )


def draft_run(
    wf: Workflow,
    skill: Skill,
    files: Mapping[str, bytes],
    arguments: Mapping[str, Any],
    chat: Chat,
    call: Call,
    max_turns: int = MAX_TURNS,
) -> Run:
    """Skill-forward: the model is told the body and the procedure, given the arguments, and calls
    the skill's tools (each through `call`) until it answers without one (or runs out of turns)."""
    arguments = checked_arguments(wf, arguments)  # before the model is asked anything
    tools = [shaped_tool(t.name, t.description, t.schema, "openai")[0] for t in skill.tools]
    messages = _opening(wf, files, arguments)
    run = Run()
    ask = _asking(wf, chat)
    for turn in range(1, max_turns + 1):
        answer = ask(messages, tools, "auto")
        calls = answer.get("tool_calls") or []
        if not calls:
            run.result = answer.get("content")
            return run
        messages.append(
            {"role": "assistant", "content": answer.get("content"), "tool_calls": calls}
        )
        for n, tc in enumerate(calls, 1):
            where = f"turn{turn}.{n}"
            name, given = _arguments(wf, tc, where)
            try:
                tool = skill.tool(name)
            except (UnknownOperation, PackageError) as exc:
                outcome: Any = {"error": str(exc)}
            else:
                try:
                    outcome = call(where, tool, given, skill)
                    run.trace.append(f"{where}: {tool.operation}")
                except StepFailed as exc:  # the model is told, and may correct itself
                    outcome = {"error": exc.message}
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": str(tc.get("id", where)),
                    "content": json.dumps(outcome, ensure_ascii=False, default=str),
                }
            )
    raise StepFailed(
        wf.name, f"turn{max_turns}", f"the model was still calling tools after {max_turns} turns"
    )
