"""A tool step's success tests on its answer's body, as Arazzo's `successCriteria` write them: a
simple comparison (`$response.body#/status == 'approved'`), a `regex` on a value of the body,
and a `jsonpath` test that holds when its query selects something in the body: a plain path
(`$.items[0].id`), or any RFC 9535 query (`$[?@.access_token != null]`,
`$[?count(@.productCodes) >= 1 && @.eligible == false]`), evaluated by jsonpath-rfc9535.
Pure: parsed from a workflows.yaml entry or an Arazzo criterion, checked against an answer,
written back the same way.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BodyTest",
    "CriterionRefused",
    "body_test",
    "from_criterion",
    "literal_text",
    "literal_value",
    "ordered",
    "query_refusal",
    "selects",
    "to_criterion",
    "to_entry",
]

_COMPARE = re.compile(r"^\$response\.body((?:#/[^\s]*)?)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")
_CONTEXT = re.compile(r"^\$response\.body((?:#/[^\s]*)?)$")
_JSONPATH = re.compile(r"^\$((?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*)$")
_JSONPATH_COMPARE = re.compile(
    r"^\$((?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*)\s*(==|!=|<=|>=|<|>)\s*(.+?)$"
)


class CriterionRefused(ValueError):
    """A success test outside what a step can hold; the message says which forms it takes."""


@dataclass(frozen=True)
class BodyTest:
    """One test of the answer's body: `kind` compare (`op` `value`), regex (`value` the
    pattern), jsonpath (`path` is in the body) or query (`value`, an RFC 9535 query, selects
    something of what `path` holds); `path` where in the body, from the context."""

    kind: str
    path: tuple[str, ...]
    op: str = ""
    value: Any = None

    def holds(self, body: Any) -> bool:
        found, at = _at(body, self.path)
        if self.kind == "query":
            return found and selects(str(self.value), at)
        if self.kind == "jsonpath":
            return found
        if self.kind == "regex":
            return found and isinstance(at, str) and re.search(self.value, at) is not None
        if self.op in ("==", "!="):  # a value not there is null, as Arazzo runners read it
            return bool(at == self.value) == (self.op == "==")
        return found and ordered(self.op, at, self.value)

    def said(self) -> str:
        where = _pointer(self.path)
        if self.kind == "compare":
            return f"$response.body{where} {self.op} {literal_text(self.value)}"
        return f"{self.kind} {self.value!r} on $response.body{where}"


def ordered(op: str, at: Any, value: Any) -> bool:
    """`at op value` for `<`, `<=`, `>`, `>=`: numbers only (true is no number); anything else
    is not in order, as Arazzo runners read it."""
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (at, value)):
        return False
    return bool({"<": at < value, "<=": at <= value, ">": at > value, ">=": at >= value}[op])


def _at(body: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    value = body
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def _pointer(path: tuple[str, ...]) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path) if path else ""


def _tokens(pointer: str) -> tuple[str, ...]:
    return tuple(
        t.replace("~1", "/").replace("~0", "~") for t in pointer.removeprefix("#/").split("/") if t
    )


def literal_text(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


def literal_value(text: str) -> Any:
    """A literal on the right of a comparison: 'text' or "text", a number, true, false, null."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        raise CriterionRefused(
            f"{text!r} is not a literal: a quoted string, a number, true, false or null"
        ) from None


def body_test(entry: Any) -> BodyTest | None:
    """A workflows.yaml `success` entry as a body test: `"$response.body#/status == 'ok'"`, or
    `{context: $response.body#/id, regex: '^app-'}` / `{context: …, jsonpath: '$.items[0]'}`;
    None for a `$statusCode` test (the caller's); CriterionRefused for anything else."""
    if isinstance(entry, str):
        if entry.strip().startswith("$statusCode"):
            return None
        m = _COMPARE.match(entry.strip())
        if m is None:
            raise CriterionRefused(
                f"{entry!r}: a test is '$statusCode == 201' or '$response.body#/status =="
                " 'approved'' (==, !=, <, <=, >, >=)"
            )
        return BodyTest("compare", _tokens(m.group(1)), m.group(2), literal_value(m.group(3)))
    if isinstance(entry, dict) and len(set(entry) & {"regex", "jsonpath"}) == 1:
        kind = "regex" if "regex" in entry else "jsonpath"
        return from_criterion(
            {
                "context": entry.get("context", "$response.body"),
                "condition": entry[kind],
                "type": kind,
            }
        )
    raise CriterionRefused(
        f"{entry!r}: a test is a string like '$statusCode == 201', or {{context:"
        " $response.body#/id, regex: PATTERN}} or {context: $response.body, jsonpath: $.path}"
    )


def from_criterion(criterion: dict[str, Any]) -> BodyTest:
    """An Arazzo criterion of type regex or jsonpath on `$response.body` (or a pointer in it)."""
    kind, condition = criterion.get("type"), str(criterion.get("condition", ""))
    context = _CONTEXT.match(str(criterion.get("context", "")).strip())
    if kind not in ("regex", "jsonpath") or context is None:
        raise CriterionRefused(
            f"{criterion!r}: a regex or jsonpath test has `context: $response.body` (or a pointer"
            " into it, `$response.body#/id`)"
        )
    path = _tokens(context.group(1))
    if kind == "regex":
        try:
            re.compile(condition)
        except re.error as exc:
            raise CriterionRefused(f"regex {condition!r}: {exc}") from None
        return BodyTest("regex", path, value=condition)
    compared = _JSONPATH_COMPARE.match(condition.strip())
    if compared is not None:  # `$.access_token != null`: a comparison of the value there
        at = path + _steps_of(compared.group(1))
        return BodyTest("compare", at, compared.group(2), literal_value(compared.group(3)))
    m = _JSONPATH.match(condition.strip())
    if m is not None:  # a plain path: in the body or not
        return BodyTest("jsonpath", path + _steps_of(m.group(1)), value=condition)
    why = query_refusal(condition.strip())
    if why is not None:
        raise CriterionRefused(
            f"jsonpath {condition!r} is not an RFC 9535 query ({why}): a path ($.items[0].id)"
            " or a filter ($[?@.access_token != null]) holds when it selects something"
        )
    return BodyTest("query", path, value=condition.strip())


# RFC 9535's count() of the current node is 1: jsonpath-rfc9535 1.0 fails on `count(@)` (it
# passes the node's value, not a node list), so it is read as the 1 it is
_COUNT_CURRENT = re.compile(r"count\(\s*@\s*\)")


@functools.lru_cache(maxsize=1024)  # the queries of the workflows a process runs: bounded
def _compiled(query: str) -> Any:
    import jsonpath_rfc9535

    return jsonpath_rfc9535.compile(_COUNT_CURRENT.sub("1", query))


def query_refusal(query: str) -> str | None:
    """Why `query` is no RFC 9535 query, or None."""
    from jsonpath_rfc9535.exceptions import JSONPathError

    try:
        _compiled(query)
    except JSONPathError as exc:
        return str(exc).splitlines()[0]
    return None


def selects(query: str, value: Any) -> bool:
    """Whether `query` selects at least one node of `value`."""
    return _compiled(query).find_one(value) is not None


def _steps_of(dotted: str) -> tuple[str, ...]:
    parts = re.findall(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]", dotted)
    return tuple(a or b for a, b in parts)


def to_criterion(test: BodyTest) -> dict[str, Any]:
    """The test as an Arazzo criterion (what `from_criterion` and a comparison read back)."""
    if test.kind == "compare":
        return {"condition": test.said()}
    if test.kind == "regex":
        return {
            "context": f"$response.body{_pointer(test.path)}",
            "condition": test.value,
            "type": "regex",
        }
    context = _pointer(test.path) if test.kind == "query" else ""
    return {"context": f"$response.body{context}", "condition": test.value, "type": "jsonpath"}


def to_entry(test: BodyTest) -> Any:
    """The test as a workflows.yaml `success` entry (what `body_test` reads back)."""
    if test.kind == "compare":
        return test.said()
    if test.kind == "regex":
        return {"context": f"$response.body{_pointer(test.path)}", "regex": test.value}
    context = _pointer(test.path) if test.kind == "query" else ""
    return {"context": f"$response.body{context}", "jsonpath": test.value}
