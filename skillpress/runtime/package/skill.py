"""A skill package loaded for calling: its declared operations as tools, its hosts, its credential header.

Loading is the publish-time check: every operation file is parsed by the same parser a person's
hand-written file goes through, and a package whose declarations disagree with themselves, with
`skill.json`, or with the hosts it declares is refused whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from skillpress.format.credentials import own_env_prefix
from skillpress.format.declaration import Declaration
from skillpress.format.gc_pause import gc_paused
from skillpress.format.manifest import Manifest, ManifestError
from skillpress.format.names import tool_name
from skillpress.format.skill_index import SkillIndex
from skillpress.runtime.package.hand_written import hand_written
from skillpress.runtime.package.model import AuthHeader, OperationEntry, PackageError, Skill, Tool
from skillpress.runtime.package.reading import (
    SchemaCheck,
    base_parts,
    build_tool,
    credential_env,
    parse_file,
    rooted,
    types_of,
)

__all__ = [
    "load_skill",
    "tool_clash",
    "tool_names",
]


def _rebound(env: str | None, index: SkillIndex, slug: str) -> str | None:
    """A credential variable recorded under the slug the package was derived as
    (`PETSTORE_API_KEY` beside Swagger Petstore's OAuth) read as the same variable of the slug
    it is bound as (a folder `pet-coupons`: `PET_COUPONS_API_KEY`), so what derive writes loads
    whatever the folder is named; any other name is kept, and checked as before."""
    recorded = own_env_prefix(index.slug)
    if env is None or index.slug == slug or not env.startswith(recorded):
        return env
    return own_env_prefix(slug) + env[len(recorded) :]


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
            credential_env(_rebound(index.auth_env, index, slug), "skill.json: auth.env", slug),
            index.auth_in,
            tuple(
                AuthHeader(
                    c.name,
                    c.kind if c.kind in ("apiKey", "bearer", "basic") else "apiKey",
                    env=credential_env(
                        _rebound(c.env, index, slug), "skill.json: auth.also.env", slug
                    ),
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
        env=credential_env(_rebound(found.env, index, slug), "skill.json: auth.others.env", slug),
        where=found.where,
    )


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
        root, host = base_parts(base_url)
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

    types: list[SchemaCheck] = []

    def build(entry: OperationEntry) -> Tool:
        _missing(files, entry)
        _, decl = parse_file(files, entry.file)
        if decl is None:
            raise PackageError(
                f"{entry.file}: skill.json lists it as tool {entry.tool} but the file declares no operation"
            )
        decl = rooted(decl, root, declared)
        if decl.origin and decl.origin not in hosts:
            raise PackageError(
                f"{entry.file}: operation.url goes to {decl.origin}, which is not one of the skill's hosts ({', '.join(sorted(hosts)) or 'none'})"
            )
        if not types:
            types.append(SchemaCheck(types_of(files)))
        tool = build_tool(str(entry.tool), decl, types[0].types, types[0])
        return replace(tool, auth=_other_auth(index, decl, bound)) if decl.credential else tool

    return Skill(bound, index.title, hosts, auth, build, listing, lookup)


def tool_names(skill: Skill, flows: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Every tool name a skill offers, with what it is (an operation's tool, or a workflow's):
    what `tool_clash` compares across skills."""
    names = [(e.tool, "a tool") for e in skill.operations if e.tool is not None]
    return names + [(t, "a workflow tool") for t in flows]


def tool_clash(
    skills: Mapping[str, Skill], flows: Mapping[str, Iterable[str]] | None = None
) -> str | None:
    """Why these skills cannot be offered together (two tools of the same name, so a call could
    reach either one's gates: two skills' operations, or an operation and another skill's
    workflow, `flows` naming each skill's workflow tools), or None. The one check every face
    that serves several skills makes before it offers any."""
    owner: dict[str, str] = {}
    for key, skill in sorted(skills.items()):
        for name, what in tool_names(skill, (flows or {}).get(key, ())):
            other = owner.setdefault(name, f"{key}'s {what}")
            if other != f"{key}'s {what}":
                return f"{other} and {key}'s {what} are both named {name}"
    return None


def _missing(files: Mapping[str, bytes], entry: OperationEntry) -> None:
    if entry.file not in files:
        raise PackageError(f"{entry.file}: listed in skill.json but missing from the package")


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
    The names and texts it reads are cached as a derivation's are, and emptied after it.
    """
    with gc_paused():
        return _load_skill(files, slug, auth, base_url, lazy)


def _load_skill(
    files: Mapping[str, bytes],
    slug: str | None,
    auth: AuthHeader | None,
    base_url: str | None,
    lazy: bool,
) -> Skill:
    if "skill.json" not in files:
        return hand_written(files, slug, auth, base_url)
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
        types_of(files)
        for entry in skill.operations:
            if not entry.tool:
                parse_file(files, entry.file)
        skill.tools  # noqa: B018 (builds and checks every tool)
    return skill
