"""The types a package loaded for calling is made of: a skill (its operations, hosts and
credential), a tool (its declaration, its schema in every provider's shape), the credential
header, and the refusals a package meets."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator

from skillpress.errors import NotFound, Permanent
from skillpress.format.declaration import HEADER_NAME, Declaration
from skillpress.format.provider_names import original_names, provider_names
from skillpress.runtime.package.profiles import adapt
from skillpress.runtime.package.search_words import action_phrase

__all__ = [
    "AuthHeader",
    "CONFIRMATION",
    "OperationEntry",
    "PLACES",
    "PROVIDERS",
    "PackageError",
    "Skill",
    "Tool",
    "UnknownOperation",
    "shaped_tool",
    "with_confirmation",
]


PROVIDERS = ("anthropic", "openai", "mcp", "openai-strict", "gemini")


PLACES = ("header", "query", "cookie")  # where a credential goes


class PackageError(ValueError, Permanent):
    """A package that cannot be loaded; the message names the file and what is wrong."""

    problem = "package-invalid"


class UnknownOperation(LookupError, NotFound):
    """A tool or operation name the skill does not have; the message offers the close ones."""

    problem = "unknown-operation"


@dataclass(frozen=True)
class AuthHeader:
    """The header an API reads its credential from, and how the value is written into it."""

    header: str
    kind: str = "apiKey"  # apiKey (value as is) | bearer | basic
    token_url: str | None = None  # bearer only: where a client-credentials token is fetched
    scopes: tuple[str, ...] = ()
    env: str | None = None  # the variable the credential is read from, when not <SLUG>_API_KEY
    # where it goes: a header, or (an apiKey) the query or a cookie, `header` naming it there
    where: str = "header"
    # sent beside it (an AND requirement's other schemes, a header parameter that carries a
    # credential), each from its own variable
    also: tuple[AuthHeader, ...] = ()

    def __post_init__(self) -> None:
        # a name that is no header (`X-Key"><script>`) is refused where it is declared (derive,
        # import, publish, a package's load), never first when a call is sent
        if not isinstance(self.header, str) or not HEADER_NAME.match(self.header):
            raise PackageError(
                f"the credential header {self.header!r} is not a header name (letters, digits"
                " and !#$%&'*+.^_`|~-)"
            )
        if self.where not in PLACES or (self.where != "header" and self.kind != "apiKey"):
            raise PackageError(
                f"the credential {self.header!r} goes in {self.where!r}: a header, or an apiKey's"
                " query or cookie"
            )

    @property
    def slots(self) -> tuple[AuthHeader, ...]:
        """Every credential a call carries: this one, then those sent beside it."""
        return (self, *self.also)


@dataclass(frozen=True)
class Tool:
    """One declared operation offered to a model: a name, a description, a standalone schema."""

    name: str
    operation: str
    declaration: Declaration
    schema: dict[str, Any]
    # the skill's tool contract (an Agent Skills folder's tools.json) requires the user's
    # confirmation of every call: `user_confirmed` true, and absent is refused like false
    confirm: bool = False
    # the credential this tool is sent instead of the skill's first (its operation names a
    # scheme skill.json's `auth.others` lists: Figma's PersonalAccessToken beside OAuth 2)
    auth: AuthHeader | None = None

    @cached_property
    def description(self) -> str:
        """What the operation is (its file's first paragraph), then its request line: no two
        tools share one, and a search finds a tool by its path's nouns (101 of GitHub's tools
        shared a description with another; Graph's "Get the number of the resource." 1,483
        times)."""
        said = self.declaration.description
        path = urlsplit(self.declaration.url).path or self.declaration.url
        line = f"{self.declaration.method} {path[:120]}"
        if line in said:
            return said
        # what it does in a person's words, which a spec's summary often does not say (Graph's
        # "Get open extension." for GET /me/messages: "list my messages")
        phrase = action_phrase(self.declaration.method, path)
        if phrase:
            line = f"{phrase}: {line}"
        return f"{said} ({line})".lstrip()

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The schema a model is offered: the operation's, and `user_confirmed` (required) when
        the contract asks for confirmation."""
        return with_confirmation(self.schema, "operation") if self.confirm else self.schema

    @cached_property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    @cached_property
    def offered_schema(self) -> dict[str, Any]:
        """The input schema as every provider takes it: property names a provider refuses
        renamed (`provider_names`), read back by `from_model`."""
        return provider_names(self.input_schema)[0]

    def from_model(self, args: Any) -> Any:
        """A model's arguments under the names the API reads (a provider shape renames a
        property whose name the provider refuses, `provider_names`)."""
        return original_names(self.input_schema, args) if isinstance(args, dict) else args

    def adapted(self, provider: str) -> tuple[dict[str, Any], list[str]]:
        """The tool in `provider`'s shape, its schema adapted to what that provider accepts, and what changed."""
        return shaped_tool(self.name, self.description, self.input_schema, provider)


CONFIRMATION = "user_confirmed"


def with_confirmation(schema: dict[str, Any], what: str) -> dict[str, Any]:
    """`schema` with the `user_confirmed` argument a write's contract requires (boolean, true)."""
    out: dict[str, Any] = json.loads(json.dumps(schema))
    out.setdefault("properties", {})[CONFIRMATION] = {
        "type": "boolean",
        "const": True,
        "description": f"Must be true. Set only after the user explicitly confirmed this exact {what}.",
    }
    out["required"] = [*(r for r in out.get("required", []) if r != CONFIRMATION), CONFIRMATION]
    return out


def shaped_tool(
    name: str, description: str, schema: dict[str, Any], provider: str
) -> tuple[dict[str, Any], list[str]]:
    """A tool (an operation's, or a workflow's) in `provider`'s shape, its schema adapted to what
    that provider accepts, and what changed."""
    if provider not in PROVIDERS:
        raise PackageError(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}")
    named, renamed = provider_names(schema)
    adapted, notes = adapt(named, provider)
    notes = renamed + notes
    if provider == "anthropic":
        return {"name": name, "description": description, "input_schema": adapted}, notes
    if provider in ("openai", "openai-strict"):
        fn: dict[str, Any] = {"name": name, "description": description, "parameters": adapted}
        if provider == "openai-strict":
            fn["strict"] = True
        return {"type": "function", "function": fn}, notes
    if provider == "gemini":
        return {"name": name, "description": description, "parameters": adapted}, notes
    return {"name": name, "description": description, "inputSchema": adapted}, notes


@dataclass(frozen=True)
class OperationEntry:
    """A manifest entry, tool or not: what `/help` lists."""

    name: str
    method: str
    path: str
    tool: str | None
    not_tool_reason: str | None
    file: str = ""


@dataclass(frozen=True)
class Skill:
    """A loaded skill. Its tools are built when first asked for: one call parses one operation's
    file (`tool`), while `tools` (the publish check, a full listing) builds them all."""

    slug: str
    title: str
    hosts: frozenset[str]
    auth: AuthHeader | None
    build: Callable[[OperationEntry], Tool] = field(repr=False, compare=False)
    # every entry, read when first asked for; `lookup` finds one by name or tool name without
    # reading the others (a derived package's index)
    listing: Callable[[], tuple[OperationEntry, ...]] = field(repr=False, compare=False)
    lookup: Callable[[str], OperationEntry | None] | None = field(
        default=None, repr=False, compare=False
    )
    # the tools (and workflow tools) its contract requires the user's confirmation of
    confirms: frozenset[str] = frozenset()

    @cached_property
    def operations(self) -> tuple[OperationEntry, ...]:
        return self.listing()

    @cached_property
    def _entries(self) -> dict[str, OperationEntry]:
        index = {e.name: e for e in self.operations if e.tool}
        index.update({e.tool: e for e in self.operations if e.tool})
        return index

    @cached_property
    def _built(self) -> dict[str, Tool]:
        return {}

    @property
    def tool_count(self) -> int:
        return sum(1 for e in self.operations if e.tool)

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._build(e) for e in self.operations if e.tool)

    def _build(self, entry: OperationEntry) -> Tool:
        built = self._built.get(entry.name)
        if built is None:
            built = self._built[entry.name] = self.build(entry)
        return built

    def has_tool(self, tool_name: str) -> bool:
        """Whether `tool_name` is one of its tools' own names (`hollowbrook_create_booking`)."""
        if self.lookup is not None and "_entries" not in self.__dict__:
            one = self.lookup(tool_name)
            return one is not None and one.tool == tool_name
        found = self._entries.get(tool_name)
        return found is not None and found.tool == tool_name

    def tool(self, name: str) -> Tool:
        """A tool by its tool name (`hollowbrook_create_booking`) or its manifest name (`create_booking`)."""
        if self.lookup is not None and "_entries" not in self.__dict__:
            one = self.lookup(name)
            if one is not None and one.tool:
                return self._build(one)
        found = self._entries.get(name)
        if found is not None:
            return self._build(found)
        entry = next((o for o in self.operations if o.name == name), None)
        if entry is not None:
            raise UnknownOperation(
                f"{name} is not a tool: {entry.not_tool_reason or 'it declares no operation block'};"
                f" skillpress cannot send it (its file, {name}.md, spells out the request for an HTTP client of your own)"
            )
        names = sorted(e.name for e in self.operations if e.tool)
        close = difflib.get_close_matches(
            name, names + [str(e.tool) for e in self.operations if e.tool], n=3
        )
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else f"; it has {len(names)} tools, listed in its manifest"
        )
        raise UnknownOperation(f"{self.slug} has no operation or tool named {name!r}{hint}")
