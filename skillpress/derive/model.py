"""The typed, resolved form of an API that the renderers work from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillpress.format.paging import Paging

__all__ = ["Param", "Body", "Response", "Operation", "ToolDecl", "Additions", "Webhook"]


@dataclass
class Param:
    name: str
    location: str  # path | query | header | cookie
    required: bool
    schema: Any  # translated JSON Schema
    description: str = ""
    deprecated: bool = False
    style: str = "form"  # how a list or object is written in the query (frontmatter.STYLES)
    long_description: str = ""  # the spec's whole text (`description` is its first paragraph)
    example: Any = None  # the spec's own example value, if it gives one


@dataclass
class Body:
    content_type: str | None  # the media type we would send; None if the spec names none
    is_json: bool
    schema: Any  # translated JSON Schema (top-level reference inlined), or None
    required: bool
    description: str = ""
    other_types: list[str] = field(default_factory=list)
    styles: dict[str, str] = field(
        default_factory=dict
    )  # a form body's field → style, where not "form"
    long_description: str = ""
    example: Any = None  # the spec's own example of a body, if it gives one
    # each top-level field's whole description as the spec words it (the schema's are shortened
    # to a first paragraph for the tool)
    field_docs: dict[str, str] = field(default_factory=dict)


@dataclass
class Response:
    status: str
    description: str
    shape: list[tuple[str, str]] | None  # (field, label) at one level, or None
    shape_note: str = ""  # "a list of Pet", "Pet", "text/plain" …
    long_description: str = ""


@dataclass
class ToolDecl:
    schema: dict[str, Any]  # with #/types references
    query: list[str]
    path_params: list[str]
    body_fields: list[str]
    fixed: dict[str, Any] = field(
        default_factory=dict
    )  # arguments the skill fixes: sent, never offered
    headers: dict[str, str] = field(default_factory=dict)  # headers the skill sends on every call
    content_type: str = "application/json"  # the body's media type (a JSON one, or a form)
    styles: dict[str, str] = field(default_factory=dict)  # argument → style, where not "form"
    body_arg: str | None = None  # the argument whose value is the whole body
    reduced: str | None = None  # what was left out of the schema to fit the tool budget
    sent_as: dict[str, str] = field(default_factory=dict)  # query argument → the name the API reads
    header: list[str] = field(default_factory=list)  # arguments sent as request headers
    cookie: list[str] = field(default_factory=list)  # arguments sent as cookies
    files: list[str] = field(default_factory=list)  # arguments whose value is a file


@dataclass
class Additions:
    """What people's annotations add to one operation (each kind changes exactly one thing)."""

    notes: list[str] = field(default_factory=list)
    prefer: str | None = None
    examples: list[dict[str, Any]] = field(default_factory=list)
    approval: dict[str, Any] | None = None
    identity: list[str] = field(default_factory=list)


@dataclass
class Operation:
    method: str  # upper case
    path: str
    operation_id: str | None
    summary: str
    description: str
    tags: list[str]
    deprecated: bool
    params: list[Param]
    body: Body | None
    responses: list[Response]
    security: list[dict[str, list[str]]] | None  # None: inherits the document's
    server_url: str | None  # resolved absolute server for this operation, or None
    extensions: dict[str, Any]
    name: str = ""
    tool_name: str | None = None
    tool: ToolDecl | None = None
    not_tool_reason: str | None = None
    category: str | None = None
    additions: Additions = field(default_factory=Additions)
    # query parameters and body fields that carry the credential
    credential_fields: tuple[str, ...] = ()
    # the security scheme this operation is sent the credential of, where none of its
    # requirements is the skill's first credential's (auth.others names it)
    credential: str | None = None
    # pairs the spec wrote into the path itself (`/?Action=List`): sent on every call
    literal_query: tuple[tuple[str, str], ...] = ()
    paging: Paging | None = None  # how a read pages, by the names the API reads
    # its own server (the operation's or path's) when that is a stand-in for a host of the
    # operator's other than the API's (`https://your-hrp-server.com`): no call can be sent
    stand_in_server: str | None = None

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def with_tool(self, tool: ToolDecl | None, reason: str | None) -> Operation:
        """This operation with its tool declaration, or the reason it has none (and no tool
        name then): `dataclasses.replace`'s copy made from its attributes (no field is
        computed at init), a quarter of the time, once per operation of a large API."""
        new = object.__new__(Operation)
        new.__dict__.update(self.__dict__)
        new.tool, new.not_tool_reason = tool, reason
        new.tool_name = self.tool_name if tool is not None else None
        return new

    def tool_paging(self) -> Paging | None:
        """Its paging by the names its tool's arguments have (None without a tool, or when an
        argument paging needs is not one of them)."""
        if self.paging is None or self.tool is None:
            return None
        args = {self.tool.sent_as.get(q, q): q for q in self.tool.query}
        return self.paging.renamed(args)


@dataclass
class Webhook:
    """A call the API makes to a URL of yours (OpenAPI 3.1 `webhooks`): an event, never a tool."""

    name: str  # the document's key
    file: str  # its file in the package (`event_<name>.md`)
    method: str
    summary: str
    description: str
    body: Body | None
