"""A hand-written package (body.md and operation files) or an Agent Skills folder (SKILL.md,
its references and tools.json) loaded as a skill, and the metadata keys an export writes into
SKILL.md so the folder loads back as the same skill."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from skillpress.format.keys import unknown_keys
from skillpress.format.names import slugify, tool_name
from skillpress.runtime.package.model import AuthHeader, OperationEntry, PackageError, Skill, Tool
from skillpress.runtime.package.reading import (
    SchemaCheck,
    base_parts,
    build_tool,
    credential_env,
    front_of,
    json_file,
    parse_file,
    rooted,
    types_of,
)

_NOT_OPERATIONS = ("body.md", "SKILL.md", "README.md")


BODY_KEYS = ("name", "auth")  # a hand-written body.md's frontmatter


AUTH_KEYS = ("header", "kind", "in")


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
        env=credential_env(
            raw.get("env"), f"SKILL.md: metadata.{META_AUTH_MORE}.{where}.env", slug
        ),
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


def _agent_skill(
    files: Mapping[str, bytes], slug: str | None, auth: AuthHeader | None
) -> tuple[str | None, AuthHeader | None, bool, dict[str, AuthHeader]]:
    """An Agent Skills folder's name and credential header, from SKILL.md's frontmatter (and
    whether the name is the slug an export recorded)."""
    front = front_of(files, "SKILL.md").frontmatter
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
        env = credential_env(meta.get(META_AUTH_ENV), f"SKILL.md: metadata.{META_AUTH_ENV}", bound)
        auth = AuthHeader(header, kind, env=env)
        auth, others = _more(meta, auth, bound)
        return slug, auth, exact, others
    return slug, auth, exact, {}


def hand_written(
    files: Mapping[str, bytes], slug: str | None, auth: AuthHeader | None, base_url: str | None
) -> Skill:
    # size: body.md, SKILL.md and the operation files of a hand-written folder, read in order
    types = types_of(files)
    title = slug or ""
    exact = False  # a slug an export recorded is the skill's own: not made again from words
    others: dict[str, AuthHeader] = {}  # by scheme: the credentials some operations take instead
    if "body.md" not in files and "SKILL.md" in files:
        slug, auth, exact, others = _agent_skill(files, slug, auth)
    if "body.md" in files:
        body = front_of(files, "body.md")
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
    root, base_host = base_parts(base_url) if base_url else (None, None)
    checked = SchemaCheck(types)
    tools: list[Tool] = []
    for path in sorted(files):
        if not path.endswith(".md") or path.rsplit("/", 1)[-1] in _NOT_OPERATIONS:
            continue
        _, decl = parse_file(files, path)
        if decl is None:
            continue
        tool = build_tool(tool_name(slug, decl.name), decl, types, checked)
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
            declaration=rooted(t.declaration, root),
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
    contract = json_file(files, "tools.json", [])
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
