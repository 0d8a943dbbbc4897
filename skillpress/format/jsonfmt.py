"""A deterministic, readable JSON layout: objects one key per line, short values inline."""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

__all__ = ["readable_json", "scalar_json"]


def scalar_json(value: Any) -> str:
    """A scalar as compact JSON writes it (`ensure_ascii=False`)."""
    if isinstance(value, str):
        return encode_basestring(value)  # the C escaper `ensure_ascii=False` uses
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)


def _not_json(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


# an object or array on one line, as `json.dumps(separators=(", ", ": "), ensure_ascii=False)`
# writes it: the C encoder made once (json.dumps makes one per call, which costs more than a
# small value's encoding)
_chunks = (
    c_make_encoder(None, _not_json, encode_basestring, None, ": ", ", ", False, False, True)
    if c_make_encoder is not None
    else None  # an interpreter without the C accelerator
)


def _one_line(node: Any) -> str:
    if _chunks is None:
        return json.dumps(node, ensure_ascii=False, separators=(", ", ": "))
    return "".join(_chunks(node, 0))


def _length(node: Any, room: int) -> int:
    """The length of `node`'s one-line form when it is at most `room`; otherwise some number
    above `room` (the walk stops there, so a large value costs no more than a small one)."""
    if isinstance(node, str):
        n = len(node) + 2  # escaping only lengthens a string
        return n if n > room else len(encode_basestring(node))
    if isinstance(node, dict):
        total = 2 * len(node) or 2  # the braces, and ", " between entries
        for k, v in node.items():
            if total > room:
                return total
            total += _length(k, room - total) + 2
            if total <= room:
                total += _length(v, room - total)
        return total
    if isinstance(node, list):
        total = 2 * len(node) or 2
        for v in node:
            if total > room:
                return total
            total += _length(v, room - total)
        return total
    return len(scalar_json(node))


class _TooLong(Exception):
    """The layout has more line breaks than asked for."""


def readable_json(
    value: Any, width: int = 88, indent: int = 2, max_lines: int | None = None
) -> str | None:
    """Like `json.dumps(indent=2)`, but any value whose one-line form fits `width` stays on one line.

    Top down: a node whose one-line form fits with its indentation is written so (measured
    without being written, and the measuring stops at the width); any other object or array
    has one key or item per line, each laid out the same way. With `max_lines`: None as soon as
    the layout has more line breaks than that, so a large schema is not laid out only to be
    written another way.
    """
    limit = -1 if max_lines is None else max_lines
    out: list[str] = []
    breaks = 0

    def lay(node: Any, level: int) -> None:
        nonlocal breaks
        pad = indent * level
        if not isinstance(node, dict | list):
            out.append(scalar_json(node))
            return
        if not node or _length(node, width - pad) <= width - pad:
            out.append(_one_line(node))
            return
        breaks += len(node) + 1
        if breaks > limit >= 0:
            raise _TooLong
        inner = "\n" + " " * (pad + indent)
        if isinstance(node, dict):
            out.append("{")
            sep = inner
            for k, v in node.items():
                out.append(sep)
                out.append(encode_basestring(k))
                out.append(": ")
                lay(v, level + 1)
                sep = "," + inner
            out.append("\n" + " " * pad + "}")
        else:
            out.append("[")
            sep = inner
            for v in node:
                out.append(sep)
                lay(v, level + 1)
                sep = "," + inner
            out.append("\n" + " " * pad + "]")

    try:
        lay(value, 0)
    except _TooLong:
        return None
    return "".join(out)
