"""Small pure text helpers shared by the renderers."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["short_text", "first_sentence", "one_line", "without_urls"]

_WS = re.compile(r"\s+")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML = re.compile(r"<[^>]{1,200}>")
_URL = re.compile(r"\(?\b(?:https?|wss?|ftp)://[^\s)>\]]*\)?", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(])")


def one_line(text: str) -> str:
    """Collapse whitespace, drop HTML tags and Markdown link targets."""
    if "<" in text:
        text = _HTML.sub(" ", text)
    if "](" in text:
        text = _MD_LINK.sub(r"\1", text)
    if (
        "  " in text or not text.isprintable()
    ):  # every whitespace but the ASCII space is "not printable"
        text = _WS.sub(" ", text)
    return text.strip()


def short_text(text: str, limit: int = 300) -> str:
    """The first paragraph of `text` on one line, at most `limit` characters."""
    if not isinstance(text, str):
        return ""
    return _short_text(text, limit)


@lru_cache(maxsize=65536)  # the same descriptions recur across a spec's operations
def _short_text(text: str, limit: int) -> str:
    para = text.strip().split("\n\n", 1)[0]
    line = one_line(para)
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of `text`, on one line, at most `limit` characters."""
    line = short_text(text, 4 * limit)
    parts = _SENTENCE.split(line, maxsplit=1)
    return short_text(parts[0] if parts else line, limit)


def without_urls(text: str) -> str:
    """`text` with every URL removed: manifest lines name operations, never addresses."""
    cleaned = _URL.sub("", text)
    cleaned = re.sub(r"\s+([.,;:])", r"\1", cleaned)
    cleaned = re.sub(r"\b(See|see|at|visit|Visit)( the)?[.:]?\s*(?=[.]|$)", "", cleaned)
    return _WS.sub(" ", cleaned).strip()
