"""A response as a model can read it: valid JSON within a budget, cut by its structure (a long
list keeps its first items and says how many it left out, a long string keeps its start and
says its length), never bytes cut mid-token; a binary or HTML body described, not dumped.

Pure: a parsed value (or the raw bytes and their type) in, what the agent is given out.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["AGENT_BUDGET", "AGENT_DEPTH", "close_json", "describe_body", "fit_json", "render"]

AGENT_BUDGET = 48 * 1024  # bytes of body an agent is given in one result
AGENT_DEPTH = 32  # levels of nesting an agent is given; deeper containers are said, not sent
_LONG_STRING = 2000
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]')


def render(value: Any) -> str:
    """`value` as the text an agent is sent: compact JSON (indentation was 22–25% more tokens
    on GitHub's own response examples, for a reader who does not see it); what is measured
    against the budget is what is sent."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def close_json(text: str) -> str | None:
    """The start of a JSON text cut off mid-way (a read limit), made whole: up to where its last
    element ended, every array and object still open closed. None when no element ended."""
    stack: list[str] = []
    safe: tuple[int, int] | None = None  # (where the text may end, how many containers are open)
    at = 0
    for match in _TOKENS.finditer(text):
        if '"' in text[at : match.start()]:  # a string the cut left open: nothing after counts
            break
        at = match.end()
        token = match.group()
        if token in "[{":
            stack.append(token)
            safe = (match.end(), len(stack))
        elif token in "]}":
            if not stack:
                return None
            stack.pop()
            safe = (match.end(), len(stack))
        elif token == ",":
            safe = (match.start(), len(stack))
    if safe is None:
        return None
    end, depth = safe
    # no container closed after `safe` (a close is a later safe point): the open ones are the
    # first `depth` still on the stack
    closers = "".join("]" if c == "[" else "}" for c in reversed(stack[:depth]))
    return text[:end] + closers


def _shallow(value: Any, limit: int, path: str, cuts: list[dict[str, Any]]) -> Any:
    """`value` with every container deeper than `limit` levels said instead of sent."""
    if not isinstance(value, dict | list):
        return value
    if limit <= 0:
        cuts.append({"at": path, "deeper_than": AGENT_DEPTH})
        return "…"
    if isinstance(value, dict):
        return {k: _shallow(v, limit - 1, f"{path}.{k}", cuts) for k, v in value.items()}
    return [_shallow(v, limit - 1, f"{path}[{i}]", cuts) for i, v in enumerate(value)]


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAGS = re.compile(rb"<(script|style|head)[^>]*>.*?</\1>|<[^>]+>", re.I | re.S)


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _strings(value: Any, limit: int, path: str, cuts: list[dict[str, Any]]) -> Any:
    if isinstance(value, str) and len(value) > limit:
        cuts.append({"at": path, "string_of": len(value), "kept": limit})
        return value[:limit] + "…"
    if isinstance(value, dict):
        return {k: _strings(v, limit, f"{path}.{k}", cuts) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, limit, f"{path}[{i}]", cuts) for i, v in enumerate(value)]
    return value


def _largest_list(value: Any, path: str = "$") -> tuple[str, list[Any]] | None:
    """The longest list inside `value` (by encoded size), and where it is."""
    best: tuple[int, str, list[Any]] | None = None
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            if len(node) > 1:
                size = _size(node)
                if best is None or size > best[0]:
                    best = (size, where, node)
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, dict):
            stack.extend((v, f"{where}.{k}") for k, v in node.items())
    return (best[1], best[2]) if best else None


def fit_json(value: Any, budget: int = AGENT_BUDGET) -> tuple[Any, list[dict[str, Any]]]:
    """`value` within `budget` bytes as JSON and AGENT_DEPTH levels deep, and what was cut: what
    nests deeper first, then long strings, then the largest list shortened (its first items
    kept) until it fits."""
    cuts: list[dict[str, Any]] = []
    value = _shallow(value, AGENT_DEPTH, "$", cuts)
    if _size(value) <= budget:
        return value, cuts
    value = _strings(value, _LONG_STRING, "$", cuts)
    while _size(value) > budget:
        found = _largest_list(value)
        if found is None:
            break
        where, items = found
        keep = len(items) // 2
        over = _size(value) - budget
        # how many items to keep so that what is left fits: from their average size
        each = max(_size(items) / max(len(items), 1), 1)
        keep = max(0, min(keep, len(items) - int(over / each) - 1))
        cuts.append({"at": where, "items_of": len(items), "kept": keep})
        del items[keep:]
    if _size(value) > budget:  # what is left is one huge scalar or object: its text, cut
        text = json.dumps(value, ensure_ascii=False)[: budget // 2]
        cuts.append({"at": "$", "cut_to_text": len(text)})
        return text + "…", cuts
    return value, _merged(cuts)


def _merged(cuts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A list shortened twice is said once, with its first length and its last."""
    out: dict[str, dict[str, Any]] = {}
    for cut in cuts:
        seen = out.get(cut["at"])
        if seen is not None and "items_of" in cut:
            seen["kept"] = cut["kept"]
        else:
            out[cut["at"]] = dict(cut)
    return list(out.values())


def describe_body(body: bytes, content_type: str) -> dict[str, Any] | None:
    """A body that is not text a model can use, described (type, size, an HTML page's title and
    the start of its text); None for text and JSON, which are given as they are."""
    media = content_type.split(";", 1)[0].strip().lower()
    textual = media.startswith("text/") or "json" in media or "xml" in media or not media
    if b"\x00" in body[:4096] or (body and not textual):
        return {"binary": True, "content_type": media or "unknown", "bytes": len(body)}
    if media == "text/html" or body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        title = _TITLE.search(body[:65536])
        text = b" ".join(_TAGS.sub(b" ", body[:200_000]).split())[:1000]
        return {
            "html": True,
            "bytes": len(body),
            "title": title.group(1).decode("utf-8", "replace").strip()[:200] if title else None,
            "text": text.decode("utf-8", "replace"),
        }
    return None
