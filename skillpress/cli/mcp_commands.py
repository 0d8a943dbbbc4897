"""`skillpress mcp`: skills served to an MCP client over stdio or streamable HTTP, one package or
every live one, each call through the same checks and gates as `skillpress call`."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from skillpress.cli.call_commands import (
    AUTH_KINDS,
    AuthEnv,
    AuthHeaderOpt,
    AuthKind,
    MaxBytes,
    MaxWait,
    Retries,
    Timeout,
)
from skillpress.cli.common import (
    fail,
    failures,
    open_ctx,
    say_base_url,
    settings,
)
from skillpress.cli.run_commands import model_chat, run_journal

__all__ = ["register"]


def _is_slug_url(value: str) -> bool:
    name, eq, url = value.partition("=")
    return bool(eq) and "://" not in name and url.startswith(("http://", "https://"))


def _slug_urls(given: list[str]) -> dict[str, str]:
    """`--base-url SLUG=URL` values (with --all), each skill at most once."""
    out: dict[str, str] = {}
    for value in given:
        if not _is_slug_url(value):
            fail(f"--base-url {value!r}: with --all, give SLUG=URL (once for each skill it moves)")
        slug, _, url = value.partition("=")
        if slug in out:
            fail(f"--base-url names {slug} twice")
        out[slug] = url
    return out


def mcp(
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="SLUG|DIR",
            help="a published skill's slug or a package directory; with --all, a folder of packages",
        ),
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="serve several skills: every live one (or every package folder under DIR, like the one skillpress follow keeps)",
        ),
    ] = False,
    eager: Annotated[
        bool, typer.Option("--eager", help="offer every operation as a tool up front (small APIs)")
    ] = False,
    deferred: Annotated[
        bool,
        typer.Option(
            "--deferred",
            help="list only the fixed tools (read, describe, call, load), even for an API small enough to serve its own tools directly",
        ),
    ] = False,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio | http (streamable HTTP)")
    ] = "stdio",
    port: Annotated[int, typer.Option("--port", help="port for --transport http")] = 8765,
    auth_env: AuthEnv = None,
    auth_header: AuthHeaderOpt = None,
    auth_kind: AuthKind = "apiKey",
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            help="where the API is (every request goes there, said on stderr); with --all, SLUG=URL once for each skill it moves",
        ),
    ] = None,
    timeout: Timeout = 30.0,
    max_response_bytes: MaxBytes = 4 * 1024 * 1024,
    retries: Retries = 2,
    max_wait: MaxWait = 30.0,
    unsafe: Annotated[
        bool,
        typer.Option(
            "--unsafe",
            help="let workflows of packages you did not publish call operations that write",
        ),
    ] = False,
) -> None:
    """Serve a skill over MCP: the body as instructions, operations loaded as tools on request."""
    # size: a typer command: its options are its signature, and --all's refusals
    from skillpress.app.base.package_dir import OutputDirError
    from skillpress.mcp.serving import (
        NoSkills,
        ServeOptions,
        catalog_server,
        serve,
        skill_server,
    )
    from skillpress.runtime.calling.execute import CallLimits
    from skillpress.runtime.package.model import PackageError

    if auth_kind not in AUTH_KINDS:
        fail(f"--auth-kind {auth_kind!r}: choose one of {', '.join(AUTH_KINDS)}")
    if transport not in ("stdio", "http"):
        fail(f"--transport {transport!r}: stdio or http")
    limits = CallLimits(timeout, max_response_bytes, retries, max_wait)
    options = ServeOptions(
        eager,
        limits,
        unsafe,
        lambda: settings().fetch_allow_private,
        approvals_url=lambda: settings().approvals_url,
        deferred=deferred,
    )
    given = list(base_url or [])
    if every:
        # a flag that redirects calls or credentials holds, or is refused: never ignored
        for flag, value in (
            ("--auth-env", auth_env),
            ("--auth-header", auth_header),
            ("--auth-kind", None if auth_kind == "apiKey" else auth_kind),
        ):
            if value is not None:
                fail(
                    f"{flag} names one skill's credential; with --all each skill reads its own"
                    " (the variable chosen at import, else <SLUG>_API_KEY): leave it out"
                )
        moved = _slug_urls(given)
        try:
            with failures():
                server = catalog_server(target, options, open_ctx, model_chat, run_journal(), moved)
        except (OutputDirError, PackageError, NoSkills) as exc:
            fail(str(exc))
        for slug, url in sorted(moved.items()):
            typer.echo(
                f"note: --base-url: every request of {slug} goes to {url.rstrip('/')}", err=True
            )
        what = "every skill"
    else:
        if target is None:
            fail("name a skill (its slug, or a package directory), or give --all")
        if len(given) > 1 or any(_is_slug_url(u) for u in given):
            fail("--base-url takes one URL for one skill (SLUG=URL is for --all)")
        one = given[0] if given else None
        try:
            with failures():
                skill, server = skill_server(
                    target,
                    auth_env,
                    auth_header,
                    auth_kind,
                    one,
                    options,
                    open_ctx,
                    model_chat,
                    run_journal(),
                )
        except (OutputDirError, PackageError) as exc:
            fail(str(exc))
        say_base_url(skill, one)
        what = skill.slug
    token = None
    if transport == "http":
        from skillpress.mcp.serving import MCP_TOKEN_ENV, http_token

        token, made = http_token(os.environ)
        typer.echo(
            f"serving {what} over MCP (streamable HTTP) at http://127.0.0.1:{port}/mcp;"
            " every request bears Authorization: Bearer "
            + (
                f"{token} (made for this run; set {MCP_TOKEN_ENV} to choose it)"
                if made
                else f"${MCP_TOKEN_ENV}"
            ),
            err=True,
        )
    serve(server, transport, port, token)


def register(app: typer.Typer) -> None:
    app.command()(mcp)
