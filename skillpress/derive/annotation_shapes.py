"""What each kind of people's annotation is, and the shape its body must have whatever the spec
says: checked before anything applies it (`check_shape`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillpress.errors import Refused
from skillpress.format.declaration import RISKS

__all__ = [
    "CREDENTIAL_KINDS",
    "KINDS",
    "Annotation",
    "AnnotationRefused",
    "auto_currency_missing",
    "check_shape",
    "operation_target",
]

KINDS = (
    "note",
    "prefer",
    "hidden",
    "approval",
    "example",
    "skill_note",
    "identity",
    "fixed",
    "style",
    "category",
    "workflow",
    "credential",
)
CREDENTIAL_KINDS = ("apiKey", "bearer", "basic")  # how the runtime attaches a person's credential
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


class AnnotationRefused(ValueError, Refused):
    """An annotation that cannot be applied as meant; the message says what to fix."""

    problem = "annotation-refused"


@dataclass(frozen=True)
class Annotation:
    id: str
    kind: str
    target: str  # "skill" | "category:<tag>" | "operation:<name>"
    body: dict[str, Any]

    @property
    def operation(self) -> str | None:
        return operation_target(self.target)


def operation_target(target: str) -> str | None:
    return target.split(":", 1)[1] if target.startswith("operation:") else None


def auto_currency_missing(rule: Mapping[str, Any]) -> str | None:
    """Why an approval rule's `auto_below` could never approve anything rightly: an amount is
    automatic only in the currency its threshold is in, so the rule reads the call's currency
    (`currency`) and names the one it is in (`auto_currency`). None when the rule is whole."""
    if rule.get("auto_below") is None:
        return None
    below = f"auto below {rule['auto_below']:g}"
    if not rule.get("amount"):
        return f"{below} needs the field that holds the amount (amount, like amount.value)"
    if not rule.get("currency"):
        return (
            f"{below} reads the amount from {rule['amount']!r} but no currency: 50 of what?"
            " Name the field that holds the payment's currency (currency, like"
            " amount.currency) and the one the threshold is in (auto_currency, like EUR)"
        )
    if rule.get("auto_currency"):
        return None
    return (
        f"{below} reads the currency from {rule['currency']!r} but"
        " names none it is in, so no call would ever be approved automatically: say which"
        " currency the threshold is in (auto_currency, like EUR)"
    )


def check_shape(kind: str, target: str, body: dict[str, Any]) -> None:
    """Refuse what is malformed whatever the spec says (the shape of one annotation)."""
    # size: one branch per annotation kind's shape, each refusal naming its field
    if kind not in KINDS:
        raise AnnotationRefused(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    on_op = target.startswith("operation:") and len(target) > len("operation:")
    if kind in ("skill_note", "category", "workflow", "credential"):
        if target != "skill":
            raise AnnotationRefused(
                f"a {kind} annotation is about the whole skill; give no operation"
            )
    elif kind == "note" and target.startswith("category:") and len(target) > len("category:"):
        pass  # a note on a category, by its tag (or name)
    elif not on_op:
        raise AnnotationRefused(f"a {kind} annotation names an operation (--operation NAME)")
    text_kinds = {"note": "text", "skill_note": "text"}
    if kind in text_kinds and (
        not isinstance(body.get("text"), str)
        or not body["text"].strip()
        or len(body["text"]) > 4000
    ):
        raise AnnotationRefused(f"a {kind} needs text (at most 4,000 characters)")
    if kind == "prefer" and (not isinstance(body.get("operation"), str) or not body["operation"]):
        raise AnnotationRefused("prefer names the operation to use instead")
    if kind == "identity":
        fields = body.get("fields")
        if (
            not isinstance(fields, list)
            or not fields
            or not all(isinstance(f, str) and f for f in fields)
        ):
            raise AnnotationRefused(
                "an identity names the fields that make two writes the same; it names no field"
            )
    if kind == "approval":
        matches = body.get("matches")
        if not isinstance(matches, str) or len(matches.split()) != 2:
            raise AnnotationRefused("an approval's matches reads like 'DELETE /invoices/{id}'")
        if body.get("risk", "high") not in RISKS:
            raise AnnotationRefused(f"risk is one of {', '.join(RISKS)}")
        if (why := auto_currency_missing(body)) is not None:
            raise AnnotationRefused(why)
    if kind == "example" and (
        not isinstance(body.get("arguments"), dict)
        or not isinstance(body.get("turn"), str)
        or not body["turn"]
    ):
        raise AnnotationRefused(
            "an example is an observed call: its arguments (a JSON object) and the turn it came from"
        )
    if kind == "category":
        sources = body.get("merge") if "merge" in body else [body.get("rename")]
        to = body.get("to")
        if (
            not isinstance(sources, list)
            or not sources
            or not all(isinstance(x, str) and x for x in sources)
        ):
            raise AnnotationRefused(
                "a category annotation renames one category (rename: old, to: new) or merges several (merge: [a, b], to: c)"
            )
        if not isinstance(to, str) or not re.match(r"^[a-z][a-z0-9_]{1,47}$", to):
            raise AnnotationRefused(
                f"category name {to!r} is not 2-48 lowercase letters, digits and underscores starting with a letter"
            )
    if kind == "workflow":
        flow = body.get("workflow")
        if not isinstance(flow, dict) or not isinstance(flow.get("name"), str) or not flow["name"]:
            raise AnnotationRefused("a workflow annotation carries one workflow (with its name)")
    if kind == "style":
        from skillpress.format.declaration import STYLES

        if not isinstance(body.get("name"), str) or not body["name"]:
            raise AnnotationRefused("a style names a query parameter (or form field): NAME=STYLE")
        if body.get("style") not in STYLES:
            raise AnnotationRefused(
                f"style {body.get('style')!r} is not one of {', '.join(STYLES)}"
            )
    if kind == "credential":
        _credential_shape(body)
    if kind == "fixed":
        name = body.get("name")
        where = body.get("in", "argument")
        if not isinstance(name, str) or not name or where not in ("argument", "header"):
            raise AnnotationRefused(
                "fixed names an argument (or a header, with in: header) and its value"
            )
        if "value" not in body:
            raise AnnotationRefused(f"fixed {name}: give the value sent on every call")
        if where == "header" and not _HEADER.match(name):
            raise AnnotationRefused(f"{name!r} is not a header name")


def _credential_shape(body: Mapping[str, Any]) -> None:
    """A skill's credential as a person sets it: the header (or query parameter) it is sent in,
    how (an API key as it is, `Bearer`, HTTP basic) and, when not `<SLUG>_API_KEY`, the
    variable it is read from (held to the package's rule where the slug is known)."""
    name, where, how = body.get("name"), body.get("in", "header"), body.get("kind", "apiKey")
    if not isinstance(name, str) or not _HEADER.match(name):
        raise AnnotationRefused(
            "a credential names the header (or query parameter) it is sent in, like"
            " Authorization or X-Api-Key"
        )
    if where not in ("header", "query"):
        raise AnnotationRefused(f"a credential goes in a header or the query, not {where!r}")
    if how not in CREDENTIAL_KINDS:
        raise AnnotationRefused(
            f"a credential's kind is one of {', '.join(CREDENTIAL_KINDS)}, not {how!r}"
        )
    if where == "query" and how != "apiKey":
        raise AnnotationRefused(f"a {how} credential goes in a header (Authorization)")
    env = body.get("env")
    if env is not None and (not isinstance(env, str) or not _VARIABLE.match(env)):
        raise AnnotationRefused(
            f"{env!r} is not an environment variable's name (letters, digits and _)"
        )
