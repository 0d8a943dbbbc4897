"""An operation file's frontmatter: split it from the prose and parse it, refusing what is wrong.

This is the publish-time parser of `skill-operations-as-tools`: an `operation:` block (method,
URL and the tool's arguments, either as one JSON Schema or as the flat lists a person writes by
hand), an optional `identity:` list and an optional `approval:` gate. A declaration that would
send something other than what it says is refused with a message naming the file and field;
nothing half-parsed is returned.
"""
# size: the declaration's one reader and writer: every key's check beside the key, so a reader and a writer cannot drift

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from skillpress.derive.errors import SpecRefused
from skillpress.derive.jsonfmt import readable_json
from skillpress.derive.keys import unknown_keys
from skillpress.derive.load import LoadLimits, parse_bytes
from skillpress.derive.model import Operation
from skillpress.derive.paging import KINDS as PAGING_KINDS
from skillpress.derive.paging import Paging
from skillpress.errors import Permanent

__all__ = [
    "PATH_TEMPLATE",
    "path_template_names",
    "Approval",
    "declaration_block",
    "frontmatter_text",
    "Declaration",
    "DeclarationError",
    "OperationFile",
    "parse_declaration",
    "parse_operation_file",
    "split_frontmatter",
]

MAX_OPERATION_FILE_BYTES = 256 * 1024
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
NO_BODY = ("GET", "HEAD")
RISKS = ("low", "medium", "high")  # the one risk catalogue: gates, guesses, annotations, contracts
WRITE_RISKS = ("medium", "high")  # an operation of these risks is a write for an agent
READ_METHODS = ("GET", "HEAD", "OPTIONS")
FLAT_KEYS = (
    "body",
    "query",
    "header",
    "cookie",
    "path",
    "optional",
    "integer",
    "number",
    "boolean",
    "list",
)
OPERATION_KEYS = (
    "method",
    "url",
    "schema",
    "identity",
    "fixed",
    "headers",
    "content_type",
    "style",
    "body_arg",
    "sent_as",
    "files",
    "paging",
    "credential",
    *FLAT_KEYS,
)
# a security scheme's name, as skill.json's `auth.others` lists it
SCHEME_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
JSON_BODY = "application/json"
FORM_BODY = "application/x-www-form-urlencoded"
MULTIPART_BODY = "multipart/form-data"
MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
# a file a call sends (a multipart part, or a whole raw body): a local file the runtime reads
# (under the folder the caller allows, size-capped) or the content itself, base64-encoded
FILE_ARGUMENT: dict[str, Any] = {
    "type": "object",
    "description": "A file: `path` (a file under the folder the caller allows) or `content_base64`;"
    " `filename` and `content_type` when they should differ from the file's own",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "content_base64": {"type": "string", "contentEncoding": "base64"},
        "filename": {"type": "string", "minLength": 1},
        "content_type": {"type": "string", "minLength": 3},
    },
    "minProperties": 1,
    "additionalProperties": False,
}
# how a list or object argument is written into the query or a form body (OpenAPI style/explode,
# Swagger 2.0 collectionFormat): form = repeated or exploded (the default), csv/ssv/tsv/pipes = one
# value joined by , space tab |, deepObject = name[key]=value (and name[0]=value for lists),
# json = the value as compact JSON under its name (a parameter declared with JSON `content`)
STYLES = ("form", "csv", "ssv", "tsv", "pipes", "deepObject", "json")
# how a path parameter is written in its segment (OpenAPI's path styles): simple = the value (a
# list joined by commas, the default), label = `.value` (`.a,b`; exploded `.a.b`), matrix =
# `;name=value` (`;name=a,b`; exploded `;name=a;name=b`)
PATH_STYLES = ("simple", "label", "label_explode", "matrix", "matrix_explode")
APPROVAL_KEYS = ("matches", "risk", "binds", "amount", "currency", "auto_below", "auto_currency")
# headers only the runtime writes: never fixed in a file, never a model's argument
RUNTIME_HEADERS = (
    "authorization",
    "cookie",
    "host",
    "content-type",
    "content-length",
    "idempotency-key",
    "transfer-encoding",
    "connection",
)
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
# what a header's value may be (RFC 9110: visible characters, spaces and tabs, obs-text)
HEADER_VALUE_PATTERN = r"^[\t\x20-\x7e\x80-\xff]*$"
HEADER_TEXT = re.compile(HEADER_VALUE_PATTERN)
# what an operation file's frontmatter may hold; anything else is refused (a misspelled `aproval:`
# would leave the operation ungated)
FILE_KEYS = ("operation", "identity", "approval")
# the one reading of a path template: `{name}` within a segment (an empty name is caught as an error)
PATH_TEMPLATE = re.compile(r"\{([^{}/]*)\}")
# what a field (argument) name may be: no spaces, braces, slashes or control characters
# (nor a zero-width or bidirectional control: a name that reads as another)
FIELD_NAME = re.compile(
    r"^[^\s{}/\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]{1,200}$"
)
_FRONTMATTER_LIMITS = LoadLimits(
    max_bytes=MAX_OPERATION_FILE_BYTES, max_yaml_aliases=100, max_expanded_nodes=100_000
)


class DeclarationError(ValueError, Permanent):
    """An operation file that cannot be published; the message names the file and the field."""

    problem = "package-invalid"

    def __init__(self, file: str, where: str, problem: str) -> None:
        self.file = file
        self.where = where
        self.problem = problem
        super().__init__(f"{file}: {where}: {problem}" if where else f"{file}: {problem}")


@dataclass(frozen=True)
class OperationFile:
    """One `.md` file of a package: its frontmatter mapping and its prose."""

    file: str
    frontmatter: dict[str, Any]
    prose: str

    @property
    def name(self) -> str:
        return self.file.rsplit("/", 1)[-1].removesuffix(".md")

    def description(self) -> str:
        """The first paragraph of prose that is not a heading: what the operation is."""
        for para in self.prose.split("\n\n"):
            para = para.strip()
            if para and not para.startswith("#"):
                return " ".join(para.split())
        return self.name


@dataclass(frozen=True)
class Approval:
    """A gate: the request it matches, its risk, and the fields of the call it binds."""

    method: str
    path: str
    risk: str
    binds: tuple[str, ...]
    amount: str | None = None
    currency: str | None = None
    auto_below: float | None = None
    auto_currency: str | None = None  # the currency `auto_below` is in

    @property
    def matches(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Declaration:
    """An operation as a tool: how a call's arguments become one HTTP request."""

    file: str
    name: str
    method: str
    url: str
    path_params: tuple[str, ...]
    query: tuple[str, ...]
    body: tuple[str, ...]
    schema: dict[str, Any]
    identity: tuple[str, ...] = ()
    approval: Approval | None = None
    description: str = ""
    form: str = "schema"
    fixed: tuple[tuple[str, Any], ...] = ()  # (argument, value): sent on every call, never offered
    headers: tuple[tuple[str, str], ...] = ()  # sent on every call
    content_type: str = JSON_BODY  # a JSON media type, or FORM_BODY
    styles: tuple[tuple[str, str], ...] = ()  # (argument, style) where it is not "form"
    # the argument whose value is the whole body (a form: its fields)
    body_arg: str | None = None
    # (query or header argument, the name the API reads) where they differ
    sent_as: tuple[tuple[str, str], ...] = ()
    header: tuple[str, ...] = ()  # arguments sent as request headers
    cookie: tuple[str, ...] = ()  # arguments sent as cookies (`name=value` in the Cookie header)
    files: tuple[str, ...] = ()  # arguments whose value is a file (FILE_ARGUMENT)
    paging: Paging | None = None  # how a read's result says where its next page is
    # the security scheme whose credential this operation is sent (one skill.json's
    # `auth.others` names), where the spec gives it none the skill's first credential serves
    credential: str | None = None

    def style_of(self, name: str) -> str:
        return dict(self.styles).get(name, "form")

    def wire_name(self, name: str) -> str:
        return dict(self.sent_as).get(name, name)

    @property
    def media(self) -> str:
        return self.content_type.split(";", 1)[0].strip().lower()

    @property
    def is_form(self) -> bool:
        return self.media == FORM_BODY

    @property
    def is_multipart(self) -> bool:
        return self.media == MULTIPART_BODY

    @property
    def is_json(self) -> bool:
        return self.media == JSON_BODY or self.media.endswith("+json")

    @property
    def sent(self) -> tuple[str, ...]:
        return self.path_params + self.query + self.header + self.cookie + self.body

    @property
    def fixed_values(self) -> dict[str, Any]:
        return dict(self.fixed)

    @property
    def required(self) -> tuple[str, ...]:
        req = self.schema.get("required")
        return tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()

    @property
    def url_path(self) -> str:
        return urlsplit(self.url).path or "/"

    @property
    def origin(self) -> str:
        """`host[:port]` the request goes to; empty for a path-only URL (no host declared)."""
        return urlsplit(self.url).netloc.lower()


def path_template_names(path: str) -> list[str]:
    """The parameter names a path template holds, in order, once each."""
    return [n for n in dict.fromkeys(PATH_TEMPLATE.findall(path)) if n]


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


def _names(file: str, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise DeclarationError(
            file, where, f"must be a list of field names, not {type(value).__name__}"
        )
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not FIELD_NAME.match(item):
            raise DeclarationError(file, where, f"{item!r} is not a field name")
        if item in out:
            raise DeclarationError(file, where, f"names {item!r} twice")
        out.append(item)
    return tuple(out)


def _url(file: str, op: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    # size: every way a declaration's URL can be wrong, each named
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
    params: list[str] = []
    for segment in parts.path.split("/"):
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
    return url, tuple(params)


class _Sent(NamedTuple):
    """The arguments' schema and where each argument goes (the rest of the path's own)."""

    schema: dict[str, Any]
    query: tuple[str, ...]
    header: tuple[str, ...]
    cookie: tuple[str, ...]
    body: tuple[str, ...]


def _schema_form(
    file: str, op: dict[str, Any], method: str, path_params: tuple[str, ...], fixed: dict[str, Any]
) -> _Sent:
    # size: the schema form's keys, each checked where it is read
    raw = op["schema"]
    if isinstance(raw, str):
        try:
            schema = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DeclarationError(
                file, "operation.schema", f"is not valid JSON ({exc.msg} at line {exc.lineno})"
            ) from None
    else:
        schema = raw
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise DeclarationError(
            file,
            "operation.schema",
            'must be one JSON Schema object: {"type": "object", "properties": {...}}',
        )
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(isinstance(k, str) for k in props):
        raise DeclarationError(
            file, "operation.schema", "properties must be a mapping of field names to schemas"
        )
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise DeclarationError(file, "operation.schema", "required must be a list of field names")
    for name in required:
        if name not in props:
            raise DeclarationError(
                file, "operation.schema", f"required names {name!r}, which is not in properties"
            )
    for name in fixed:
        if name in props:
            raise DeclarationError(
                file,
                "operation.fixed",
                f"{name!r} is fixed, so it cannot also be an argument in schema.properties",
            )
    for name in path_params:
        if name in fixed:
            continue
        if name not in props:
            raise DeclarationError(
                file,
                "operation.schema",
                f"path parameter {{{name}}} of the URL is not in properties",
            )
        if name not in required:
            raise DeclarationError(
                file, "operation.schema", f"path parameter {name!r} must be required"
            )
        sub = props[name]
        items = sub.get("items") if isinstance(sub, dict) else None
        scalar_items = isinstance(items, dict) and (
            items.get("type") in ("string", "integer", "number", "boolean") or "$ref" in items
        )
        if isinstance(sub, dict) and (
            sub.get("type") == "object" or (sub.get("type") == "array" and not scalar_items)
        ):
            raise DeclarationError(
                file,
                "operation.schema",
                f"path parameter {name!r} must be a string, number or boolean (or a list of them)",
            )
    query = _names(file, "operation.query", op.get("query"))
    for name in query:
        if name in path_params:
            raise DeclarationError(
                file, "operation.query", f"{name!r} is a path parameter of the URL"
            )
        if name not in props and name not in fixed:
            raise DeclarationError(
                file,
                "operation.query",
                f"names {name!r}, which is not sent: it is not in schema.properties",
            )
    header = _names(file, "operation.header", op.get("header"))
    for name in header:
        if name in path_params or name in query:
            where = "a path parameter of the URL" if name in path_params else "also in `query`"
            raise DeclarationError(file, "operation.header", f"{name!r} is {where}")
        if name not in props and name not in fixed:
            raise DeclarationError(
                file,
                "operation.header",
                f"names {name!r}, which is not sent: it is not in schema.properties",
            )
    cookie = _names(file, "operation.cookie", op.get("cookie"))
    for name in cookie:
        if name in path_params or name in query or name in header:
            where = "a path parameter of the URL" if name in path_params else "also elsewhere"
            raise DeclarationError(file, "operation.cookie", f"{name!r} is {where}")
        if name not in props and name not in fixed:
            raise DeclarationError(
                file,
                "operation.cookie",
                f"names {name!r}, which is not sent: it is not in schema.properties",
            )
    outside = (*path_params, *query, *header, *cookie)
    body = tuple(n for n in [*props, *fixed] if n not in outside)
    if method in NO_BODY and body:
        raise DeclarationError(
            file,
            "operation.schema",
            f"a {method} has no body, but {', '.join(map(repr, body))} would be sent as one; list them in `query`",
        )
    return _Sent(schema, query, header, cookie, body)


def _flat_form(
    file: str, op: dict[str, Any], method: str, path_params: tuple[str, ...], fixed: dict[str, Any]
) -> _Sent:
    # size: the flat form's lists, each checked where it is read
    lists = {key: _names(file, f"operation.{key}", op.get(key)) for key in FLAT_KEYS}
    for name in lists["path"]:
        if name not in path_params:
            raise DeclarationError(
                file,
                "operation.path",
                f"path parameter {name!r} is not in the URL; write it as a segment, /{{{name}}}",
            )
    body, query, header = lists["body"], lists["query"], lists["header"]
    cookie = lists["cookie"]
    if method in NO_BODY and body:
        raise DeclarationError(
            file,
            "operation.body",
            f"a {method} has no body; list {', '.join(map(repr, body))} in `query`",
        )
    for key, names, others in (
        ("query", query, body),
        ("header", header, (*body, *query)),
        ("cookie", cookie, (*body, *query, *header)),
    ):
        for name in names:
            if name in others:
                also = "body" if name in body else "query" if name in query else "header"
                raise DeclarationError(
                    file,
                    f"operation.{key}",
                    f"{name!r} is also in `{also}`; a name lives in one place",
                )
    for name in (*body, *query, *header, *cookie):
        if name in path_params:
            where = (
                "operation.body"
                if name in body
                else "operation.query"
                if name in query
                else "operation.header"
                if name in header
                else "operation.cookie"
            )
            raise DeclarationError(file, where, f"{name!r} is a path parameter of the URL")
    sent = set(path_params) | set(body) | set(query) | set(header) | set(cookie)
    for key in ("optional", "integer", "number", "boolean", "list"):
        for name in lists[key]:
            if name not in sent:
                raise DeclarationError(
                    file,
                    f"operation.{key}",
                    f"names {name!r}, which is not sent (not in the URL, `body`, `query`, `header` or `cookie`)",
                )
    for name in lists["optional"]:
        if name in path_params:
            raise DeclarationError(
                file, "operation.optional", f"path parameter {name!r} is always required"
            )
    for key in ("integer", "number", "boolean", "list"):
        for name in lists[key]:
            if name in path_params:
                raise DeclarationError(
                    file, f"operation.{key}", f"path parameter {name!r} is always a string"
                )
    typed = [(k, n) for k in ("integer", "number", "boolean") for n in lists[k]]
    seen: dict[str, str] = {}
    for key, name in typed:
        if name in seen:
            raise DeclarationError(
                file, f"operation.{key}", f"{name!r} is already typed {seen[name]}"
            )
        seen[name] = key
    for name in fixed:
        if name not in sent:
            raise DeclarationError(
                file,
                "operation.fixed",
                f"names {name!r}, which is not sent (not in the URL, `body`, `query`, `header` or `cookie`)",
            )
    props: dict[str, Any] = {}
    for name in (*path_params, *query, *header, *cookie, *body):
        if name in fixed:
            continue
        sub: dict[str, Any] = {"type": seen.get(name, "string")}
        if name in lists["list"]:
            sub = {"type": "array", "items": sub}
        props[name] = sub
    required = [n for n in props if n not in lists["optional"]]
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return _Sent(schema, query, header, cookie, body)


def _fixed(file: str, op: dict[str, Any]) -> dict[str, Any]:
    raw = op.get("fixed", {})
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and FIELD_NAME.match(k) for k in raw
    ):
        raise DeclarationError(
            file, "operation.fixed", "must map argument names to the values sent on every call"
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


def _approval(
    file: str,
    raw: Any,
    method: str,
    url_path: str,
    path_params: tuple[str, ...],
    body: tuple[str, ...],
    sent: tuple[str, ...],
) -> Approval:
    # size: the gate's keys, each checked where it is read
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
    if not sent:
        raise DeclarationError(
            file,
            "approval",
            "this operation sends no argument, so a gate has nothing to bind",
        )
    # what a gate binds by default: every argument the call sends (a grant covers exactly the
    # call a person saw: `cascade=true` added to an approved DELETE is another call)
    binds = _names(file, "approval.binds", raw.get("binds")) or sent
    for name in binds:
        if name not in sent:
            raise DeclarationError(
                file, "approval.binds", f"names {name!r}, which this operation does not send"
            )
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
        if currency is not None and auto_currency is None:
            raise DeclarationError(
                file,
                "approval.auto_currency",
                f"the gate reads the currency from {currency!r}: say which currency auto_below"
                " is in (like EUR), or no call is ever approved automatically",
            )
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


def path_matches(pattern: str, url_path: str) -> bool:
    """A gate's path matches the URL's path, or the URL's path ends with it on a segment boundary
    (the URL may carry the server's base path, which a person writing `matches` leaves out)."""
    want = [s for s in pattern.split("/") if s]
    have = [s for s in url_path.split("/") if s]
    if not pattern.startswith("/") or len(want) > len(have):
        return False
    return have[len(have) - len(want) :] == want


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


PAGING_KEYS = ("kind", "param", "field", "items", "size", "more", "key", "page", "page_size")


def _paging(file: str, raw: Any, method: str, query: tuple[str, ...]) -> Paging | None:
    """`paging:`, checked: a known kind, arguments the operation sends in its query, and paths
    of names in the answer."""
    if raw is None:
        return None
    where = "operation.paging"
    if not isinstance(raw, dict):
        raise DeclarationError(file, where, "must be a mapping with `kind` and its fields")
    unknown = unknown_keys(raw, PAGING_KEYS)
    if unknown:
        raise DeclarationError(file, where, unknown)
    if method != "GET":
        raise DeclarationError(
            file, where, "only a GET pages: another method's next call is a write"
        )
    kind = raw.get("kind")
    if kind not in PAGING_KINDS:
        raise DeclarationError(
            file, f"{where}.kind", f"{kind!r} is not one of {', '.join(PAGING_KINDS)}"
        )
    needs = {
        "after_last": ("param", "more", "items"),
        "cursor": ("param", "field"),
        "next_url": ("field",),
        "link": (),
        "offset": ("param", "items"),
        "page": ("param", "items"),
    }[kind]
    for key in needs:
        if raw.get(key) is None:
            raise DeclarationError(file, where, f"a {kind} paging needs `{key}`")
    if kind != "offset" and raw.get("page") is not None:
        raise DeclarationError(file, f"{where}.page", "only an offset paging also counts pages")
    for key in ("param", "size", "page", "page_size"):
        value = raw.get(key)
        if value is not None and value not in query:
            raise DeclarationError(
                file, f"{where}.{key}", f"names {value!r}, which is not a query argument"
            )

    def path(key: str, empty: bool) -> tuple[str, ...] | None:
        value = raw.get(key)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or (not value and not empty)
            or len(value) > 8
            or not all(isinstance(v, str) and 0 < len(v) <= 200 for v in value)
        ):
            raise DeclarationError(
                file, f"{where}.{key}", "must be a list of field names (the path in the answer)"
            )
        return tuple(value)

    key = raw.get("key", "id")
    if not isinstance(key, str) or not key:
        raise DeclarationError(file, f"{where}.key", f"{key!r} is not a field name")
    return Paging(
        kind,
        raw.get("param"),
        path("field", False) or (),
        path("items", True),
        raw.get("size"),
        path("more", False) or (),
        key,
        raw.get("page"),
        raw.get("page_size"),
    )


def _is_file_schema(sub: Any) -> bool:
    props = sub.get("properties") if isinstance(sub, dict) else None
    return isinstance(props, dict) and "content_base64" in props and "path" in props


def _files(
    file: str, raw: dict[str, Any], schema: dict[str, Any], body: tuple[str, ...], content: Any
) -> tuple[str, ...]:
    """The arguments whose value is a file: multipart parts, or a raw body, each a FILE_ARGUMENT
    (or a list of them, for a part sent once per file)."""
    names = _names(file, "operation.files", raw.get("files"))
    media = str(content).split(";", 1)[0].strip().lower()
    props = schema.get("properties") or {}
    for name in names:
        if name not in body or name not in props:
            raise DeclarationError(
                file, "operation.files", f"names {name!r}, which is not sent in the body"
            )
        if media in (JSON_BODY, FORM_BODY) or media.endswith("+json"):
            raise DeclarationError(
                file,
                "operation.files",
                f"a {media} body carries no file: send it as {MULTIPART_BODY} or as a raw body",
            )
        sub = props[name]
        items = sub.get("items") if isinstance(sub, dict) and sub.get("type") == "array" else None
        if not (_is_file_schema(sub) or _is_file_schema(items)):
            raise DeclarationError(
                file,
                "operation.files",
                f"{name!r} is a file, so its schema is a file's: path or content_base64",
            )
    return names


def _sent_as(
    file: str, raw: dict[str, Any], query: tuple[str, ...], header: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    """Arguments the API reads under another name (a query parameter named like a path
    parameter, a header or a part whose name no argument can have)."""
    given = raw.get("sent_as", {})
    if not isinstance(given, dict):
        raise DeclarationError(
            file, "operation.sent_as", "must map query arguments to the names sent"
        )
    for arg, name in given.items():
        if arg not in query and arg not in header:
            raise DeclarationError(
                file,
                "operation.sent_as",
                f"names {arg!r}, which is not a query, header, cookie or body argument",
            )
        if (
            not isinstance(name, str)
            or not name
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name)
        ):
            raise DeclarationError(file, "operation.sent_as", f"{name!r} is not a parameter name")
    return tuple(sorted(given.items()))


def _styles(
    file: str,
    raw: dict[str, Any],
    media: str,
    query: tuple[str, ...],
    body: tuple[str, ...],
    path_params: tuple[str, ...],
) -> tuple[tuple[str, str], ...]:
    """`style:`, checked: a path parameter's one of PATH_STYLES, a query parameter's or a form
    field's one of STYLES."""
    body_arg_given = raw.get("body_arg") is not None  # a form body's fields are inside it
    styles = raw.get("style", {})
    if not isinstance(styles, dict):
        raise DeclarationError(file, "operation.style", "must map argument names to styles")
    for name, style in styles.items():
        if name in path_params and (style in PATH_STYLES or media != FORM_BODY):
            if style not in PATH_STYLES:
                raise DeclarationError(
                    file,
                    "operation.style",
                    f"{name!r} is a path parameter: its style is one of {', '.join(PATH_STYLES)},"
                    f" not {style!r}",
                )
            continue
        if style not in STYLES:
            raise DeclarationError(
                file, "operation.style", f"{style!r} is not one of {', '.join(STYLES)}"
            )
        in_form = media == FORM_BODY and (name in body or body_arg_given)
        if name not in query and not in_form:
            raise DeclarationError(
                file,
                "operation.style",
                f"names {name!r}, which is not a query parameter or a form body field",
            )
    return tuple(sorted(styles.items()))


def _encoding(
    file: str,
    raw: dict[str, Any],
    schema: dict[str, Any],
    query: tuple[str, ...],
    body: tuple[str, ...],
    path_params: tuple[str, ...] = (),
) -> tuple[str, tuple[tuple[str, str], ...], str | None]:
    """How the request is written: the body's media type, the styles, the whole-body argument."""
    content_type = raw.get("content_type", JSON_BODY)
    media = content_type.split(";", 1)[0].strip().lower() if isinstance(content_type, str) else ""
    structured = media in (JSON_BODY, FORM_BODY, MULTIPART_BODY) or media.endswith("+json")
    if not structured and not (MEDIA_TYPE.match(media) and raw.get("body_arg") is not None):
        raise DeclarationError(
            file,
            "operation.content_type",
            f"{content_type!r} is not one skillpress writes: {JSON_BODY}, a */*+json type,"
            f" {FORM_BODY}, {MULTIPART_BODY}, or any other media type as one whole-body argument"
            " (`body_arg`)",
        )
    if media == MULTIPART_BODY and raw.get("body_arg") is not None:
        raise DeclarationError(
            file, "operation.body_arg", "a multipart body's fields are arguments, not one argument"
        )
    styles = _styles(file, raw, media, query, body, path_params)
    body_arg = raw.get("body_arg")
    if body_arg is not None:
        if not isinstance(body_arg, str) or body_arg not in schema.get("properties", {}):
            raise DeclarationError(
                file, "operation.body_arg", f"{body_arg!r} is not an argument in schema.properties"
            )
        if body != (body_arg,):
            others = ", ".join(repr(b) for b in body if b != body_arg) or "nothing"
            raise DeclarationError(
                file,
                "operation.body_arg",
                f"the body is {body_arg!r} whole, so every other argument must be a path or query"
                f" parameter; {others} would be sent in the body too",
            )
        sub = schema.get("properties", {}).get(body_arg)
        if media == FORM_BODY and not (isinstance(sub, dict) and sub.get("type") == "object"):
            raise DeclarationError(
                file, "operation.body_arg", "a form body's argument is an object of its fields"
            )
    return content_type, styles, body_arg


def parse_operation_file(file: str, text: str) -> tuple[OperationFile, Declaration | None]:
    """Split and parse one operation file; raises DeclarationError naming the file and field."""
    op_file = split_frontmatter(file, text)
    return op_file, parse_declaration(op_file)


# The writer, beside the reader: what `derive` declares is what `parse_operation_file` reads.

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def _y(value: str) -> str:
    """A YAML scalar: plain where that is unambiguous, JSON-quoted otherwise."""
    if _PLAIN.match(value) and value.lower() not in (
        "true",
        "false",
        "null",
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "~",
    ):
        return value
    return json.dumps(value, ensure_ascii=False)


def declaration_block(op: Operation, url: str) -> str:
    """The `---` frontmatter: the operation block (for a tool), then identity and approval where set."""
    lines = ["---"]
    if op.tool is not None:
        lines += [
            "operation:",
            f"  method: {op.method}",
            f"  url: {json.dumps(url, ensure_ascii=False)}",
        ]
        if op.tool.query:
            lines.append("  query: [" + ", ".join(_y(q) for q in op.tool.query) + "]")
        if op.tool.header:
            lines.append("  header: [" + ", ".join(_y(h) for h in op.tool.header) + "]")
        if op.tool.cookie:
            lines.append("  cookie: [" + ", ".join(_y(c) for c in op.tool.cookie) + "]")
        if op.tool.fixed:
            lines.append(
                "  fixed: " + json.dumps(op.tool.fixed, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.headers:
            lines.append(
                "  headers: " + json.dumps(op.tool.headers, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.content_type != JSON_BODY:
            lines.append(f"  content_type: {json.dumps(op.tool.content_type)}")
        if op.tool.styles:
            lines.append(
                "  style: " + json.dumps(op.tool.styles, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.body_arg:
            lines.append(f"  body_arg: {_y(op.tool.body_arg)}")
        if op.tool.sent_as:
            lines.append(
                "  sent_as: " + json.dumps(op.tool.sent_as, ensure_ascii=False, sort_keys=True)
            )
        if op.tool.files:
            lines.append("  files: [" + ", ".join(_y(f) for f in op.tool.files) + "]")
        if op.credential:
            lines.append(f"  credential: {json.dumps(op.credential)}")
        paging = op.tool_paging()
        if paging is not None:
            lines.append("  paging: " + json.dumps(paging.to_dict(), ensure_ascii=False))
        pretty = readable_json(op.tool.schema, max_lines=300)
        if pretty is None:
            pretty = json.dumps(op.tool.schema, separators=(",", ":"), ensure_ascii=False)
        lines.append("  schema: |")
        lines.extend("    " + ln for ln in pretty.split("\n"))
        if op.additions.identity:
            lines.append("identity: " + json.dumps(op.additions.identity, ensure_ascii=False))
    if op.additions.approval is not None:
        lines.append("approval: " + json.dumps(op.additions.approval, ensure_ascii=False))
    if len(lines) == 1:
        return ""
    lines.append("---")
    return "\n".join(lines) + "\n"
