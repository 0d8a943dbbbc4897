"""A skill package loaded for calling: its declared operations as tools, its hosts, its credential header.

Loading is the publish-time check: every operation file is parsed by the same parser a person's
hand-written file goes through, and a package whose declarations disagree with themselves, with
`skill.json`, or with the hosts it declares is refused whole.
"""
# size: a package loaded for calling, derived or hand-written or an Agent Skills folder: the publish check in one place

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
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
from skillpress.format.keys import unknown_keys
from skillpress.format.manifest import Manifest, ManifestError, SkillIndex
from skillpress.format.names import slugify, tool_name
from skillpress.format.type_refs import refs_in
from skillpress.runtime.package.metaschema import check_schema, keyword_refusal
from skillpress.runtime.package.model import AuthHeader, OperationEntry, PackageError, Skill, Tool

__all__ = [
    "load_skill",
    "tool_clash",
]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOT_OPERATIONS = ("body.md", "SKILL.md", "README.md")
BODY_KEYS = ("name", "auth")  # a hand-written body.md's frontmatter
AUTH_KEYS = ("header", "kind", "in")


def _json_file(files: Mapping[str, bytes], path: str, default: Any) -> Any:
    if path not in files:
        return default
    try:
        return json.loads(files[path])
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PackageError(f"{path}: not valid JSON: {exc}") from None


def _text(files: Mapping[str, bytes], path: str) -> str:
    try:
        return files[path].decode("utf-8")
    except UnicodeDecodeError:
        raise PackageError(f"{path}: not UTF-8 text") from None


def _parse(files: Mapping[str, bytes], path: str) -> tuple[OperationFile, Declaration | None]:
    try:
        return parse_operation_file(path, _text(files, path))
    except DeclarationError as exc:
        raise PackageError(str(exc)) from None


def _front(files: Mapping[str, bytes], path: str) -> OperationFile:
    """A file that is not an operation (body.md): its frontmatter and prose, bounded the same way."""
    try:
        return split_frontmatter(path, _text(files, path))
    except DeclarationError as exc:
        raise PackageError(str(exc)) from None


class _SchemaCheck:
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


def _tool(name: str, decl: Declaration, types: dict[str, Any], checked: _SchemaCheck) -> Tool:
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


def _auth(index: SkillIndex, override: AuthHeader | None, slug: str) -> AuthHeader | None:
    if override is not None:
        return override
    if index.auth_header:
        kind = index.auth_kind or "apiKey"
        token_url = index.auth_token_url if kind == "bearer" else None
        return AuthHeader(
            index.auth_header,
            kind,
            token_url,
            index.auth_scopes if token_url else (),
            _env(index.auth_env, "skill.json: auth.env", slug),
            index.auth_in,
            tuple(
                AuthHeader(
                    c.name,
                    c.kind if c.kind in ("apiKey", "bearer", "basic") else "apiKey",
                    env=_env(c.env, "skill.json: auth.also.env", slug),
                    where=c.where,
                )
                for c in index.auth_also
            ),
        )
    return None


def _other_auth(index: SkillIndex, decl: Declaration, slug: str) -> AuthHeader:
    """The credential an operation names (`operation.credential`): one skill.json lists under
    `auth.others`, never one its file invents."""
    found = next((c for c in index.auth_others if c.scheme == decl.credential), None)
    if found is None or not found.env:
        raise PackageError(
            f"{decl.file}: operation.credential names {decl.credential!r}, which skill.json's"
            " auth.others does not list (with the variable it is read from)"
        )
    return AuthHeader(
        found.name,
        found.kind if found.kind in ("apiKey", "bearer", "basic") else "apiKey",
        env=_env(found.env, "skill.json: auth.others.env", slug),
        where=found.where,
    )


def _base(base_url: str) -> tuple[str, str]:
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


def _rooted(decl: Declaration, root: str | None, declared: str | None = None) -> Declaration:
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


def _derived(
    files: Mapping[str, bytes],
    index: SkillIndex,
    auth: AuthHeader | None,
    base_url: str | None,
    bound: str,
) -> Skill:
    """A derived package bound as `bound` (the slug it is served as: the folder's name, or the
    package's own when loaded from the records): its tools are named from that slug."""
    hosts = frozenset(h.lower() for h in index.hosts)
    root = None
    declared = (
        index.base_url if (index.base_url or "").startswith(("http://", "https://")) else None
    )
    if base_url:
        root, host = _base(base_url)
        hosts = frozenset({host})  # every request goes where the caller said, and nowhere else

    def entry(row: tuple[str, str, str, str | None, str | None]) -> OperationEntry:
        # a tool's name is made here from the slug the skill is bound as and the operation's
        # name, never read from the file: a package cannot take another skill's tool names (and
        # their gates)
        name, method, path, recorded, reason = row
        tool = tool_name(bound, name) if recorded else None
        return OperationEntry(name, method, path, tool, reason, f"{name}.md")

    def listing() -> tuple[OperationEntry, ...]:
        try:
            rows = index.rows
        except ManifestError as exc:
            raise PackageError(str(exc)) from None
        out = tuple(entry(row) for row in rows)
        forged = next(
            (r for r in rows if r[3] and r[3] != tool_name(index.slug, r[0])),
            None,
        )
        if forged is not None:
            raise PackageError(
                f"skill.json: operation {forged[0]} is listed as tool {forged[3]}, but a tool of"
                f" {index.slug} is named {tool_name(index.slug, forged[0])}: derive the package"
                " again"
            )
        return out

    def lookup(key: str) -> OperationEntry | None:
        row = index.find(key)
        found = None if row is None else entry(row)
        return found if found is not None and key in (found.name, found.tool) else None

    types: list[_SchemaCheck] = []

    def build(entry: OperationEntry) -> Tool:
        _missing(files, entry)
        _, decl = _parse(files, entry.file)
        if decl is None:
            raise PackageError(
                f"{entry.file}: skill.json lists it as tool {entry.tool} but the file declares no operation"
            )
        decl = _rooted(decl, root, declared)
        if decl.origin and decl.origin not in hosts:
            raise PackageError(
                f"{entry.file}: operation.url goes to {decl.origin}, which is not one of the skill's hosts ({', '.join(sorted(hosts)) or 'none'})"
            )
        if not types:
            types.append(_SchemaCheck(_types(files)))
        tool = _tool(str(entry.tool), decl, types[0].types, types[0])
        return replace(tool, auth=_other_auth(index, decl, bound)) if decl.credential else tool

    return Skill(bound, index.title, hosts, auth, build, listing, lookup)


def tool_clash(
    skills: Mapping[str, Skill], flows: Mapping[str, Iterable[str]] | None = None
) -> str | None:
    """Why these skills cannot be offered together (two tools of the same name, so a call could
    reach either one's gates: two skills' operations, or an operation and another skill's
    workflow, `flows` naming each skill's workflow tools), or None. The one check every face
    that serves several skills makes before it offers any."""
    owner: dict[str, str] = {}
    for key, skill in sorted(skills.items()):
        names = [(e.tool, "a tool") for e in skill.operations if e.tool is not None]
        names += [(t, "a workflow tool") for t in (flows or {}).get(key, ())]
        for name, what in names:
            other = owner.setdefault(name, f"{key}'s {what}")
            if other != f"{key}'s {what}":
                return f"{other} and {key}'s {what} are both named {name}"
    return None


def _missing(files: Mapping[str, bytes], entry: OperationEntry) -> None:
    if entry.file not in files:
        raise PackageError(f"{entry.file}: listed in skill.json but missing from the package")


# what an Agent Skills SKILL.md's frontmatter may hold (agentskills.io), and the metadata keys an
# export from skillpress writes there so the folder loads back as the same skill
SKILL_MD_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
META_SLUG, META_AUTH_HEADER, META_AUTH_KIND, META_AUTH_ENV = (
    "skillpress-slug",
    "skillpress-auth-header",
    "skillpress-auth-kind",
    "skillpress-auth-env",
)
# where the credential goes, those sent beside it and those some operations take instead, as one
# JSON string (metadata values are strings): {"in", "also": [...], "others": [...]}
META_AUTH_MORE = "skillpress-auth-more"


def _slot(raw: Any, where: str, slug: str | None) -> AuthHeader:
    """One credential of META_AUTH_MORE's lists, checked like skill.json's."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise PackageError(f"SKILL.md: metadata.{META_AUTH_MORE}: {where} needs a `name`")
    kind = raw.get("kind", "apiKey")
    return AuthHeader(
        raw["name"],
        kind if kind in ("apiKey", "bearer", "basic") else "apiKey",
        env=_env(raw.get("env"), f"SKILL.md: metadata.{META_AUTH_MORE}.{where}.env", slug),
        where=str(raw.get("in") or "header"),
    )


def auth_more(auth: AuthHeader, others: Mapping[str, AuthHeader]) -> str | None:
    """META_AUTH_MORE's value for a skill's credentials (None when the header says it all)."""
    if auth.where == "header" and not auth.also and not others:
        return None

    def one(slot: AuthHeader, scheme: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": slot.header, "in": slot.where, "kind": slot.kind}
        if slot.env:
            out["env"] = slot.env
        if scheme:
            out["scheme"] = scheme
        return out

    return json.dumps(
        {
            "in": auth.where,
            "also": [one(c) for c in auth.also],
            "others": [one(o, name) for name, o in sorted(others.items())],
        },
        sort_keys=True,
    )


def _more(
    meta: Mapping[str, Any], auth: AuthHeader, slug: str | None
) -> tuple[AuthHeader, dict[str, AuthHeader]]:
    """`auth` with META_AUTH_MORE's place and companions, and the credentials by scheme that
    some operations take instead."""
    raw = meta.get(META_AUTH_MORE)
    if raw is None:
        return auth, {}
    try:
        more = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        more = None
    if not isinstance(more, dict):
        raise PackageError(f"SKILL.md: metadata.{META_AUTH_MORE}: must be a JSON object")
    also = tuple(_slot(c, "also", slug) for c in more.get("also") or ())
    others = {str(o.get("scheme")): _slot(o, "others", slug) for o in more.get("others") or ()}
    return replace(auth, where=str(more.get("in") or "header"), also=also), others


def _env(name: object, where: str, slug: str | None) -> str | None:
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


def _agent_skill(
    files: Mapping[str, bytes], slug: str | None, auth: AuthHeader | None
) -> tuple[str | None, AuthHeader | None, bool, dict[str, AuthHeader]]:
    """An Agent Skills folder's name and credential header, from SKILL.md's frontmatter (and
    whether the name is the slug an export recorded)."""
    front = _front(files, "SKILL.md").frontmatter
    unknown = unknown_keys(front, SKILL_MD_KEYS)
    if unknown:
        raise PackageError(f"SKILL.md: frontmatter: {unknown}")
    meta = front.get("metadata") or {}
    if not isinstance(meta, dict):
        raise PackageError("SKILL.md: metadata: must be a mapping of names to strings")
    recorded = meta.get(META_SLUG)
    exact = (
        not slug
        and isinstance(recorded, str)
        and bool(re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", recorded))
    )
    named = recorded if exact else front.get("name")
    if not slug and isinstance(named, str) and named.strip():
        slug = named.strip()
    header, kind = meta.get(META_AUTH_HEADER), meta.get(META_AUTH_KIND, "apiKey")
    if auth is None and header is not None:
        if not isinstance(header, str) or not header:
            raise PackageError(f"SKILL.md: metadata.{META_AUTH_HEADER}: is not a header name")
        if kind not in ("apiKey", "bearer", "basic"):
            raise PackageError(
                f"SKILL.md: metadata.{META_AUTH_KIND}: {kind!r} is not one of apiKey, bearer, basic"
            )
        bound = (slug if exact else slugify(slug) or slug) if slug else None
        env = _env(meta.get(META_AUTH_ENV), f"SKILL.md: metadata.{META_AUTH_ENV}", bound)
        auth = AuthHeader(header, kind, env=env)
        auth, others = _more(meta, auth, bound)
        return slug, auth, exact, others
    return slug, auth, exact, {}


def _hand_written(
    files: Mapping[str, bytes], slug: str | None, auth: AuthHeader | None, base_url: str | None
) -> Skill:
    # size: body.md, SKILL.md and the operation files of a hand-written folder, read in order
    types = _types(files)
    title = slug or ""
    exact = False  # a slug an export recorded is the skill's own: not made again from words
    others: dict[str, AuthHeader] = {}  # by scheme: the credentials some operations take instead
    if "body.md" not in files and "SKILL.md" in files:
        slug, auth, exact, others = _agent_skill(files, slug, auth)
    if "body.md" in files:
        body = _front(files, "body.md")
        unknown = unknown_keys(body.frontmatter, BODY_KEYS)
        if unknown:
            raise PackageError(f"body.md: frontmatter: {unknown}")
        name = body.frontmatter.get("name")
        if isinstance(name, str) and name.strip():
            slug = name.strip()
        heading = next(
            (ln[2:].strip() for ln in body.prose.splitlines() if ln.startswith("# ")), ""
        )
        title = heading or title
        declared = body.frontmatter.get("auth")
        if auth is None and declared is not None:
            unknown = unknown_keys(declared, AUTH_KEYS) if isinstance(declared, dict) else None
            if unknown:
                raise PackageError(f"body.md: auth: {unknown}")
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
            auth = AuthHeader(declared["header"], kind, where=str(declared.get("in", "header")))
    if not slug:
        raise PackageError(
            "no skill.json, and no slug given: name the skill (body.md frontmatter `name:`) or pass one"
        )
    slug = slug if exact else slugify(slug) or slug
    root, base_host = _base(base_url) if base_url else (None, None)
    checked = _SchemaCheck(types)
    tools: list[Tool] = []
    for path in sorted(files):
        if not path.endswith(".md") or path.rsplit("/", 1)[-1] in _NOT_OPERATIONS:
            continue
        _, decl = _parse(files, path)
        if decl is None:
            continue
        tool = _tool(tool_name(slug, decl.name), decl, types, checked)
        if decl.credential:  # one the folder's SKILL.md lists, or it would go unsent
            if decl.credential not in others:
                raise PackageError(
                    f"{path}: operation.credential names {decl.credential!r}, which neither a"
                    f" skill.json (auth.others) nor SKILL.md (metadata.{META_AUTH_MORE}) lists"
                )
            tool = replace(tool, auth=others[decl.credential])
        tools.append(tool)
    if not tools:
        raise PackageError(
            "no operation file declares an operation (an `operation:` block in its frontmatter)"
        )
    names = [t.name for t in tools]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PackageError(f"two operation files reduce to the same tool name {dup[0]}; rename one")
    hosts = frozenset(t.declaration.origin for t in tools if t.declaration.origin)
    if base_host:  # every request goes where the caller said
        hosts = frozenset({base_host})
    confirms = _contract(files, names) if "SKILL.md" in files and "body.md" not in files else None
    tools = [
        replace(
            t,
            declaration=_rooted(t.declaration, root),
            confirm=confirms is not None and t.name in confirms,
        )
        for t in tools
    ]
    by_name = {t.operation: t for t in tools}
    entries = tuple(
        OperationEntry(
            t.operation,
            t.declaration.method,
            t.declaration.url_path,
            t.name,
            None,
            t.declaration.file,
        )
        for t in tools
    )
    return Skill(
        slug,
        title or slug,
        hosts,
        auth,
        lambda e: by_name[e.name],
        lambda: entries,
        confirms=frozenset(confirms or ()),
    )


def _contract(files: Mapping[str, bytes], tools: list[str]) -> frozenset[str] | None:
    """An Agent Skills folder's tools.json, read for what the runtime holds every call to: the
    tools whose calls need the user's confirmation (None without a contract). One that cannot be
    read as a contract is refused: a declaration is applied or refused, never ignored."""
    if "tools.json" not in files:
        return None
    contract = _json_file(files, "tools.json", [])
    if not isinstance(contract, list):
        raise PackageError("tools.json: not a list of tools")
    out = set()
    for n, entry in enumerate(contract, 1):
        name = entry.get("name") if isinstance(entry, dict) else None
        confirm = entry.get("requiresConfirmation") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(confirm, bool):
            raise PackageError(
                f"tools.json: entry {n} is not a tool with a name and requiresConfirmation"
            )
        if not isinstance(entry, dict) or ("workflow" not in entry and name not in tools):
            raise PackageError(f"tools.json: {name!r} is no tool of this folder's references")
        if confirm:
            out.add(name)
    return frozenset(out)


def _types(files: Mapping[str, bytes]) -> dict[str, Any]:
    # an Agent Skills folder keeps them beside the operation files that use them
    path = "types.json" if "types.json" in files else "references/types.json"
    types = _json_file(files, path, {})
    if not isinstance(types, dict):
        raise PackageError(f"{path}: not a mapping of type names to schemas")
    return types


def load_skill(
    files: Mapping[str, bytes],
    *,
    slug: str | None = None,
    auth: AuthHeader | None = None,
    base_url: str | None = None,
    lazy: bool = False,
) -> Skill:
    """Load a package: a derived one (with `skill.json`) or a hand-written directory of operation files.

    `slug` names a hand-written skill that does not name itself; `auth` sets or overrides the
    credential header; `base_url` is where the API is: path-only operation URLs (a spec with
    relative servers) are resolved against it, declared ones moved to it (a mock, a proxy, a
    region), and it is the only host requests go to. Raises PackageError naming the file and field.

    Loading checks the whole package (every file parsed, every tool built: the publish check)
    unless `lazy`: then a derived package reads only `skill.json` here, and each tool's file when
    that tool is first asked for, so one call costs the same for ten operations or ten thousand.
    """
    if "skill.json" not in files:
        return _hand_written(files, slug, auth, base_url)
    try:
        if lazy and "index.json" in files:  # not the whole manifest: a large API's is megabytes
            index = SkillIndex.from_json(files["index.json"])
        else:
            meta = Manifest.from_json(files["skill.json"])
            built = meta.to_index()
            index = SkillIndex.from_json(built)
            if "index.json" in files and files["index.json"] != built:
                raise PackageError(
                    "index.json: does not match skill.json (derive the package again)"
                )
    except ManifestError as exc:
        raise PackageError(str(exc)) from None
    bound = slug or index.slug
    skill = _derived(files, index, _auth(index, auth, bound), base_url, bound)
    if not lazy:
        for entry in skill.operations:
            _missing(files, entry)
        _types(files)
        for entry in skill.operations:
            if not entry.tool:
                _parse(files, entry.file)
        skill.tools  # noqa: B018 (builds and checks every tool)
    return skill
