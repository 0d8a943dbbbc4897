"""An `if`'s tests, each on a value saved before it, all of which must hold for its `then`: the
value is true (`availability.available`: a boolean, null taken as false), a comparison with a
literal (`check.eligible == false`, `quote.total >= 100`: a value never saved is null, as Arazzo
runners read it), or an RFC 9535 query that selects something of it (`{context: check, jsonpath:
'$[?@.products]'}`, Arazzo's jsonpath criterion, a presence test whatever the value). One test
is written as itself, several as a list. Pure: parsed, checked against values, written back the
same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skillpress.runtime.workflows.criteria import (
    literal_text,
    literal_value,
    ordered,
    query_refusal,
    selects,
)

__all__ = ["MAX_IF_TESTS", "IfTest", "NotATest", "if_entry", "if_tests"]

MAX_IF_TESTS = 16

_PATH = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)$")
_COMPARE = re.compile(
    r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*(==|!=|<=|>=|<|>)\s*(\S.*?)\s*$"
)


class NotATest(ValueError):
    """A test that the value is true met a value that is not a boolean (nor null): the message
    says what it was."""


@dataclass(frozen=True)
class IfTest:
    """`path` the saved value (`name.field.0`); `op` and `value` a comparison with a literal,
    or `query` an RFC 9535 query; neither: the value is true."""

    path: str
    op: str = ""
    value: Any = None
    query: str | None = None

    @property
    def head(self) -> str:
        """The saved name the test reads."""
        return self.path.split(".", 1)[0]

    def holds(self, found: bool, value: Any) -> bool:
        """Whether the test holds of `value` (`found`: whether the path is there at all)."""
        if self.query is not None:
            return found and selects(self.query, value)
        if not self.op:
            if value is None or isinstance(value, bool):
                return bool(value)
            raise NotATest(
                f"if {self.path}: the value is {_kind(value)}, not true or false; an if tests a"
                " boolean (or null, taken as false), as Arazzo's `== true` does: name a field"
                " that is one, or compare it (`== 'text'`)"
            )
        if self.op in ("==", "!="):
            return _same(value, self.value) == (self.op == "==")
        return ordered(self.op, value, self.value)

    def excludes(self, other: IfTest) -> bool:
        """Whether the two cannot both hold: the same value equal to two different literals,
        or equal and not equal to one (a test that it is true is `== true`)."""
        mine, theirs = self._equals(), other._equals()
        if mine is None or theirs is None or self.path != other.path:
            return False
        same = _same(mine[1], theirs[1])
        return (mine[0] == theirs[0] == "==" and not same) or (mine[0] != theirs[0] and same)

    def _equals(self) -> tuple[str, Any] | None:
        if self.query is None and not self.op:
            return ("==", True)
        return (self.op, self.value) if self.op in ("==", "!=") else None

    def entry(self) -> Any:
        """The test as workflows.yaml writes it (what `if_tests` reads back)."""
        if self.query is not None:
            return {"context": self.path, "jsonpath": self.query}
        if self.op:
            return f"{self.path} {self.op} {literal_text(self.value)}"
        return self.path

    def said(self) -> str:
        """The test in words, for a procedure a model reads."""
        if self.query is not None:
            return f"`{self.query}` selects something in `{self.path}`"
        return f"`{self.entry()}`"


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values are: true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _kind(value: Any) -> str:
    return (
        "a list"
        if isinstance(value, list)
        else "an object"
        if isinstance(value, dict)
        else "a string"
        if isinstance(value, str)
        else "a number"
    )


def if_tests(said: Any) -> tuple[IfTest, ...]:
    """An `if`'s tests as workflows.yaml writes them (ValueError saying which forms it takes)."""
    items = said if isinstance(said, list) else [said]
    if not items or len(items) > MAX_IF_TESTS:
        raise ValueError(f"an if has 1 to {MAX_IF_TESTS} tests, all of which must hold")
    return tuple(_one(item) for item in items)


def _one(said: Any) -> IfTest:
    if isinstance(said, dict):
        cond, query = str(said.get("context", "")).strip(), said.get("jsonpath")
        if set(said) != {"context", "jsonpath"} or not isinstance(query, str):
            raise ValueError("an if mapping is {context: a saved value, jsonpath: a query}")
        wrong = query_refusal(query)
        if wrong is not None:
            raise ValueError(f"if jsonpath {query!r} is not an RFC 9535 query ({wrong})")
        test = IfTest(cond, query=query)
    elif isinstance(said, str) and (compared := _COMPARE.match(said.strip())):
        try:
            value = literal_value(compared.group(3))
        except ValueError as exc:
            raise ValueError(f"if {said!r}: {exc}") from None
        test = IfTest(compared.group(1), compared.group(2), value)
    elif isinstance(said, str | int | float | bool):
        test = IfTest(str(said).strip())
    else:
        raise ValueError(
            "an if test is a saved value (`check.eligible`), a comparison (`check.count > 0`)"
            " or {context: a saved value, jsonpath: a query}"
        )
    if not _PATH.match(test.path):
        raise ValueError(f"if {test.path!r}: name a saved value, like availability.available")
    return test


def if_entry(tests: tuple[IfTest, ...] | list[IfTest]) -> Any:
    """The tests as an `if` writes them: one as itself, several as a list."""
    entries = [t.entry() for t in tests]
    return entries[0] if len(entries) == 1 else entries
