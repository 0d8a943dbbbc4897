"""A skill package loaded for calling: its declared operations as tools, its hosts, its credential header.

Loading is the publish-time check: every operation file is parsed by the same parser a person's
hand-written file goes through, and a package whose declarations disagree with themselves, with
`skill.json`, or with the hosts it declares is refused whole.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from services.derive.errors import SchemaTooLarge
from services.derive.expand import MAX_TOOL_SCHEMA_BYTES, expand_types, has_ref_keyword
from services.derive.frontmatter import (
    Declaration,
    DeclarationError,
    OperationFile,
    parse_operation_file,
)
from services.derive.manifest import Manifest, ManifestError
from services.derive.naming import slugify, tool_name
from services.derive.schema import refs_in

__all__ = [
    "AuthHeader",
    "PackageError",
    "PROVIDERS",
    "Skill",
    "Tool",
    "UnknownOperation",
    "load_skill",
    "package_tools",
]

PROVIDERS = ("anthropic", "openai", "mcp", "openai-strict", "gemini")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOT_OPERATIONS = ("body.md", "SKILL.md", "README.md")


class PackageError(ValueError):
    """A package that cannot be loaded; the message names the file and what is wrong."""


class UnknownOperation(LookupError):
    """A tool or operation name the skill does not have; the message offers the close ones."""


@dataclass(frozen=True)
class AuthHeader:
    """The header an API reads its credential from, and how the value is written into it."""

    header: str
    kind: str = "apiKey"  # apiKey (value as is) | bearer | basic


@dataclass(frozen=True)
class Tool:
    """One declared operation offered to a model: a name, a description, a standalone schema."""

    name: str
    operation: str
    declaration: Declaration
    schema: dict[str, Any]

    @property
    def description(self) -> str:
        return self.declaration.description

    @cached_property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    def adapted(self, provider: str) -> tuple[dict[str, Any], list[str]]:
        """The tool in `provider`'s shape, its schema adapted to what that provider accepts, and what changed."""
        from services.runtime.profiles import adapt

        if provider not in PROVIDERS:
            raise PackageError(
                f"unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}"
            )
        schema, notes = adapt(self.schema, provider)
        if provider == "anthropic":
            return {
                "name": self.name,
                "description": self.description,
                "input_schema": schema,
            }, notes
        if provider in ("openai", "openai-strict"):
            fn: dict[str, Any] = {
                "name": self.name,
                "description": self.description,
                "parameters": schema,
            }
            if provider == "openai-strict":
                fn["strict"] = True
            return {"type": "function", "function": fn}, notes
        if provider == "gemini":
            return {"name": self.name, "description": self.description, "parameters": schema}, notes
        return {"name": self.name, "description": self.description, "inputSchema": schema}, notes


@dataclass(frozen=True)
class OperationEntry:
    """A manifest entry, tool or not: what `/help` lists."""

    name: str
    method: str
    path: str
    summary: str
    tool: str | None
    not_tool_reason: str | None


@dataclass(frozen=True)
class Skill:
    slug: str
    title: str
    hosts: frozenset[str]
    tools: tuple[Tool, ...]
    operations: tuple[OperationEntry, ...]
    auth: AuthHeader | None

    @cached_property
    def _index(self) -> dict[str, Tool]:
        index = {t.operation: t for t in self.tools}
        index.update({t.name: t for t in self.tools})
        return index

    def tool(self, name: str) -> Tool:
        """A tool by its tool name (`hollowbrook_create_booking`) or its manifest name (`create_booking`)."""
        found = self._index.get(name)
        if found is not None:
            return found
        entry = next((o for o in self.operations if o.name == name), None)
        if entry is not None:
            raise UnknownOperation(
                f"{name} is not a tool: {entry.not_tool_reason or 'it declares no operation block'};"
                f" skillpress cannot send it (its file, {name}.md, spells out the request for an HTTP client of your own)"
            )
        names = sorted({t.operation for t in self.tools})
        close = difflib.get_close_matches(name, names + [t.name for t in self.tools], n=3)
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else f"; it has {len(names)} tools, listed in its manifest"
        )
        raise UnknownOperation(f"{self.slug} has no operation or tool named {name!r}{hint}")


def _json_file(files: dict[str, bytes], path: str, default: Any) -> Any:
    if path not in files:
        return default
    try:
        return json.loads(files[path])
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PackageError(f"{path}: not valid JSON: {exc}") from None


def _parse(files: dict[str, bytes], path: str) -> tuple[OperationFile, Declaration | None]:
    try:
        text = files[path].decode("utf-8")
    except UnicodeDecodeError:
        raise PackageError(f"{path}: not UTF-8 text") from None
    try:
        return parse_operation_file(path, text)
    except DeclarationError as exc:
        raise PackageError(str(exc)) from None


def _tool(name: str, decl: Declaration, types: dict[str, Any]) -> Tool:
    if not _TOOL_NAME.match(name):
        raise PackageError(
            f"{decl.file}: tool name {name!r} is not 1–64 letters, digits, '_' or '-'"
        )
    missing = sorted({n for n in refs_in(decl.schema) if n not in types})
    if missing:
        raise PackageError(
            f"{decl.file}: operation.schema refers to #/types/{missing[0]}, which types.json does not define"
        )
    try:
        schema = expand_types(decl.schema, types)
    except SchemaTooLarge:
        raise PackageError(
            f"{decl.file}: operation.schema expands past the {MAX_TOOL_SCHEMA_BYTES // 1024} KB a tool's schema may be"
        ) from None
    if has_ref_keyword(schema):
        raise PackageError(
            f"{decl.file}: operation.schema has a $ref that is not #/types/Name; write the schema inline or in types.json"
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise PackageError(
            f"{decl.file}: operation.schema is not a valid JSON Schema: {exc.message}"
        ) from None
    return Tool(name=name, operation=decl.name, declaration=decl, schema=schema)


def _auth(meta: Manifest, override: AuthHeader | None) -> AuthHeader | None:
    if override is not None:
        return override
    if meta.auth.header:
        return AuthHeader(meta.auth.header, meta.auth.kind or "apiKey")
    return None


def _derived(
    files: dict[str, bytes], meta: Manifest, types: dict[str, Any], auth: AuthHeader | None
) -> Skill:
    hosts = frozenset(h.lower() for h in meta.hosts)
    tools: list[Tool] = []
    entries: list[OperationEntry] = []
    for entry in meta.operations:
        path = entry.file
        if path not in files:
            raise PackageError(f"{path}: listed in skill.json but missing from the package")
        op_file, decl = _parse(files, path)
        entries.append(
            OperationEntry(
                entry.name,
                entry.method,
                entry.path,
                op_file.description(),
                entry.tool,
                entry.not_tool_reason,
            )
        )
        if not entry.tool:
            continue
        if decl is None:
            raise PackageError(
                f"{path}: skill.json lists it as tool {entry.tool} but the file declares no operation"
            )
        if decl.origin and decl.origin not in hosts:
            raise PackageError(
                f"{path}: operation.url goes to {decl.origin}, which is not one of the skill's hosts ({', '.join(sorted(hosts)) or 'none'})"
            )
        tools.append(_tool(entry.tool, decl, types))
    return Skill(meta.slug, meta.title, hosts, tuple(tools), tuple(entries), auth)


def _hand_written(
    files: dict[str, bytes], slug: str | None, types: dict[str, Any], auth: AuthHeader | None
) -> Skill:
    title = slug or ""
    if "body.md" in files:
        body, _ = _parse(files, "body.md")
        name = body.frontmatter.get("name")
        if isinstance(name, str) and name.strip():
            slug = name.strip()
        heading = next(
            (ln[2:].strip() for ln in body.prose.splitlines() if ln.startswith("# ")), ""
        )
        title = heading or title
        declared = body.frontmatter.get("auth")
        if auth is None and declared is not None:
            if (
                not isinstance(declared, dict)
                or not isinstance(declared.get("header"), str)
                or not declared["header"]
            ):
                raise PackageError(
                    "body.md: auth: must be a mapping with `header` (and `kind`: apiKey, bearer or basic)"
                )
            kind = declared.get("kind", "apiKey")
            if kind not in ("apiKey", "bearer", "basic"):
                raise PackageError(
                    f"body.md: auth.kind: {kind!r} is not one of apiKey, bearer, basic"
                )
            auth = AuthHeader(declared["header"], kind)
    if not slug:
        raise PackageError(
            "no skill.json, and no slug given: name the skill (body.md frontmatter `name:`) or pass one"
        )
    slug = slugify(slug) or slug
    tools: list[Tool] = []
    entries: list[OperationEntry] = []
    for path in sorted(files):
        if not path.endswith(".md") or path.rsplit("/", 1)[-1] in _NOT_OPERATIONS:
            continue
        op_file, decl = _parse(files, path)
        if decl is None:
            continue
        tool = _tool(tool_name(slug, decl.name), decl, types)
        tools.append(tool)
        entries.append(
            OperationEntry(
                decl.name, decl.method, decl.url_path, op_file.description(), tool.name, None
            )
        )
    if not tools:
        raise PackageError(
            "no operation file declares an operation (an `operation:` block in its frontmatter)"
        )
    names = [t.name for t in tools]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PackageError(f"two operation files reduce to the same tool name {dup[0]}; rename one")
    hosts = frozenset(t.declaration.origin for t in tools if t.declaration.origin)
    return Skill(slug, title or slug, hosts, tuple(tools), tuple(entries), auth)


def _with_base_url(skill: Skill, base_url: str) -> Skill:
    """Resolve path-only operation URLs against `base_url`, whose host joins the skill's hosts.
    Absolute URLs keep the hosts they declare: a base URL never redirects a declared request."""
    parts = urlsplit(base_url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username
    ):
        raise PackageError(
            f"base URL {base_url!r} is not an absolute http(s) URL without query or credentials"
        )
    relative = [t for t in skill.tools if not t.declaration.origin]
    if not relative:
        return skill
    root = base_url.rstrip("/")
    tools = tuple(
        replace(t, declaration=replace(t.declaration, url=root + t.declaration.url))
        if not t.declaration.origin
        else t
        for t in skill.tools
    )
    return replace(skill, tools=tools, hosts=skill.hosts | {parts.netloc.lower()})


def load_skill(
    files: dict[str, bytes],
    *,
    slug: str | None = None,
    auth: AuthHeader | None = None,
    base_url: str | None = None,
) -> Skill:
    """Load a package: a derived one (with `skill.json`) or a hand-written directory of operation files.

    `slug` names a hand-written skill that does not name itself; `auth` sets or overrides the
    credential header; `base_url` gives path-only operation URLs (a spec with relative servers,
    derived without `--base-url`) their host. Raises PackageError naming the file and field.
    """
    types = _json_file(files, "types.json", {})
    if not isinstance(types, dict):
        raise PackageError("types.json: not a mapping of type names to schemas")
    if "skill.json" in files:
        try:
            meta = Manifest.from_json(files["skill.json"])
        except ManifestError as exc:
            raise PackageError(str(exc)) from None
        skill = _derived(files, meta, types, _auth(meta, auth))
    else:
        skill = _hand_written(files, slug, types, auth)
    return _with_base_url(skill, base_url) if base_url else skill


def package_tools(
    files: dict[str, bytes], provider: str, notes: dict[str, list[str]] | None = None
) -> list[dict[str, Any]]:
    """Every declared operation of a package as a tool in `provider`'s shape; `notes` collects, per
    tool, what the provider's profile changed in its schema."""
    if provider not in PROVIDERS:
        raise PackageError(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}")
    out = []
    for tool in load_skill(files).tools:
        shaped, changed = tool.adapted(provider)
        out.append(shaped)
        if notes is not None and changed:
            notes[tool.name] = changed
    return out
