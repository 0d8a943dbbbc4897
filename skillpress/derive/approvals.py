"""Guessed approval rules and identities, per operation: suggestions for a person, never applied.

Reads are not proposed as gates at all, unless their names say they return secrets or
credentials (then flagged as such); creates and updates are medium; deletes and anything named
for money or irreversibility, or that sends a price-like field, high and gated; an `x-risk`
extension in the spec wins. A rule binds every argument the call sends; an operation that
sends none is gated all the same (each call waits, a grant lets one call by). Amount and currency fields are read
from body field names, the payment's own amount first (required, named `amount`, beside a
currency), with what else is sent said as `unsure`; an ambiguous money word (`subscription`,
`transfer`) is money only where nothing beside it names what else it is. An identity is guessed
from a create's required fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillpress.format.declaration import READ_METHODS, RISKS, Declaration, DeclarationError
from skillpress.format.frontmatter import parse_operation_file
from skillpress.format.manifest import Manifest, OperationEntry

__all__ = ["Suggestion", "guess_suggestions", "GROUPS"]

GROUPS = ("money", "deletes", "changes", "reads")
_WORD = re.compile(r"[a-z]+")
_MONEY = {
    "pay",
    "pays",
    "payment",
    "payments",
    "payout",
    "payouts",
    "charge",
    "charges",
    "refund",
    "refunds",
    "transfer",
    "transfers",
    "invoice",
    "invoices",
    "billing",
    "bill",
    "purchase",
    "purchases",
    "checkout",
    "withdraw",
    "withdrawal",
    "withdrawals",
    "deposit",
    "deposits",
    "capture",
    "captures",
    "subscription",
    "subscriptions",
    "order",
    "orders",
    "price",
    "prices",
    "fund",
    "funds",
    "wallet",
    "debit",
    "money",
    "donation",
    "payroll",
    "payee",
    "settlement",
    "disburse",
    "buy",
    "sell",
    "pricing",
    "quote",
    "plan",  # a paid plan (Zoom's account_plan_create)
    "plans",
}
# money words that name something else beside these (GitHub's notification `subscription`, a
# repository's `transfer`): money only without them
_AMBIGUOUS = {"subscription", "subscriptions", "transfer", "transfers", "capture", "captures"}
_NOT_MONEY_BESIDE = {
    "notification",
    "notifications",
    "thread",
    "threads",
    "repo",
    "repos",
    "repository",
    "repositories",
    "watch",
    "watchers",
    "webhook",
    "webhooks",
    "ownership",
    "screen",
    "screenshot",
}
_IRREVERSIBLE = {
    "delete",
    "deletes",
    "destroy",
    "purge",
    "remove",
    "revoke",
    "terminate",
    "cancel",
    "void",
    "wipe",
    "erase",
    "reset",
    "expire",
}
# a POST makes something only when its name says so; many POSTs only look things up, and an
# identity on those would give two different questions the same Idempotency-Key
_CREATES = {
    "create",
    "add",
    "new",
    "insert",
    "register",
    "book",
    "make",
    "open",
    "issue",
    "send",
    "submit",
    "upload",
    "place",
    "start",
    "invite",
    "generate",
    "import",
}
_LOOKUPS = {
    "search",
    "query",
    "list",
    "get",
    "find",
    "lookup",
    "validate",
    "check",
    "calculate",
    "estimate",
    "preview",
    "count",
    "verify",
    "test",
    "evaluate",
    "match",
    "filter",
    "batch",
}
# `total` is money only as a name's last word (`order_total`), not a count's first
# (`total_members`)
_AMOUNT = re.compile(
    r"(^|_)(amount|price|cost|fee|sum|value)(_|$)|(^|_)total$|(amount|price|cost|fee)$",
    re.IGNORECASE,
)
# what a read returns that a person should see before an agent does
_SECRETS = {
    "secret",
    "secrets",
    "credential",
    "credentials",
    "password",
    "passwords",
    "decrypt",
    "decrypted",
    "apikey",
    "apikeys",
    "token",
    "tokens",
    "env",
    "envs",
    "private",
}
_CURRENCY = re.compile(r"currency", re.IGNORECASE)


@dataclass(frozen=True)
class Suggestion:
    operation: str
    kind: str  # approval | identity | header (a value only the operator can give)
    group: str  # money | deletes | changes | reads
    body: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "kind": self.kind, "group": self.group, **self.body}


def _words(*texts: str) -> set[str]:
    out: set[str] = set()
    for text in texts:
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
        out.update(_WORD.findall(spaced.lower()))
    return out


_PRICE = re.compile(r"(^|_)(amount|price|cost|fee)(_|$)|(^|_)total$|(amount|price|cost|fee)$", re.I)
_DECIMAL_FORMATS = ("decimal", "double", "float", "number", "amount", "money", "currency")


def _resolved(schema: Any, types: dict[str, Any]) -> Any:
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if isinstance(ref, str) and ref.startswith("#/types/"):
        return types.get(ref[8:])
    return schema


def _numeric(schema: Any) -> bool:
    """A number, or a decimal string declared as one (`format: decimal`, a digits pattern)."""
    if not isinstance(schema, dict):
        return False
    typ = schema.get("type")
    kinds = typ if isinstance(typ, list) else [typ]
    if "number" in kinds or "integer" in kinds:
        return True
    pattern = str(schema.get("pattern") or "")
    return "string" in kinds and (
        schema.get("format") in _DECIMAL_FORMATS or bool(re.search(r"\\d|0-9", pattern))
    )


def _is_amount(name: str, schema: Any, beside_currency: bool) -> bool:
    """Money needs a number: named like a price (amount, price, cost, fee, total), or named
    `value`/`sum` beside a currency. A secret's `encrypted_value` or a variable's string
    `value` is not money."""
    if not _numeric(schema):
        return False
    return bool(_PRICE.search(name)) or (beside_currency and bool(_AMOUNT.search(name)))


def _amount_fields(
    decl: Declaration | None, types: dict[str, Any]
) -> tuple[str | None, str | None, list[str]]:
    """(the amount a money gate reads, the currency beside it, the other amounts the call
    sends). The payment's own amount is the one a person would name: a required field first,
    then one named `amount`, then one paired with a currency, then the first sent; Adyen's
    `amount {currency, value}` and not its `additionalAmount` beside it."""
    if decl is None:
        return None, None, []
    props = decl.schema.get("properties", {})
    required = set(decl.required)
    top_currency = next((f for f in decl.body if _CURRENCY.search(f)), None)
    found: list[tuple[tuple[bool, bool, bool], int, str, str | None]] = []
    for n, f in enumerate(decl.body):
        schema = _resolved(props.get(f), types)
        if _is_amount(f, schema, top_currency is not None):
            pair: tuple[str, str | None] | None = (f, top_currency)
        elif _AMOUNT.search(f) and isinstance(schema, dict):  # {"value": 100, "currency": "EUR"}
            inner = schema.get("properties")
            inner = inner if isinstance(inner, dict) else {}
            cur = next((k for k in inner if _CURRENCY.search(k)), None)
            value = next(
                (k for k in inner if _is_amount(k, _resolved(inner[k], types), cur is not None)),
                None,
            )
            pair = (f"{f}.{value}", f"{f}.{cur}") if value and cur else None
        else:
            pair = None
        if pair is not None:
            rank = (f in required, f.lower() == "amount", pair[1] is not None)
            found.append((rank, -n, pair[0], pair[1]))
    if not found:
        return None, top_currency, []
    found.sort(reverse=True)
    _, _, amount, currency = found[0]
    return amount, currency, [path for _, _, path, _ in found[1:]]


def _unsure(amount: str, currency: str | None, others: list[str]) -> str | None:
    """What a person should check before confirming a money gate's guess, or None."""
    said = []
    if others:
        said.append(
            f"it also sends {', '.join(others[:3])}: check that {amount} is the payment's own"
        )
    if currency is None:
        said.append(
            "no currency field beside it: an automatic approval needs one (name it, with the"
            " currency the threshold is in), or every call waits for a person"
        )
    return "; ".join(said) or None


def _money_words(words: set[str]) -> set[str]:
    """The words that name money, an ambiguous one only where nothing beside it names what
    else it is."""
    found = words & _MONEY
    if words & _NOT_MONEY_BESIDE:
        found -= _AMBIGUOUS
    return found


def _risk(method: str, words: set[str], x_risk: Any) -> tuple[str, str, str]:
    """(risk, group, why)."""
    money = _money_words(words)
    if method in READ_METHODS:
        group, risk, why = "reads", "low", f"a {method} reads"
    elif method == "DELETE" or words & _IRREVERSIBLE:
        hit = sorted(words & _IRREVERSIBLE)
        group, risk, why = (
            "deletes",
            "high",
            ("a DELETE" if method == "DELETE" else f"named for something irreversible ({hit[0]})"),
        )
    elif money:
        group, risk, why = "money", "high", f"named for money ({sorted(money)[0]})"
    else:
        group, risk, why = "changes", "medium", f"a {method} changes something"
    if method not in READ_METHODS and money and group != "money":
        group = "money"
    if isinstance(x_risk, str) and x_risk.lower() in RISKS:
        risk, why = x_risk.lower(), "the spec's x-risk says so"
    return risk, group, why


def _declaration_of(entry: OperationEntry, files: Mapping[str, bytes]) -> Declaration | None:
    """The operation's tool declaration, read from its file (None without a tool, or unread)."""
    text = files.get(entry.file)
    if not entry.tool or text is None:
        return None
    try:
        return parse_operation_file(entry.file, text.decode("utf-8"))[1]
    except (DeclarationError, UnicodeDecodeError):
        return None


# an operation file lists a header parameter as "- `Idempotency-Key` (string, optional, header)"
_IDEMPOTENCY_HEADER = re.compile(r"^- `([^`]*idempot[^`]*)` \([^)]*\bheader\)", re.I | re.M)


def _declared_key(entry: OperationEntry, files: Mapping[str, bytes]) -> str | None:
    """The idempotency header the spec says the operation reads (its file lists its header
    parameters), or None: where there is one, the API dedupes a write sent twice."""
    text = files.get(entry.file, b"").decode("utf-8", "replace")
    found = _IDEMPOTENCY_HEADER.search(text)
    return found.group(1) if found else None


def _identity_of(
    method: str, path: str, words: set[str], decl: Declaration | None, declared: str | None
) -> list[str]:
    """The fields that make two writes the same, its identity guess: a write's required fields
    where the API reads an idempotency key, else a create's (a POST to a collection named to
    create)."""
    is_create = (
        method == "POST"
        and not path.rstrip("/").endswith("}")
        and bool(words & _CREATES)
        and not words & _LOOKUPS
    )
    writes = method in ("POST", "PUT", "PATCH") and not words & _LOOKUPS
    if decl is None or not (is_create or (declared is not None and writes)):
        return []
    return [r for r in decl.required if r in decl.body or r in decl.path_params]


def _identity_why(declared: str | None) -> dict[str, str]:
    """What confirming an identity does, said where the person decides."""
    if declared is not None:
        return {
            "why": f"the API reads {declared}: confirming sends one made of these fields, so a"
            " write that failed can be sent again and is done once"
        }
    return {
        "why": "a create's required fields",
        "unsure": "this API declares no idempotency key: confirming lets a write that failed"
        " be sent again, and an API that does not dedupe would do it twice",
    }


def guess_suggestions(files: Mapping[str, bytes]) -> list[Suggestion]:
    """One approval suggestion per operation and an identity suggestion per create, in index order."""
    manifest = Manifest.from_json(files["skill.json"])
    types = json.loads(files.get("types.json", b"{}"))
    out: list[Suggestion] = []
    for entry in manifest.operations:
        name = entry.name
        method = entry.method.upper()
        path = entry.path
        decl = _declaration_of(entry, files)
        words = _words(name, path, entry.operation_id or "")
        risk, group, why = _risk(method, words, entry.x_risk)
        secret = sorted(words & _SECRETS)
        said = isinstance(entry.x_risk, str) and entry.x_risk.lower() in RISKS
        if group == "reads" and not secret and not said:
            continue  # a read is never proposed as a gate, unless what it returns is a secret
        if group == "reads" and secret and not said:
            risk, why = "medium", f"a {method} that returns credentials or secrets ({secret[0]})"
        amount, currency, others = (
            _amount_fields(decl, types) if group != "reads" else (None, None, [])
        )
        if amount and group != "money":  # a price-like field makes it money, whatever its name
            group, risk, why = "money", "high", f"it sends an amount ({amount})"
        elif group != "money" or not amount:
            amount, currency = None, None
        binds = list(decl.sent) if decl else []  # a gate binds every argument the call sends
        body: dict[str, Any] = {
            "matches": f"{method} {path}",
            "risk": risk,
            "gated": risk == "high",
            "binds": binds,
            "bindable": True,  # one that binds nothing is a gate too: each call waits
            "why": why,
        }
        if amount:
            body["amount"] = amount
        if currency:
            body["currency"] = currency
        if amount and (unsure := _unsure(amount, currency, others)) is not None:
            body["unsure"] = unsure
        out.append(Suggestion(name, "approval", group, body))
        if entry.required_headers:  # a question only the operator can answer: the values
            why = "required headers the tool does not send; give their values"
            body_h = {"names": list(entry.required_headers), "why": why}
            out.append(Suggestion(name, "header", group, body_h))
        declared = _declared_key(entry, files) if method in ("POST", "PUT", "PATCH") else None
        identity = _identity_of(method, path, words, decl, declared)
        if identity:
            body_i = {"fields": identity, **_identity_why(declared)}
            out.append(Suggestion(name, "identity", group, body_i))
    return out
