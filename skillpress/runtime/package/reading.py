"""A package's files read for loading, as every kind of package reads them: JSON and text files,
operation files and other frontmatter, each tool built from its declaration with its schema
checked, a base URL a caller gives, a credential variable held to the skill's own."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from jsonschema.exceptions import SchemaError

from skillpress.format.credentials import credential_env_refusal
from skillpress.format.declaration import Declaration, DeclarationError, OperationFile
from skillpress.format.expand import (
    MAX_TOOL_SCHEMA_BYTES,
    ExpandedSizes,
    expand_types,
    has_ref_keyword,
)
from skillpress.format.frontmatter import parse_operation_file, split_frontmatter
from skillpress.format.type_refs import refs_in
from skillpress.runtime.package.metaschema import check_schema, keyword_refusal
from skillpress.runtime.package.model import PackageError, Tool

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def json_file(files: Mapping[str, bytes], path: str, default: Any) -> Any:
    if path not in files:
        return default
    try:
        return json.loads(files[path])
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PackageError(f"{path}: not valid JSON: {exc}") from None


def file_text(files: Mapping[str, bytes], path: str) -> str:
    try:
        return files[path].decode("utf-8")
    except UnicodeDecodeError:
        raise PackageError(f"{path}: not UTF-8 text") from None


def parse_file(files: Mapping[str, bytes], path: str) -> tuple[OperationFile, Declaration | None]:
    try:
        return parse_operation_file(path, file_text(files, path))
    except DeclarationError as exc:
        raise PackageError(str(exc)) from None


def front_of(files: Mapping[str, bytes], path: str) -> OperationFile:
    """A file that is not an operation (body.md): its frontmatter and prose, bounded the same way."""
    try:
        return split_frontmatter(path, file_text(files, path))
    except DeclarationError as exc:
        raise PackageError(str(exc)) from None


class SchemaCheck:
    """A tool's schema checked as JSON Schema by its parts: the declaration's own schema, then
    each type it uses, once per load however many tools use it. A `#/types/` reference replaced
    by a valid schema leaves a valid schema, so this is the check of the expanded schema, without
    walking every expansion through the metaschema (845 Kubernetes tools: 38 s → well under one)."""

    def __init__(self, types: dict[str, Any]) -> None:
        self.types = types
        # each type's expanded size, once per load, of the schema as written
        self.sizes = ExpandedSizes(types, renamed=False)
        self.valid: set[str] = set()
        self.seen: set[str] = set()  # argument schemas already checked (many tools share them)

    def _parts(self, schema: Any) -> list[Any]:
        """The schema as parts each checked alone: its object skeleton and each argument's schema."""
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict):
            return [schema]
        return [{**schema, "properties": dict.fromkeys(props, {})}, *props.values()]

    def check(self, decl: Declaration) -> None:
        for part in self._parts(decl.schema):
            key = json.dumps(part, sort_keys=True, ensure_ascii=False)
            if key in self.seen:
                continue
            wrong = keyword_refusal(part)
            if wrong is not None:
                raise PackageError(f"{decl.file}: operation.schema: {wrong}")
            try:
                check_schema(part)
            except SchemaError as exc:
                raise PackageError(
                    f"{decl.file}: operation.schema is not a valid JSON Schema: {exc.message}"
                ) from None
            self.seen.add(key)
        todo = refs_in(decl.schema)
        while todo:
            name = todo.pop()
            if name in self.valid or name not in self.types:
                continue
            wrong = keyword_refusal(self.types[name])
            if wrong is not None:
                raise PackageError(
                    f"{decl.file}: operation.schema uses types.json's {name}: {wrong}"
                )
            try:
                check_schema(self.types[name])
            except SchemaError as exc:
                raise PackageError(
                    f"{decl.file}: operation.schema uses types.json's {name}, which is not a valid JSON Schema: {exc.message}"
                ) from None
            self.valid.add(name)
            todo.extend(refs_in(self.types[name]))


def build_tool(name: str, decl: Declaration, types: dict[str, Any], checked: SchemaCheck) -> Tool:
    if not _TOOL_NAME.match(name):
        raise PackageError(
            f"{decl.file}: tool name {name!r} is not 1–64 letters, digits, '_' or '-'"
        )
    missing = sorted({n for n in refs_in(decl.schema) if n not in types})
    if missing:
        raise PackageError(
            f"{decl.file}: operation.schema refers to #/types/{missing[0]}, which types.json does not define"
        )
    # the accounting derive declared the tool by, less what a provider's names add: what fits
    # there loads here
    if not checked.sizes.fits(decl.schema):
        raise PackageError(
            f"{decl.file}: operation.schema expands past the {MAX_TOOL_SCHEMA_BYTES // 1024} KB a tool's schema may be"
        )
    schema = expand_types(decl.schema, types, budget=1 << 40)  # a fresh copy of its own
    if has_ref_keyword(schema):
        raise PackageError(
            f"{decl.file}: operation.schema has a $ref that is not #/types/Name; write the schema inline or in types.json"
        )
    checked.check(decl)
    return Tool(name=name, operation=decl.name, declaration=decl, schema=schema)


def base_parts(base_url: str) -> tuple[str, str]:
    """(the root path-only URLs are resolved against, its host) for a `--base-url`."""
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
    return base_url.rstrip("/"), parts.netloc.lower()


def rooted(decl: Declaration, root: str | None, declared: str | None = None) -> Declaration:
    """The operation's URL under the base URL the caller gave (`root`): a path-only URL resolved
    against it; a declared one moved there (a mock, a proxy, a region: the caller says where the
    API is): the skill's own base (`declared`) replaced where the URL starts with it, else the
    URL's origin."""
    if root is None:
        return decl
    if not decl.origin:
        return replace(decl, url=root + decl.url)
    if declared and decl.url.startswith(declared.rstrip("/") + "/"):
        return replace(decl, url=root + decl.url[len(declared.rstrip("/")) :])
    parts = urlsplit(decl.url)
    return replace(decl, url=root + parts.path)


def credential_env(name: object, where: str, slug: str | None) -> str | None:
    """A recorded credential variable, checked: an environment variable's name of the skill's
    own (`<SLUG>_…` of the slug it is bound as), never one of skillpress's settings; refused,
    naming it, otherwise."""
    if name is None:
        return None
    why = credential_env_refusal(name, slug) if isinstance(name, str) else "not a string"
    if why is not None:
        raise PackageError(f"{where}: {why}")
    assert isinstance(name, str)
    return name


def types_of(files: Mapping[str, bytes]) -> dict[str, Any]:
    # an Agent Skills folder keeps them beside the operation files that use them
    path = "types.json" if "types.json" in files else "references/types.json"
    types = json_file(files, path, {})
    if not isinstance(types, dict):
        raise PackageError(f"{path}: not a mapping of type names to schemas")
    return types


TYPES_FILE = "types.json"


def type_at(files: Mapping[str, bytes], path: str) -> tuple[Any, bool]:
    """The schema an operation file's `#/types/Name` names, asked for as
    `types.json#/types/Name`: what an agent reads to follow the reference (Graph's send_mail
    names microsoft.graph.message). (Why not, True) for a name it lacks, or for the whole file:
    a type at a time, since Graph's is megabytes."""
    _, _, name = path.partition("#")
    name = name.removeprefix("/types/").removeprefix("/")
    if not name:
        return f"name one type: {TYPES_FILE}#/types/NAME, as an operation's file refers to it", True
    try:
        types = types_of(files)
    except PackageError as exc:
        return str(exc), True
    if name not in types:
        close = difflib.get_close_matches(name, list(types), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"{TYPES_FILE} has no type {name!r}{hint}", True
    return {name: types[name]}, False
