"""An operation file's frontmatter: split it from the prose and parse it, refusing what is wrong.

This is the publish-time parser of `skill-operations-as-tools`: an `operation:` block (method,
URL and the tool's arguments, either as one JSON Schema or as the flat lists a person writes by
hand), an optional `identity:` list and an optional `approval:` gate. A declaration that would
send something other than what it says is refused with a message naming the file and field;
nothing half-parsed is returned. What each key may hold is `declaration.py`'s; the operation
block's forms are read in `declaration_forms.py`; the derivation writes what this reads
(`derive/declare.py`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from skillpress.format.declaration import (
    _FRONTMATTER_LIMITS,
    APPROVAL_KEYS,
    FIELD_NAME,
    FILE_KEYS,
    FLAT_KEYS,
    HEADER_NAME,
    MAX_OPERATION_FILE_BYTES,
    METHODS,
    OPERATION_KEYS,
    PATH_TEMPLATE,
    RISKS,
    RUNTIME_HEADERS,
    SCHEME_NAME,
    Approval,
    Declaration,
    DeclarationError,
    OperationFile,
    path_matches,
    templated,
)
from skillpress.format.declaration_forms import _flat_form, _names, _paging, _schema_form
from skillpress.format.errors import SpecRefused
from skillpress.format.keys import unknown_keys
from skillpress.format.load import parse_bytes
from skillpress.format.request_encoding import _encoding, _files, _sent_as

__all__ = [
    "frontmatter_text",
    "parse_declaration",
    "parse_operation_file",
    "split_frontmatter",
]


def _fenced(normal: str) -> tuple[str, str] | None:
    """(the frontmatter between its `---` lines, the prose after), or None when there is none."""
    if not normal.startswith("---\n"):
        return None
    end = normal.find("\n---", 3)
    while end >= 0 and normal[end + 4 : end + 5] not in ("", "\n"):
        end = normal.find("\n---", end + 4)
    if end < 0:
        return None
    return normal[4 : end + 1], normal[end + 5 :]


def frontmatter_text(data: bytes | None) -> str:
    """An operation file's frontmatter as written (its declaration), or '' when it has none."""
    if not data:
        return ""
    fenced = _fenced(data.decode("utf-8", "replace").replace("\r\n", "\n"))
    return fenced[0] if fenced else ""


def prose_text(data: bytes) -> str | None:
    """An operation file's prose, after its frontmatter (the declaration the runtime builds the
    request from); None when it has no frontmatter."""
    fenced = _fenced(data.decode("utf-8", "replace").replace("\r\n", "\n"))
    return fenced[1] if fenced else None


def split_frontmatter(file: str, text: str) -> OperationFile:
    """Split `---`-fenced YAML frontmatter from the prose, with the loader's bounds applied."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_OPERATION_FILE_BYTES:
        raise DeclarationError(
            file,
            "",
            f"file is over the {MAX_OPERATION_FILE_BYTES // 1024} KB an operation file may be",
        )
    normal = text.replace("\r\n", "\n")
    fenced = _fenced(normal)
    if fenced is None:
        if normal.startswith("---\n"):
            raise DeclarationError(
                file, "frontmatter", "starts with '---' but has no closing '---' line"
            )
        return OperationFile(file, {}, normal)
    block, prose = fenced
    if not block.strip():
        return OperationFile(file, {}, prose)
    try:
        loaded = parse_bytes(block.encode("utf-8", "surrogatepass"), _FRONTMATTER_LIMITS)
    except SpecRefused as exc:
        raise DeclarationError(file, "frontmatter", f"is not valid YAML: {exc.reason}") from None
    if not isinstance(loaded, dict):
        raise DeclarationError(file, "frontmatter", "is not a mapping of keys to values")
    return OperationFile(file, loaded, prose)


def _url(file: str, op: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    url = op.get("url")
    if not isinstance(url, str) or not url.strip():
        raise DeclarationError(
            file, "operation.url", "is missing; write the absolute URL the request goes to"
        )
    url = url.strip()
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise DeclarationError(file, "operation.url", "contains spaces or control characters")
    parts = urlsplit(url)
    relative = url.startswith("/") and not url.startswith("//")
    if not relative and (parts.scheme not in ("http", "https") or not parts.hostname):
        raise DeclarationError(
            file,
            "operation.url",
            f"{url!r} is not an absolute http(s) URL (or a path, for a skill given its base URL when it is called)",
        )
    if parts.username or parts.password:
        raise DeclarationError(
            file, "operation.url", "carries credentials; name the header in the skill instead"
        )
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise DeclarationError(
            file,
            "operation.url",
            "has a query string or fragment; list query parameters in `query`",
        )
    if "{" in parts.netloc or "}" in parts.netloc:
        raise DeclarationError(
            file, "operation.url", "has a template in its host; the host must be fixed"
        )
    return url, _path_params(file, parts.path)


def _path_params(file: str, path: str) -> tuple[str, ...]:
    """The parameters a declaration's URL path names, in order: each once, each a name, every
    brace balanced (DeclarationError naming the segment otherwise)."""
    params: list[str] = []
    for segment in path.split("/"):
        names = PATH_TEMPLATE.findall(segment)
        if not names:
            if "{" in segment or "}" in segment:
                raise DeclarationError(
                    file, "operation.url", f"segment {segment!r} has an unbalanced brace"
                )
            continue
        if "{" in PATH_TEMPLATE.sub("", segment) or "}" in PATH_TEMPLATE.sub("", segment):
            raise DeclarationError(
                file, "operation.url", f"segment {segment!r} has an unbalanced brace"
            )
        for name in names:
            if not FIELD_NAME.match(name):
                raise DeclarationError(file, "operation.url", f"{{{name}}} is not a parameter name")
            if name in params:
                raise DeclarationError(
                    file, "operation.url", f"names path parameter {{{name}}} twice"
                )
            params.append(name)
    return tuple(params)


def _fixed(file: str, op: dict[str, Any]) -> dict[str, Any]:
    raw = op.get("fixed", {})
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and FIELD_NAME.match(k) for k in raw
    ):
        raise DeclarationError(
            file, "operation.fixed", "must map argument names to the values sent on every call"
        )
    for name, value in raw.items():
        if templated(value):
            raise DeclarationError(
                file,
                "operation.fixed",
                f"{name}: {value!r} is a template; a fixed value is sent as written (templates"
                " are a workflow's: write the value, or leave the argument to the call)",
            )
    return dict(raw)


def _headers(file: str, op: dict[str, Any]) -> dict[str, str]:
    raw = op.get("headers", {})
    if not isinstance(raw, dict):
        raise DeclarationError(
            file, "operation.headers", "must map header names to the values sent on every call"
        )
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            raise DeclarationError(file, "operation.headers", f"{name!r} is not a header name")
        if name.lower() in RUNTIME_HEADERS:
            raise DeclarationError(
                file, "operation.headers", f"{name} is set by the runtime, never fixed in a file"
            )
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, (str, int, float)) or any(c in str(value) for c in "\r\n\x00"):
            raise DeclarationError(
                file, "operation.headers", f"{name}'s value must be one line of text"
            )
        out[name] = str(value)
    return out


def _money(file: str, raw: dict[str, Any], body: tuple[str, ...]) -> tuple[Any, Any, Any, Any]:
    """A gate's money keys, checked: the amount and currency fields it reads (body fields),
    and the threshold below which a call is approved by itself, in its currency."""
    amount = raw.get("amount")
    currency = raw.get("currency")
    for key, value in (("amount", amount), ("currency", currency)):
        # a body field, or a field inside one (`amount.value`)
        if value is not None and (not isinstance(value, str) or value.split(".")[0] not in body):
            raise DeclarationError(
                file, f"approval.{key}", f"{value!r} is not a body field of this operation"
            )
    auto_currency = raw.get("auto_currency")
    if auto_currency is not None and (
        not isinstance(auto_currency, str) or not re.fullmatch(r"[A-Za-z]{3}", auto_currency)
    ):
        raise DeclarationError(
            file, "approval.auto_currency", f"{auto_currency!r} is not a currency code like EUR"
        )
    auto = raw.get("auto_below")
    if auto is not None:
        if isinstance(auto, bool) or not isinstance(auto, (int, float)) or auto < 0:
            raise DeclarationError(file, "approval.auto_below", "must be a non-negative number")
        if amount is None:
            raise DeclarationError(
                file,
                "approval.auto_below",
                "needs `amount`: the body field the threshold applies to",
            )
        if currency is None:
            raise DeclarationError(
                file,
                "approval.currency",
                "auto_below needs `currency`: the field that holds the payment's currency (an"
                " amount with no currency is never approved automatically: 50 of what?)",
            )
        if auto_currency is None:
            raise DeclarationError(
                file,
                "approval.auto_currency",
                f"the gate reads the currency from {currency!r}: say which currency auto_below"
                " is in (like EUR), or no call is ever approved automatically",
            )
    return amount, currency, auto, auto_currency


def _approval(
    file: str,
    raw: Any,
    method: str,
    url_path: str,
    path_params: tuple[str, ...],
    body: tuple[str, ...],
    sent: tuple[str, ...],
) -> Approval:
    if not isinstance(raw, dict):
        raise DeclarationError(file, "approval", "must be a mapping with `matches` and `risk`")
    unknown = unknown_keys(raw, APPROVAL_KEYS)
    if unknown:
        raise DeclarationError(file, "approval", unknown)
    matches = raw.get("matches")
    if not isinstance(matches, str) or len(matches.split()) != 2:
        raise DeclarationError(file, "approval.matches", "must read like 'DELETE /invoices/{id}'")
    m_method, m_path = matches.split()
    m_method = m_method.upper()
    own = f"{method} {url_path}"
    if m_method != method or not path_matches(m_path, url_path):
        raise DeclarationError(
            file,
            "approval.matches",
            f"{matches!r} does not match this file's operation ({own}); a gate in a file with an operation must match it",
        )
    risk = raw.get("risk", "high")
    if risk not in RISKS:
        raise DeclarationError(file, "approval.risk", f"{risk!r} is not one of {', '.join(RISKS)}")
    # what a gate binds by default: every argument the call sends (a grant covers exactly the
    # call a person saw: `cascade=true` added to an approved DELETE is another call); a call that
    # sends none binds nothing and is gated all the same: every call waits, a grant lets one by
    binds = _names(file, "approval.binds", raw.get("binds")) or sent
    for name in binds:
        if name not in sent:
            raise DeclarationError(
                file, "approval.binds", f"names {name!r}, which this operation does not send"
            )
    amount, currency, auto, auto_currency = _money(file, raw, body)
    return Approval(
        m_method,
        m_path,
        str(risk),
        binds,
        amount,
        currency,
        float(auto) if auto is not None else None,
        auto_currency.upper() if isinstance(auto_currency, str) else None,
    )


def parse_declaration(op_file: OperationFile) -> Declaration | None:
    """The file's operation declaration, or None when it has no `operation:` block.

    Raises DeclarationError for anything that would make the tool and the request disagree.
    """
    # size: the declaration's keys in the order a reader meets them
    file = op_file.file
    front = op_file.frontmatter
    unknown = unknown_keys(front, FILE_KEYS)
    if unknown:
        raise DeclarationError(file, "frontmatter", unknown)
    raw = front.get("operation")
    if raw is None:
        if "identity" in front:
            raise DeclarationError(
                file,
                "identity",
                "needs an `operation:` block: it names fields of the request the block declares",
            )
        return None
    if not isinstance(raw, dict):
        raise DeclarationError(
            file, "operation", "must be a mapping with method, url and the arguments"
        )
    unknown = unknown_keys(raw, OPERATION_KEYS)
    if unknown:
        raise DeclarationError(file, "operation", unknown)
    method = raw.get("method")
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise DeclarationError(
            file, "operation.method", f"{method!r} is not one of {', '.join(METHODS)}"
        )
    method = method.upper()
    url, path_params = _url(file, raw)
    fixed = _fixed(file, raw)
    flat = [k for k in FLAT_KEYS if k in raw]
    if "schema" in raw:
        extra = [k for k in flat if k not in ("query", "header", "cookie")]
        if extra:
            raise DeclarationError(
                file,
                "operation",
                f"has both `schema` and the flat list(s) {', '.join(extra)}; use one form",
            )
        sent_in = _schema_form(file, raw, method, path_params, fixed)
        form = "schema"
    else:
        sent_in = _flat_form(file, raw, method, path_params, fixed)
        form = "flat"
    schema, query, header, cookie, body = sent_in
    sent = path_params + query + header + cookie + body
    headers = _headers(file, raw)
    content_type, styles, body_arg = _encoding(file, raw, schema, query, body, path_params)
    sent_as = _sent_as(file, raw, (*query, *cookie, *body), header)
    files = _files(file, raw, schema, body, content_type)
    paging = _paging(file, raw.get("paging"), method, query)
    credential = raw.get("credential")
    if credential is not None and not (
        isinstance(credential, str) and SCHEME_NAME.match(credential)
    ):
        raise DeclarationError(
            file, "operation.credential", "must be a security scheme's name (letters, digits, _.-)"
        )
    for name in header:
        wire = dict(sent_as).get(name, name)
        if not HEADER_NAME.match(wire) or wire.lower() in RUNTIME_HEADERS:
            raise DeclarationError(
                file,
                "operation.header",
                f"{wire!r} is not a header an argument may set"
                + (" (the runtime sets it)" if wire.lower() in RUNTIME_HEADERS else ""),
            )
        if wire.lower() in (h.lower() for h in headers):
            raise DeclarationError(
                file,
                "operation.header",
                f"{wire} is also a fixed header; a name lives in one place",
            )
    if "identity" in raw and "identity" in front:
        raise DeclarationError(
            file,
            "identity",
            "is written both in `operation` and beside it; a name lives in one place",
        )
    identity = _names(file, "identity", raw.get("identity", front.get("identity")))
    for name in identity:
        if name not in sent:
            raise DeclarationError(
                file, "identity", f"names {name!r}, which this operation does not send"
            )
    if "identity" in front and not identity:
        raise DeclarationError(
            file,
            "identity",
            "names no field; list the fields that make two writes the same, or leave it out",
        )
    approval = None
    if "approval" in front:
        approval = _approval(
            file, front["approval"], method, urlsplit(url).path or "/", path_params, body, sent
        )
    return Declaration(
        file=file,
        name=op_file.name,
        method=method,
        url=url,
        path_params=path_params,
        query=query,
        body=body,
        schema=schema,
        identity=identity,
        approval=approval,
        description=op_file.description(),
        form=form,
        fixed=tuple(fixed.items()),
        headers=tuple(headers.items()),
        content_type=content_type,
        styles=styles,
        body_arg=body_arg,
        sent_as=sent_as,
        header=header,
        cookie=cookie,
        files=files,
        paging=paging,
        credential=credential,
    )


def parse_operation_file(file: str, text: str) -> tuple[OperationFile, Declaration | None]:
    """Split and parse one operation file; raises DeclarationError naming the file and field."""
    op_file = split_frontmatter(file, text)
    return op_file, parse_declaration(op_file)
