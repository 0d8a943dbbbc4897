"""The one check every declaration's mapping goes through: a key nobody reads is refused.

A misspelled key (`aproval:`, `identiy:`, `execuiton:`) would otherwise be ignored, and what it
meant to declare (a gate, an idempotency key, a hardened run) would silently not hold. Every
reader of a package's declarations (operation frontmatter, `body.md`, `workflows.yaml`) asks
this module which keys it does not know, and refuses naming the nearest known one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = ["unknown_keys"]


def unknown_keys(given: Iterable[object], known: Sequence[str]) -> str | None:
    """None when every key is known; else the refusal's text: the first unknown key, the nearest
    known one when one is close ("did you mean …"), and every key the mapping takes."""
    for key in given:
        if isinstance(key, str) and key in known:
            continue
        text = str(key)
        near = difflib.get_close_matches(text.lower(), known, n=1, cutoff=0.6)
        hint = f"; did you mean `{near[0]}`?" if near else ""
        return f"unknown key {text!r}{hint} (it takes {', '.join(known)})"
    return None
