"""Categories from a language model, when the spec's tags fail: the pure half.

The model sees operation names and one-line summaries only — never the document — in batches
sized to a context budget, each batch told the categories chosen so far so names stay stable.
Its answer is validated strictly: JSON, every operation of the batch placed exactly once and
nothing else, names file-safe and distinct from every operation's, sizes within what one file
and the body can carry. An invalid answer yields the reason, which the caller sends back once
for a repair before falling back to the offline grouping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from skillpress.derive.categories import Grouping
from skillpress.errors import ChatFailed
from skillpress.format.frontmatter import split_frontmatter
from skillpress.format.manifest import Manifest

__all__ = [
    "Chat",
    "choose_grouping",
    "propose_grouping",
    "summaries_of",
    "GroupingInvalid",
    "OpSummary",
    "batches",
    "messages",
    "parse_answer",
    "assemble",
    "MAX_CATEGORIES",
    "MAX_PER_CATEGORY",
]

MAX_CATEGORIES = 40  # a line each in the body, within its budget
MAX_PER_CATEGORY = 150  # a line each in the category's file, within one read
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,47}$")
_RESERVED = {"body", "skill", "types", "readme"}
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


# one chat completion: messages in, the assistant's text out (raises ChatFailed)
Chat = Callable[[list[dict[str, str]]], str]
# what happened, for the caller to log: (event, fields)
Report = Callable[[str, dict[str, Any]], None]


def _ignore(event: str, fields: dict[str, Any]) -> None:
    return None


class GroupingInvalid(ValueError):
    """The model's answer cannot be used; the message is what to tell it for a repair."""


@dataclass(frozen=True)
class OpSummary:
    name: str
    summary: str

    def line(self) -> str:
        return f"{self.name} — {self.summary[:120]}" if self.summary else self.name


def batches(ops: list[OpSummary], budget_chars: int) -> list[list[OpSummary]]:
    """Consecutive batches whose listing fits `budget_chars` (at least one operation each)."""
    out: list[list[OpSummary]] = []
    current: list[OpSummary] = []
    size = 0
    for op in ops:
        cost = len(op.line()) + 1
        if current and size + cost > budget_chars:
            out.append(current)
            current, size = [], 0
        current.append(op)
        size += cost
    if current:
        out.append(current)
    return out


def messages(
    api_title: str, batch: list[OpSummary], known: dict[str, str], total: int
) -> list[dict[str, str]]:
    system = (
        "You group the operations of an HTTP API into categories an agent browses: a few words of name each, "
        "like 'channels' or 'guild_members', and one sentence of description. Answer with JSON only: "
        '{"categories": [{"name": "...", "description": "...", "operations": ["operation_name", ...]}]}. '
        f"Put every operation listed in exactly one category; use at most {MAX_CATEGORIES} categories overall and at most "
        f"{MAX_PER_CATEGORY} operations in one. Names are lowercase letters, digits and underscores, and never an operation's name."
    )
    known_text = "\n".join(f"- {n}: {d}" for n, d in known.items()) or "(none yet)"
    user = (
        f"API: {api_title} ({total} operations in all).\nCategories chosen so far (reuse them where they fit):\n{known_text}\n\n"
        f"Operations to place ({len(batch)}):\n" + "\n".join(op.line() for op in batch)
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _checked_category(cat: dict[str, Any], all_ops: set[str]) -> tuple[str, Any, list[str]]:
    """A category of the answer (its name, description, operations), or GroupingInvalid saying
    what is wrong with it."""
    name, desc, members = cat.get("name"), cat.get("description", ""), cat.get("operations")
    if not isinstance(name, str) or not _NAME.match(name) or name in _RESERVED:
        raise GroupingInvalid(
            f"category name {name!r} is not 2-48 lowercase letters, digits and underscores starting with a letter"
        )
    if name in all_ops:
        raise GroupingInvalid(f"category name {name!r} is also an operation's name; choose another")
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise GroupingInvalid(f"category {name!r}: operations must be a list of operation names")
    return name, desc, members


def parse_answer(
    text: str, batch: list[OpSummary], all_ops: set[str], known: dict[str, list[str]]
) -> dict[str, tuple[str, list[str]]]:
    """{category: (description, operations of this batch)} or GroupingInvalid saying what is wrong."""
    try:
        raw: Any = json.loads(_FENCE.sub("", text.strip()))
    except json.JSONDecodeError as exc:
        raise GroupingInvalid(
            f"the answer is not JSON ({exc.msg}); answer with the JSON object only"
        ) from None
    cats = raw.get("categories") if isinstance(raw, dict) else None
    if not isinstance(cats, list) or not cats:
        raise GroupingInvalid('the answer has no "categories" list')
    wanted = [op.name for op in batch]
    placed: dict[str, str] = {}
    out: dict[str, tuple[str, list[str]]] = {}
    for cat in cats:
        if not isinstance(cat, dict):
            raise GroupingInvalid(
                "each category is an object with name, description and operations"
            )
        name, desc, members = _checked_category(cat, all_ops)
        for m in members:
            if m not in wanted:
                raise GroupingInvalid(
                    f"category {name!r} lists {m!r}, which is not one of the operations to place"
                )
            if m in placed:
                raise GroupingInvalid(
                    f"{m!r} is placed twice ({placed[m]!r} and {name!r}); place each operation once"
                )
            placed[m] = name
        prev_desc, prev = out.get(name, (str(desc)[:200], []))
        out[name] = (prev_desc, prev + list(members))
    missing = [w for w in wanted if w not in placed]
    if missing:
        raise GroupingInvalid(
            f"{len(missing)} operation(s) are not placed: {', '.join(missing[:20])}"
        )
    for name, (_, members) in out.items():
        if len(members) + len(known.get(name, [])) > MAX_PER_CATEGORY:
            raise GroupingInvalid(
                f"category {name!r} would hold more than {MAX_PER_CATEGORY} operations; split it"
            )
    if len(set(out) | set(known)) > MAX_CATEGORIES:
        raise GroupingInvalid(f"more than {MAX_CATEGORIES} categories in all; merge some")
    return {n: (d, [m for m in wanted if placed[m] == n]) for n, (d, _) in out.items()}


def assemble(
    parts: list[dict[str, tuple[str, list[str]]]], tag_failure: str | None, order: list[str]
) -> Grouping:
    """One grouping from the batches' answers, categories in the order their first operation comes."""
    members: dict[str, list[str]] = {}
    descs: dict[str, str] = {}
    for part in parts:
        for name, (desc, ops) in part.items():
            members.setdefault(name, []).extend(ops)
            descs.setdefault(name, desc)
    position = {op: i for i, op in enumerate(order)}
    names = sorted(members, key=lambda n: min(position[o] for o in members[n]))
    cats = tuple(
        (
            n,
            n.replace("_", " ").capitalize(),
            descs[n],
            tuple(sorted(members[n], key=position.__getitem__)),
        )
        for n in names
    )
    return Grouping("model", tag_failure, "categories", cats)


def summaries_of(files: Mapping[str, bytes]) -> tuple[str, list[OpSummary]]:
    """(title, each operation's name and first line) from a derived package: all the model sees."""
    manifest = Manifest.from_json(files["skill.json"])
    out = []
    for op in manifest.operations:
        text = files.get(op.file, b"").decode("utf-8", "replace")
        out.append(OpSummary(op.name, split_frontmatter(op.file, text).description()[:120]))
    return manifest.title, out


def propose_grouping(
    chat: Chat,
    title: str,
    ops: list[OpSummary],
    tag_failure: str | None,
    budget_chars: int = 12_000,
    retries: int = 1,
    report: Report = _ignore,
) -> tuple[Grouping | None, str]:
    """The model's grouping, or None and why not (the caller then uses the offline grouping).
    Each batch's invalid answer is sent back once with what was wrong."""
    all_ops = {op.name for op in ops}
    known: dict[str, list[str]] = {}
    descriptions: dict[str, str] = {}
    parts: list[dict[str, tuple[str, list[str]]]] = []
    for i, batch in enumerate(batches(ops, budget_chars)):
        msgs = messages(title, batch, descriptions, len(ops))
        answer: dict[str, tuple[str, list[str]]] | None = None
        for attempt in range(retries + 1):
            try:
                text = chat(msgs)
                answer = parse_answer(text, batch, all_ops, known)
                break
            except GroupingInvalid as exc:
                report(
                    "categorize.model_answer_invalid",
                    {"batch": i, "attempt": attempt, "reason": str(exc)},
                )
                if attempt == retries:
                    return None, f"the model's answer was invalid {retries + 1} times (last: {exc})"
                msgs = [
                    *msgs,
                    {"role": "assistant", "content": text[:4000]},
                    {
                        "role": "user",
                        "content": f"That answer cannot be used: {exc}. Answer again with the corrected JSON only.",
                    },
                ]
            except ChatFailed as exc:
                report("categorize.model_unavailable", {"batch": i, "reason": str(exc)})
                return None, str(exc)
        assert answer is not None
        parts.append(answer)
        for name, (desc, members) in answer.items():
            known.setdefault(name, []).extend(members)
            descriptions.setdefault(name, desc)
    report("categorize.model_grouped", {"categories": len(known)})
    return assemble(parts, tag_failure, [op.name for op in ops]), "the model grouped the operations"


def choose_grouping(
    offline: Grouping,
    files: Mapping[str, bytes],
    chat: Chat | None,
    model: str = "",
    budget_chars: int = 12_000,
    report: Report = _ignore,
) -> tuple[Grouping, str | None]:
    """The grouping to use and why: the offline one unless tags failed, categories are needed and
    a model answers well. The one policy `derive --llm` and the categorize worker share."""
    if offline.tag_failure is None or offline.mode != "categories":
        return offline, None
    if chat is None:
        return (
            offline,
            f"tags failed ({offline.tag_failure}); no model configured, so grouped offline by path",
        )
    title, ops = summaries_of(files)
    grouping, why = propose_grouping(
        chat, title, ops, offline.tag_failure, budget_chars, report=report
    )
    if grouping is None:
        return offline, f"tags failed ({offline.tag_failure}); {why}; grouped offline by path"
    return grouping, f"tags failed ({offline.tag_failure}); {why} ({model})"
