"""What every command shares: the one-line failure, common options, opening the application."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from skillpress.cli.failing import fail, failures

if TYPE_CHECKING:
    from skillpress.app.base.bus import Event
    from skillpress.app.base.context import AppContext
    from skillpress.platform.settings import Settings
    from skillpress.runtime.package.model import Skill

__all__ = [
    "AsJson",
    "By",
    "Progress",
    "Timeout",
    "fail",
    "failures",
    "listing",
    "load_target",
    "open_ctx",
    "quiet_logs",
    "settings",
]

AsJson = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
Timeout = Annotated[float, typer.Option("--timeout", help="seconds to wait for the pipeline")]
By = Annotated[str, typer.Option("--by", help="who is making the change (recorded with it)")]


def settings() -> Settings:
    """The settings from the environment; one that cannot be used stops the command in a line."""
    from skillpress.platform.settings import load_settings

    with failures():
        return load_settings()


def quiet_logs(settings: Settings) -> None:
    from skillpress.platform.logging import configure_logging

    level = "warning" if settings.log_level == "info" else settings.log_level
    configure_logging(settings.log_format, level)


def open_ctx(given: Settings | None = None) -> AppContext:
    """The application context for this command (logs quiet unless asked for); with no NATS
    configured or up, a use-case runs the stack's embedded pipeline for its duration."""
    from skillpress.app.base.context import open_app
    from skillpress.stack.workers import embedded_pipeline

    chosen = given or settings()
    quiet_logs(chosen)
    with failures():
        return open_app(chosen, embedded=embedded_pipeline)


def load_target(
    target: str,
    auth_header: str | None,
    auth_kind: str,
    base_url: str | None,
    *,
    lazy: bool = False,
) -> tuple[Skill, Mapping[str, bytes]]:
    """A package directory, or a skill's live version from the records and blob store, loaded
    (`lazy`: each tool built when first asked for)."""
    from skillpress.app.base.package_dir import OutputDirError
    from skillpress.app.serving.calling import open_target
    from skillpress.runtime.package.model import PackageError

    try:
        with failures():
            skill, files = open_target(
                target, auth_header, auth_kind, base_url, open_ctx, lazy=lazy
            )
    except (OutputDirError, PackageError) as exc:
        fail(str(exc))
    say_base_url(skill, base_url)
    return skill, files


def say_base_url(skill: Skill, base_url: str | None) -> None:
    """A base URL given on the command line moves every request (never silently): said once."""
    if base_url:
        typer.echo(
            f"note: --base-url: every request of {skill.slug} goes to {base_url.rstrip('/')}"
            f"{' (its credential too)' if skill.auth else ''}, not to the hosts the skill declares",
            err=True,
        )


class Progress:
    """Stage lines on stderr as the events arrive (a spinner on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.monotonic()
        self.status: Any = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status("submitted; waiting for the fetch worker…")
            self.status.start()

    def on_event(self, event: Event) -> None:
        from skillpress.app.operator.submissions import describe_event

        text, next_wait = describe_event(event)
        if text != event.subject:
            self.line(text, next_wait)

    def line(self, text: str, next_wait: str | None = None) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        if self.status is not None:
            self.status.console.print(f"  [green]✓[/green] {text} [dim]({elapsed:.2f} s)[/dim]")
            if next_wait:
                self.status.update(next_wait)
        else:
            typer.echo(f"  ✓ {text} ({elapsed:.2f} s)", err=True)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


def listing(
    rows: Sequence[Mapping[str, Any]],
    as_json: bool,
    empty: str,
    line: Callable[[Mapping[str, Any]], str],
) -> None:
    """A list as JSON, or a line per row (`empty` when there is none)."""
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo(empty)
    for row in rows:
        typer.echo(line(row))
