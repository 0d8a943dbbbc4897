"""`skill.json`, the package's metadata, as one typed model: written by the derivation, read by
everything else (runtime, workers, use-cases, diff, guesses) through `Manifest.from_json`; the
`index.json` it writes is read by `skill_index`.

A package may come from elsewhere, so reading is strict where loading depends on it (a slug, each
operation's name and file) and refuses with `ManifestError` naming the field; what only informs
(stats, warnings) falls back to empty values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillpress.errors import Permanent

__all__ = [
    "AnnotationState",
    "AuthCompanion",
    "AuthInfo",
    "AuthScheme",
    "CategoryEntry",
    "Manifest",
    "ManifestError",
    "OperationEntry",
    "Stats",
    "INDEX_FORMAT",
]

INDEX_FORMAT = 1


class ManifestError(ValueError, Permanent):
    """`skill.json` is not a skill's metadata; the message names the field."""

    problem = "package-invalid"


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ManifestError(f"skill.json: {where} is not an object")
    return value


def _str(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise ManifestError(f"skill.json: {where}{key} is missing")
    return value


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def strs(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


@dataclass(frozen=True)
class AuthScheme:
    kind: str
    header: str | None
    servable: bool


@dataclass(frozen=True)
class AuthCompanion:
    """A credential sent beside the skill's first one (an AND requirement's other scheme, or a
    header parameter that carries one), from its own variable."""

    name: str
    where: str = "header"  # header | query | cookie
    kind: str = "apiKey"
    env: str | None = None
    scheme: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "in": self.where, "kind": self.kind}
        if self.env:
            out["env"] = self.env
        if self.scheme:
            out["scheme"] = self.scheme
        return out

    @classmethod
    def from_dict(cls, raw: Any) -> AuthCompanion | None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            return None
        return cls(
            str(raw["name"]),
            str(raw.get("in") or "header"),
            str(raw.get("kind") or "apiKey"),
            opt_str(raw.get("env")),
            opt_str(raw.get("scheme")),
        )


def companions(raw: Any) -> tuple[AuthCompanion, ...]:
    return tuple(c for c in map(AuthCompanion.from_dict, raw or ()) if c is not None)


@dataclass(frozen=True)
class AuthInfo:
    """The credential header the skill uses (the scheme most operations use), and what it cannot serve."""

    header: str | None = None
    scheme: str | None = None
    kind: str | None = None
    operations_needing_auth: int = 0
    operations_unservable: int = 0
    unservable_kinds: tuple[str, ...] = ()
    schemes: tuple[tuple[str, AuthScheme], ...] = ()
    token_url: str | None = None  # OAuth 2 client credentials: where the runtime gets a token
    scopes: tuple[str, ...] = ()  # … and the scopes it asks for
    env: str | None = None  # the variable the credential is read from, when not <SLUG>_API_KEY
    where: str = "header"  # where the credential goes: header, or an apiKey's query or cookie
    also: tuple[AuthCompanion, ...] = ()  # sent beside it, each from its own variable
    # the credentials of schemes some operations are sent instead (their files say which)
    others: tuple[AuthCompanion, ...] = ()

    def place_fields(self) -> dict[str, Any]:
        """`in`, `also` and `others` where the credential is more than one header (else nothing)."""
        out: dict[str, Any] = {}
        if self.where != "header":
            out["in"] = self.where
        if self.also:
            out["also"] = [c.to_dict() for c in self.also]
        if self.others:
            out["others"] = [c.to_dict() for c in self.others]
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "header": self.header,
            "scheme": self.scheme,
            "kind": self.kind,
            "operations_needing_auth": self.operations_needing_auth,
            "operations_unservable": self.operations_unservable,
            "unservable_kinds": list(self.unservable_kinds),
            "schemes": {
                n: {"kind": s.kind, "header": s.header, "servable": s.servable}
                for n, s in self.schemes
            },
        }
        if self.token_url:
            out |= self.token_fields()
        if self.env:
            out["env"] = self.env
        return out | self.place_fields()

    def token_fields(self) -> dict[str, Any]:
        """`token_url` and `scopes` when the runtime can fetch the token, else nothing."""
        return {"token_url": self.token_url, "scopes": list(self.scopes)} if self.token_url else {}

    @classmethod
    def from_dict(cls, raw: Any) -> AuthInfo:
        if not isinstance(raw, Mapping):
            return cls()
        schemes = as_mapping(raw.get("schemes"))
        return cls(
            header=opt_str(raw.get("header")) or None,
            scheme=opt_str(raw.get("scheme")),
            kind=opt_str(raw.get("kind")),
            operations_needing_auth=_int(raw.get("operations_needing_auth")),
            operations_unservable=_int(raw.get("operations_unservable")),
            unservable_kinds=strs(raw.get("unservable_kinds")),
            token_url=opt_str(raw.get("token_url")),
            scopes=strs(raw.get("scopes")),
            env=opt_str(raw.get("env")),
            where=opt_str(raw.get("in")) or "header",
            also=companions(raw.get("also")),
            others=companions(raw.get("others")),
            schemes=tuple(
                (
                    str(n),
                    AuthScheme(
                        str(s.get("kind") or ""), opt_str(s.get("header")), bool(s.get("servable"))
                    ),
                )
                for n, s in sorted(schemes.items())
                if isinstance(s, Mapping)
            ),
        )


@dataclass(frozen=True)
class OperationEntry:
    """One operation in the index: its name and file, where it sits, its call, and its tool."""

    name: str
    file: str
    method: str = ""
    path: str = ""
    category: str | None = None
    operation_id: str | None = None
    tool: str | None = None
    not_tool_reason: str | None = None
    tags: tuple[str, ...] = ()
    deprecated: bool = False
    x_risk: str | None = None
    # required headers the tool does not send (not the credential): a value the operator fixes
    required_headers: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        asked = {"required_headers": list(self.required_headers)} if self.required_headers else {}
        return asked | {
            "name": self.name,
            "file": self.file,
            "category": self.category,
            "method": self.method,
            "path": self.path,
            "operation_id": self.operation_id,
            "tool": self.tool,
            "not_tool_reason": self.not_tool_reason,
            "tags": list(self.tags),
            "deprecated": self.deprecated,
            "x_risk": self.x_risk,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> OperationEntry:
        if not isinstance(raw, Mapping):
            raise ManifestError("skill.json: an operations entry has no name or file")
        name, file = raw.get("name"), raw.get("file")
        if not isinstance(name, str) or not isinstance(file, str) or not name or not file:
            raise ManifestError("skill.json: an operations entry has no name or file")
        return cls(
            name=name,
            file=file,
            method=str(raw.get("method") or ""),
            path=str(raw.get("path") or ""),
            category=opt_str(raw.get("category")),
            operation_id=opt_str(raw.get("operation_id")),
            tool=opt_str(raw.get("tool")) or None,
            not_tool_reason=opt_str(raw.get("not_tool_reason")),
            tags=strs(raw.get("tags")),
            deprecated=raw.get("deprecated") is True,
            x_risk=opt_str(raw.get("x_risk")),
            required_headers=strs(raw.get("required_headers")),
        )


@dataclass(frozen=True)
class CategoryEntry:
    name: str
    file: str
    title: str
    operations: int
    parent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "file": self.file,
            "title": self.title,
            "operations": self.operations,
        }
        return out | ({"parent": self.parent} if self.parent else {})

    @classmethod
    def from_dict(cls, raw: Any) -> CategoryEntry:
        raw = _obj(raw, "a categories entry")
        name = _str(raw, "name", "a category's ")
        return cls(
            name,
            str(raw.get("file") or f"{name}.md"),
            str(raw.get("title") or name),
            _int(raw.get("operations")),
            opt_str(raw.get("parent")),
        )


@dataclass(frozen=True)
class Stats:
    operations: int = 0
    tools: int = 0
    tools_share: str = ""
    not_tools: tuple[tuple[str, int], ...] = ()
    types: int = 0
    body_bytes: int = 0
    largest_file_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "operations": self.operations,
            "tools": self.tools,
            "tools_share": self.tools_share,
            "not_tools": dict(self.not_tools),
            "types": self.types,
            "body_bytes": self.body_bytes,
            "largest_file_bytes": self.largest_file_bytes,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> Stats:
        if not isinstance(raw, Mapping):
            return cls()
        not_tools = as_mapping(raw.get("not_tools"))
        return cls(
            _int(raw.get("operations")),
            _int(raw.get("tools")),
            str(raw.get("tools_share") or ""),
            tuple(sorted((str(k), _int(v)) for k, v in not_tools.items())),
            _int(raw.get("types")),
            _int(raw.get("body_bytes")),
            _int(raw.get("largest_file_bytes")),
        )


@dataclass(frozen=True)
class AnnotationState:
    """Which annotations this version applies, which are orphaned, which operations they hide."""

    applied: tuple[str, ...] = ()
    orphaned: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": list(self.applied),
            "orphaned": list(self.orphaned),
            "hidden": list(self.hidden),
        }

    @classmethod
    def from_dict(cls, raw: Any) -> AnnotationState:
        if not isinstance(raw, Mapping):
            return cls()
        return cls(strs(raw.get("applied")), strs(raw.get("orphaned")), strs(raw.get("hidden")))


@dataclass(frozen=True)
class Manifest:
    """A package's `skill.json`."""

    slug: str
    title: str
    description: str = ""
    base_url: str | None = None
    hosts: tuple[str, ...] = ()
    auth: AuthInfo = field(default_factory=AuthInfo)
    operations: tuple[OperationEntry, ...] = ()
    categories: tuple[CategoryEntry, ...] = ()
    sections: tuple[CategoryEntry, ...] = ()  # the second level of a very large API
    mode: str = "flat"  # flat | categories
    source: str = "flat"  # flat | tags | paths | model
    tag_failure: str | None = None
    stats: Stats = field(default_factory=Stats)
    derived_from: tuple[tuple[str, str | None], ...] = ()
    warnings: tuple[str, ...] = ()
    annotations: AnnotationState | None = None  # present when annotations were applied

    @property
    def renderer(self) -> str:
        return dict(self.derived_from).get("renderer") or ""

    def operation(self, name: str) -> OperationEntry | None:
        for op in self.operations:
            if op.name == name:
                return op
        return None

    def by_name(self) -> dict[str, OperationEntry]:
        return {op.name: op for op in self.operations}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "slug": self.slug,
            "title": self.title,
            "description": self.description,
            "base_url": self.base_url,
            "hosts": list(self.hosts),
            "auth": self.auth.to_dict(),
            "operations": [op.to_dict() for op in self.operations],
            "categories": [c.to_dict() for c in self.categories],
            "categorization": {
                "mode": self.mode,
                "source": self.source,
                "tag_failure": self.tag_failure,
            },
            "stats": self.stats.to_dict(),
            "derived_from": dict(self.derived_from),
            "warnings": list(self.warnings),
        }
        if self.annotations is not None:
            out["annotations"] = self.annotations.to_dict()
        if self.sections:
            out["sections"] = [c.to_dict() for c in self.sections]
        return out

    def to_json(self) -> bytes:
        """`skill.json`: `json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`'s bytes. orjson
        writes them a tenth of the time (a large API's manifest is megabytes), and the same
        ones: every value here is a string, an integer, a boolean or null, in lists and objects
        with string keys (no float, whose forms differ). What it cannot write (an integer past
        64 bits, a lone surrogate) is written as before, or refused as before."""
        import orjson

        data = self.to_dict()
        try:
            return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        except TypeError:
            return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()

    def to_index(self) -> bytes:
        """`index.json`: what a runtime needs to call one operation, without the rest of this
        manifest (a large API's `skill.json` is megabytes): the skill's name, hosts, base URL
        and credential header, and per operation its name, method, path, tool name and why it
        has none (its file is `<name>.md`). One line per operation."""
        head = {
            "format": INDEX_FORMAT,
            "slug": self.slug,
            "title": self.title,
            "base_url": self.base_url,
            "hosts": list(self.hosts),
            "auth": {"header": self.auth.header, "kind": self.auth.kind}
            | self.auth.token_fields()
            | ({"env": self.auth.env} if self.auth.env else {})
            | self.auth.place_fields(),
        }
        rows = [[o.name, o.method, o.path, o.tool, o.not_tool_reason] for o in self.operations]

        def written(dumps: Callable[[Any], bytes]) -> bytes:
            return (
                dumps(head)[:-1] + b',"operations":[\n' + b",\n".join(map(dumps, rows)) + b"\n]}\n"
            )

        import orjson

        try:  # (compact: the same bytes as json.dumps's, as in `to_json`)
            return written(orjson.dumps)
        except TypeError:
            return written(_compact_json)

    @classmethod
    def from_json(cls, data: bytes | str) -> Manifest:
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"skill.json: not valid JSON: {exc}") from None
        if not isinstance(raw, Mapping):
            raise ManifestError("skill.json: not a JSON object")
        slug = _str(raw, "slug", "")
        ops = raw.get("operations", [])
        cats = raw.get("categories", [])
        sections = raw.get("sections", [])
        if (
            not isinstance(ops, list)
            or not isinstance(cats, list)
            or not isinstance(sections, list)
        ):
            raise ManifestError("skill.json: operations and categories are lists")
        cat = as_mapping(raw.get("categorization"))
        derived = as_mapping(raw.get("derived_from"))
        return cls(
            slug=slug,
            title=str(raw.get("title") or slug),
            description=str(raw.get("description") or ""),
            base_url=opt_str(raw.get("base_url")),
            hosts=strs(raw.get("hosts")),
            auth=AuthInfo.from_dict(raw.get("auth")),
            operations=tuple(OperationEntry.from_dict(o) for o in ops),
            categories=tuple(CategoryEntry.from_dict(c) for c in cats),
            sections=tuple(CategoryEntry.from_dict(c) for c in sections),
            mode=str(cat.get("mode") or "flat"),
            source=str(cat.get("source") or "flat"),
            tag_failure=opt_str(cat.get("tag_failure")),
            stats=Stats.from_dict(raw.get("stats")),
            derived_from=tuple(
                (str(k), v if isinstance(v, str) else None) for k, v in sorted(derived.items())
            ),
            warnings=strs(raw.get("warnings")),
            annotations=AnnotationState.from_dict(raw["annotations"])
            if "annotations" in raw
            else None,
        )


def _compact_json(value: Any) -> bytes:
    """`value` as compact JSON by the standard library (what orjson cannot write)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
