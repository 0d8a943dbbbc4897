"""Serving skills over MCP: one skill (a published one, or a package directory that
`skillpress follow` may swap to a new version under it) or several behind one server, each with
its own credential variable, gates and workflow runs, and the transports they are served on.
The command line parses its options, calls one of these, and serves what it gets."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillpress.app.serving.calling import credential_for, open_target
from skillpress.app.serving.followers import folder_stamp, followed_version
from skillpress.app.serving.gatekeepers import Desk, agent_gatekeeper, desk_opener
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.package.model import Skill

if TYPE_CHECKING:
    from skillpress.app.base.context import AppContext
    from skillpress.mcp.catalog import Loaded
    from skillpress.runtime.workflows.model_runs import Chat
    from skillpress.runtime.workflows.run_log import RunJournal

__all__ = [
    "MCP_TOKEN_ENV",
    "NoSkills",
    "ServeOptions",
    "catalog_server",
    "http_token",
    "serve",
    "skill_server",
]


@dataclass(frozen=True)
class ServeOptions:
    """How a server's calls go: every operation listed up front (`eager`), or only the fixed
    tools (`deferred`: by default a tiny API is served directly), the limits of one
    call, whether workflows of packages the operator did not publish run sandboxed, and whether
    a credential's token URL may be on a private network (SKILLPRESS_FETCH_ALLOW_PRIVATE: asked
    only of a skill that sends a credential, so a server of others reads no settings for it)."""

    eager: bool
    limits: CallLimits
    unsafe: bool
    allow_private_token_url: Callable[[], bool] = lambda: False
    # gated calls settled through this skillpress API's approvals (SKILLPRESS_APPROVALS_URL,
    # with the runtime's token), else in the records here: asked at the first gated call
    approvals_url: Callable[[], str | None] = lambda: None
    # the fixed tools listed, never the skill's own, even for an API small enough to serve
    # them directly
    deferred: bool = False

    def desk(self, open_ctx: Callable[[], AppContext]) -> Callable[[], Desk]:
        return lambda: desk_opener(self.approvals_url(), open_ctx)()

    def credential(self, skill: Skill, auth_env: str | None) -> Credential | None:
        allow = skill.auth is not None and self.allow_private_token_url()
        return credential_for(skill, auth_env, allow)


class NoSkills(LookupError):
    """Nothing to serve: the message says what to do."""


def skill_server(
    target: str,
    auth_env: str | None,
    auth_header: str | None,
    auth_kind: str,
    base_url: str | None,
    options: ServeOptions,
    open_ctx: Callable[[], AppContext],
    model: Callable[[], Chat | None],
    runs: RunJournal,
) -> tuple[Skill, Any]:
    """One skill's MCP server (and the skill): served from a package directory, the next request
    after a follower swapped the folder uses the new version; a package from elsewhere runs its
    workflows sandboxed unless `unsafe`."""
    from skillpress.mcp.server import build_mcp_server

    skill, files = open_target(target, auth_header, auth_kind, base_url, open_ctx, lazy=True)
    folder = Path(target)
    stamp = [folder_stamp(folder)]

    def reload() -> Loaded | None:
        """The skill anew when `skillpress follow` swapped its folder to another version."""
        now = folder_stamp(folder)
        if now == stamp[0]:
            return None
        try:
            fresh, fresh_files = open_target(
                target, auth_header, auth_kind, base_url, open_ctx, lazy=True
            )
        except (SystemExit, Exception):  # noqa: BLE001 (a half-swapped folder: keep serving the old)
            return None
        stamp[0] = now
        return fresh, fresh_files, followed_version(folder)

    server = build_mcp_server(
        skill,
        files,
        eager=options.eager,
        deferred=options.deferred,
        credential=options.credential(skill, auth_env),
        limits=options.limits,
        gatekeeper=agent_gatekeeper(options.desk(open_ctx), skill.slug),
        reload=reload if folder.is_dir() else None,
        version=followed_version(folder),
        sandboxed=folder.is_dir() and not options.unsafe,
        model=model,
        runs=runs,
    )
    return skill, server


def catalog_server(
    target: str | None,
    options: ServeOptions,
    open_ctx: Callable[[], AppContext],
    model: Callable[[], Chat | None],
    runs: RunJournal,
    base_urls: Mapping[str, str] | None = None,
) -> Any:
    """Several skills behind one MCP server: every live one, or every package folder under
    `target` (as `skillpress follow` keeps them), each with its own credential variable and
    gate; one published or added during the session is served from the next request on. A
    skill named in `base_urls` (by its slug, or its folder) calls there and nowhere else.
    NoSkills when there is none, or when `base_urls` names a skill not served."""
    from skillpress.app.serving.catalog import folder_catalog, live_catalog
    from skillpress.mcp.server import build_catalog_server

    moved = dict(base_urls or {})
    catalog = folder_catalog(Path(target), moved) if target else live_catalog(open_ctx(), moved)
    skills = catalog.current()
    if not skills:
        raise NoSkills(
            f"no skill package under {target}"
            if target
            else "no skill is live yet: publish one first (skillpress versions SLUG)"
        )
    stray = sorted(set(moved) - set(skills))
    if stray:
        raise NoSkills(
            f"--base-url names {stray[0]}, which is not served here (one of"
            f" {', '.join(sorted(skills))}): a redirect that cannot be honoured is refused"
        )
    return build_catalog_server(
        skills,
        eager=options.eager,
        credentials=lambda slug, sk: options.credential(sk, None),
        limits=options.limits,
        gatekeepers=lambda slug: agent_gatekeeper(options.desk(open_ctx), slug),
        refresh=catalog.changed,
        sandboxed=target is not None and not options.unsafe,
        model=model,
        runs=runs,
    )


# the bearer token an MCP server over HTTP takes, when given (else one is made and printed)
MCP_TOKEN_ENV = "SKILLPRESS_MCP_TOKEN"


def http_token(environ: Mapping[str, str]) -> tuple[str, bool]:
    """(the bearer token an MCP server over HTTP answers to, whether it was made now): the one
    in SKILLPRESS_MCP_TOKEN, or a new one for this run (printed for the client it is for)."""
    import secrets

    given = (environ.get(MCP_TOKEN_ENV) or "").strip()
    return (given, False) if given else (secrets.token_urlsafe(32), True)


def serve(server: Any, transport: str, port: int, token: str | None = None) -> None:
    """Serve over stdio, or streamable HTTP at http://127.0.0.1:PORT/mcp (answering only
    requests that bear `token`), until stopped."""
    from skillpress.mcp.transports import serve_http, serve_stdio

    if transport == "stdio":
        asyncio.run(serve_stdio(server))
    elif transport == "http":
        if not token:
            raise ValueError("an MCP server over HTTP needs its bearer token")
        serve_http(server, "127.0.0.1", port, token)
    else:
        raise ValueError(f"--transport {transport!r}: stdio or http")
