"""`skillpress up` and `skillpress demo`: the embedded stack (nats-server from its wheel,
SQLite records, a local blob directory) with nothing to configure."""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Annotated

import typer

from skillpress.cli.common import Progress, fail, failures, open_ctx, settings

if TYPE_CHECKING:
    from skillpress.platform.records import RecordStore
    from skillpress.platform.settings import Settings

__all__ = ["register"]


Host = Annotated[
    str | None,
    typer.Option("--host", help="address for the API and console (default 127.0.0.1)"),
]
Port = Annotated[
    int | None,
    typer.Option("--port", help="port for the API and console (default 8787; 0: any free one)"),
]


def up(
    host: Host = None,
    port: Port = None,
    console: Annotated[
        bool, typer.Option("--console/--no-console", help="serve the API and console too")
    ] = True,
    cluster: Annotated[
        int,
        typer.Option(
            "--cluster",
            help="run N nats-servers as a JetStream cluster on loopback, every stream on each (3 to try it out)",
        ),
    ] = 0,
) -> None:
    """Start the embedded stack, every worker, and the API and console, in the foreground (Ctrl-C stops it)."""
    chosen = settings()
    http = (host or chosen.api_host, chosen.api_port if port is None else port) if console else None
    _run(chosen, workers=True, http=http, what="up", cluster=cluster)


def serve(host: Host = None, port: Port = None) -> None:
    """Serve the API and console: on the configured NATS, beside a running `skillpress up`, or on
    the embedded stack with every worker in this process."""
    chosen = settings()
    _run(
        chosen,
        workers=False,
        http=(host or chosen.api_host, chosen.api_port if port is None else port),
        what="serve",
    )


def _run(
    chosen: Settings, *, workers: bool, http: tuple[str, int] | None, what: str, cluster: int = 0
) -> None:
    from skillpress.stack.run import run_stack

    def say(text: str) -> None:
        # for the person who started it, on standard output: the log (standard error) stays
        # one JSON event per line when it is JSON
        typer.echo(text)

    with failures():
        run_stack(chosen, workers=workers, http=http, what=what, say=say, cluster=cluster)


token_app = typer.Typer(help="Operator tokens for the API and console.", no_args_is_help=True)


@token_app.command("add")
def token_add(
    name: Annotated[str, typer.Argument(help="whose token: recorded as created_by")],
    role: Annotated[
        str,
        typer.Option(
            "--role",
            help="operator (decides, publishes, annotates, makes tokens) | runtime (reads live"
            " versions, asks for approvals and waits: a follower, an MCP server, a host)",
        ),
    ] = "operator",
) -> None:
    """Make a token (printed once; only its digest is kept in <home>/operator-tokens, mode
    0600). The first operator of a home needs none; after that, an operator's token in
    SKILLPRESS_OPERATOR_TOKEN makes each one."""
    import os

    from skillpress.app.base.roles import OPERATOR_TOKEN_ENV, add_token_as, tokens_file

    chosen = settings()
    with failures():
        secret = add_token_as(chosen, name, role, os.environ.get(OPERATOR_TOKEN_ENV))
    typer.echo(secret)
    where = "sign in with it on the console" if role == "operator" else "give it to the runtime"
    typer.echo(
        f"{'an' if role[0] in 'aeiou' else 'a'} {role} token for {name}; its digest is kept in"
        f" {tokens_file(chosen)}, the token is"
        f" shown this once: {where}",
        err=True,
    )


@token_app.command("list")
def token_list() -> None:
    """Every token by name, with its role and when it was made (never a token itself)."""
    from skillpress.app.base.roles import token_list as listed

    with failures():
        tokens = listed(settings())
    if not tokens:
        typer.echo("no tokens yet: the first start of `skillpress up` or `serve` makes one")
        return
    width = max(len(t.name) for t in tokens)
    for t in tokens:
        typer.echo(f"{t.name:<{width}}  {t.role:<8}  made {t.created}")


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, typer.Argument(help="whose token stops working")],
) -> None:
    """Revoke a token: a running API refuses it (and its sessions) from then on. An operator's
    decision: SKILLPRESS_OPERATOR_TOKEN holds yours."""
    import os

    from skillpress.app.base.roles import OPERATOR_TOKEN_ENV, revoke_as

    with failures():
        revoke_as(settings(), name, os.environ.get(OPERATOR_TOKEN_ENV))
    typer.echo(f"revoked {name}'s token", err=True)


def demo(
    as_json: Annotated[bool, typer.Option("--json", help="print what was made as JSON")] = False,
) -> None:
    """Run the pipeline on the bundled Hollowbrook spec: submit, derive, propose, publish; print the skill."""
    from skillpress.app.operator.dispatch import request_publish
    from skillpress.app.operator.submissions import submit_spec
    from skillpress.app.records.versions import (
        find_skill,
        manifest_of,
        version_files,
        version_for_outcome,
    )
    from skillpress.schemas.subjects import EVENTS

    spec = resources.files("skillpress.examples").joinpath("hollowbrook.yaml").read_bytes()
    ctx = open_ctx()
    shown = Progress(not as_json)
    try:
        with failures():
            _, seen = submit_spec(
                ctx, "hollowbrook", spec, None, None, 120.0, shown.on_event, created_by="demo"
            )
            shown.stop()
            subject, last = seen[-1].subject, seen[-1].body
            if subject == EVENTS.revision_rejected:
                fail(f"refused: {last['reason']}")
            skill = find_skill(ctx, "hollowbrook")
            version = version_for_outcome(ctx, skill, last)
            published = request_publish(
                ctx, "hollowbrook", version.id, False, 60.0, requested_by="demo"
            )
            files = version_files(ctx.blobs, version)
    finally:
        shown.stop()
        ctx.close()
    meta = manifest_of(files)
    assert meta is not None  # a derived version always has its skill.json
    stats = meta.stats
    result = {
        "skill": "hollowbrook",
        "skill_id": skill.id,
        "version_id": version.id,
        "outcome": subject.rsplit(".", 1)[-1],
        "published": published,
        "operations": stats.operations,
        "tools": stats.tools,
        "body_bytes": stats.body_bytes,
        "home": str(ctx.settings.home),
    }
    if as_json:
        typer.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    typer.echo(
        f"published hollowbrook version {version.id[:12]}: {stats.operations} operations,"
        f" {stats.tools} tools, body {stats.body_bytes:,} bytes; state in {ctx.settings.home}"
    )
    typer.echo(
        "  try: skillpress show hollowbrook create_booking.md | skillpress versions hollowbrook"
    )
    typer.echo("")
    typer.echo(files["body.md"].decode())


def migrate(
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="a schema to go to instead of this release's newest: down, to roll back to the"
            " release before (run it with the release that migrated up)",
        ),
    ] = None,
) -> None:
    """Bring the records' schema to this release's (the first step of an upgrade, before the
    new release's processes start; PostgreSQL processes never migrate on their own)."""
    from skillpress.app.base.context import private_home
    from skillpress.platform.records import RecordStore

    chosen = settings()
    private_home(chosen.home)
    store = RecordStore(chosen.records_url)
    try:
        with failures():
            if to is not None and _below_packs(store, to):
                _loosen_for_rollback()
            before = store.migrate(to)
    finally:
        store.close()
    target = to or before.head
    if before.current == target:
        typer.echo(f"the records at {store.safe_url} are at schema {target}: nothing to do")
    else:
        typer.echo(
            f"migrated the records at {store.safe_url} from schema {before.current or '(none)'}"
            f" to {target}"
        )


def _below_packs(store: RecordStore, to: str) -> bool:
    """Whether going to schema `to` leaves the schema at which a version's files may be in its
    derivation's pack alone (from the schema the records are at)."""
    from skillpress.app.records.versions import PACKED_SCHEMA

    current = store.schema().current
    return current is not None and current >= PACKED_SCHEMA > to


def _loosen_for_rollback() -> None:
    """Each proposed version's files as blobs of their own, as the release before packs reads
    them, before the schema goes below packs."""
    from skillpress.app.records.versions import loosen_packed_versions

    typer.echo(
        "writing each version's files as blobs of their own, as the older release reads them…"
    )
    written = loosen_packed_versions(open_ctx())
    typer.echo(f"  {written} version(s) written")


def reconcile(
    check: Annotated[
        bool, typer.Option("--check", help="only say what disagrees (exit 1 when anything does)")
    ] = False,
) -> None:
    """Make the live pointers runtimes follow (NATS) say what the records say is live: after
    NATS was restored from an older backup or lost. `serve` does the same as it starts."""
    import asyncio

    from skillpress.app.base.bus import running_up
    from skillpress.app.operator.reconcile import reconcile as reconciled
    from skillpress.app.operator.reconcile import said

    ctx = open_ctx()
    try:
        with failures():
            url = ctx.settings.nats_url or running_up(ctx.settings)
            found = asyncio.run(reconciled(ctx, url, repair=not check))
    finally:
        ctx.close()
    for d in found:
        typer.echo(said(d, repaired=not check))
    if not found:
        typer.echo("every live pointer says what the records say")
    elif check:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(up)
    app.command()(migrate)
    app.command()(reconcile)
    app.command()(serve)
    app.command()(demo)
    app.add_typer(token_app, name="token")
