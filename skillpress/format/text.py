"""Small pure text helpers shared by the renderers."""

from __future__ import annotations

import re
from functools import lru_cache

from skillpress.format.gc_pause import cleared_after

__all__ = [
    "INVISIBLE",
    "short_text",
    "first_sentence",
    "one_line",
    "without_urls",
    "full_text",
    "spec_line",
    "visible",
]

# zero-width characters and bidirectional controls: text that reads one way and is another (an
# instruction hidden in a description, `na\u200bme` that reads as `name`)
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible(text: str) -> str:
    """`text` without zero-width characters and bidirectional controls."""
    return INVISIBLE.sub("", text)


_WS = re.compile(r"\s+")
# a link's target may hold one level of parentheses (`…/wiki/Idempotence_(safe)`)
_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()]|\([^()]*\))*\)")
_HTML = re.compile(r"<[^>]{1,200}>")
_URL_BODY = (
    r"\b(?:https?|wss?|ftp)://(?:[^\s()<>\]]|\([^\s()<>]*\))*"
    r"(?:[^\s()<>\].,;:!?'\"]|\([^\s()<>]*\))"
)
# a URL, with the parentheses it is written in when it is (one level of its own kept inside)
_URL = re.compile(rf"\({_URL_BODY}\)|{_URL_BODY}", re.IGNORECASE)
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


@cleared_after
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


_POINTING = re.compile(r"\b(see|at|visit|from|in|on|to|via|consult|check|read)\s*:?\s*$", re.I)
_NAMED_PAGE = re.compile(
    r"\b(docs|documentation|page|guide|reference|here|website|site)\s+(?:at|in|on)\s*:?\s*$", re.I
)


def without_urls(text: str) -> str:
    """`text` with every URL taken out and what is left still reading: manifest lines name
    operations, never addresses. A sentence that holds a URL is left out ("This OData service
    is located at https://…" says nothing without it), unless every sentence does: then the
    URL a sentence points to ("see https://…") becomes "the API's documentation", any other is
    dropped."""
    if "](" in text:
        text = _MD_LINK.sub(r"\1", text)
    if "://" not in text:
        return text
    sentences = _SENTENCE.split(_WS.sub(" ", text).strip())
    kept = [s for s in sentences if not _URL.search(s)]
    if kept:
        return " ".join(kept)
    return _pointed_out(text)


def _pointed_out(text: str) -> str:
    out: list[str] = []
    last = 0
    for m in _URL.finditer(text):
        before = text[last : m.start()]
        named = _NAMED_PAGE.search(before)
        pointed = _POINTING.search(before)
        if named:
            before = before[: named.start()] + named.group(1)
        elif pointed:
            before = before[: pointed.start()] + pointed.group(1) + " the API's documentation"
        out.append(before)
        last = m.end()
    cleaned = "".join(out) + text[last:]
    cleaned = re.sub(r"\s+([.,;:])", r"\1", cleaned)
    cleaned = re.sub(r"\(\s*\)", "", cleaned)
    return _WS.sub(" ", cleaned).strip()


_BLOCK_TAGS = re.compile(r"</?(p|div|ul|ol|table|tr|h[1-6]|pre|blockquote)\b[^>]{0,200}>", re.I)
_ITEM_TAG = re.compile(r"<li\b[^>]{0,200}>", re.I)
_BREAK_TAG = re.compile(r"<br\s*/?>", re.I)
_BLANKS = re.compile(r"\n[ \t]*\n(\s*\n)+")


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_=])(\s*\1){2,}\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _spec_words(lines: list[str]) -> list[str]:
    """The spec's words kept as its words: a heading is demoted to bold text and a rule (or a
    `---` frontmatter fence) left out, outside code blocks, so no description can open a section
    of skillpress's own (`## The call`, `## Tool Use Rules`) or a declaration block."""
    out: list[str] = []
    fenced = False
    for line in lines:
        line = line.rstrip()
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            heading = _HEADING.match(line)
            if heading:
                line = f"**{heading.group(2)}**" if heading.group(2) else ""
            elif _RULE.match(line):
                line = ""
        out.append(line)
    if fenced:  # an unclosed fence would swallow what follows it: closed here
        out.append("```")
    return out


def spec_line(text: str) -> str:
    """A name or a line from the spec on one line that cannot open a heading or a block."""
    return one_line(str(text)).lstrip("#>-=*_ ").replace("`", "'")


def full_text(text: str, limit: int = 4000) -> str:
    """`text` whole, as Markdown: paragraphs and lists kept (HTML lists and breaks written as
    Markdown), link targets dropped, at most `limit` characters (cut at a paragraph or line,
    marked with …)."""
    if not isinstance(text, str):
        return ""
    return _full_text(text, limit)


@cleared_after
@lru_cache(maxsize=16384)  # a parameter's description recurs in every operation that takes it
def _full_text(text: str, limit: int) -> str:
    if "<" in text:
        text = _BREAK_TAG.sub("\n", text)
        text = _ITEM_TAG.sub("\n- ", text)
        text = _BLOCK_TAGS.sub("\n\n", text)
        text = _HTML.sub(" ", text)
    if "](" in text:
        text = _MD_LINK.sub(r"\1", text)
    lines = _spec_words(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    text = _BLANKS.sub("\n\n", "\n".join(lines)).strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    at = max(cut.rfind("\n"), cut.rfind(". "))
    return (cut[: at + 1] if at > limit // 2 else cut).rstrip() + " …"
