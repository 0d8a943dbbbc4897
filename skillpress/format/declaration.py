"""An operation file's declaration, as the package format defines it: what its frontmatter may
hold (the keys, methods, risks, styles and names it accepts), the typed declaration a reader
returns (`Declaration`, its `Approval`), and the one error a declaration is refused with,
naming the file and the field."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from skillpress.errors import Permanent
from skillpress.format.load import LoadLimits
from skillpress.format.paging import Paging

__all__ = [
    "APPROVAL_KEYS",
    "FILE_ARGUMENT",
    "FILE_KEYS",
    "FLAT_KEYS",
    "FORM_BODY",
    "HEADER_NAME",
    "JSON_BODY",
    "METHODS",
    "MULTIPART_BODY",
    "OPERATION_KEYS",
    "PATH_STYLES",
    "PATH_TEMPLATE",
    "READ_METHODS",
    "RISKS",
    "RUNTIME_HEADERS",
    "STYLES",
    "TEMPLATE",
    "WRITE_RISKS",
    "Approval",
    "Declaration",
    "DeclarationError",
    "OperationFile",
    "path_matches",
    "path_template_names",
    "templated",
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
# one parameter of a media type (RFC 9110: a token, `=`, a token or a quoted string)
MEDIA_PARAM = re.compile(r'[A-Za-z0-9!#$&^_.+-]+=(?:[A-Za-z0-9!#$&^_.+-]+|"[^"\\\r\n]*")')
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
# a workflow's template (`{{room_id}}`, `{{booking.id}}`): written anywhere else in a package (a
# fixed value, a parameter's default) it would be sent as written
TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}")
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


def templated(value: Any, has_template: Callable[[str], Any] = TEMPLATE.search) -> bool:
    """Whether `value` holds a template anywhere (`has_template(text)` decides for a string:
    a workflow's `{{name}}` unless another reading is given, Arazzo's `$inputs.x`)."""
    if isinstance(value, str):
        return bool(has_template(value))
    if isinstance(value, dict):
        return any(templated(v, has_template) for v in value.values())
    if isinstance(value, list):
        return any(templated(v, has_template) for v in value)
    return False


def path_template_names(path: str) -> list[str]:
    """The parameter names a path template holds, in order, once each."""
    return [n for n in dict.fromkeys(PATH_TEMPLATE.findall(path)) if n]


def path_matches(pattern: str, url_path: str) -> bool:
    """A gate's path matches the URL's path, or the URL's path ends with it on a segment boundary
    (the URL may carry the server's base path, which a person writing `matches` leaves out)."""
    want = [s for s in pattern.split("/") if s]
    have = [s for s in url_path.split("/") if s]
    if not pattern.startswith("/") or len(want) > len(have):
        return False
    return have[len(have) - len(want) :] == want
