"""Shared fixtures: the spec corpus and the real servers (started once per session, on first use)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings as hypothesis_settings

from tests.servers import Running, ServerPool

if TYPE_CHECKING:
    from skillpress.platform.embedded_nats import NatsServer

# CI explores the same examples every run (a red CI is never a roll of the dice); a developer's
# run explores new ones each time
hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

FIXTURES = Path(__file__).parent / "fixtures"
SPECS = FIXTURES / "specs"


def corpus() -> list[Path]:
    return sorted(
        p
        for p in [*SPECS.iterdir(), *(FIXTURES / "standins").iterdir()]
        if p.suffix in (".json", ".yaml", ".yml") or p.name.endswith(".json.gz")
    )


def spec_bytes(path: Path) -> bytes:
    """A fixture spec's bytes (a large one is kept gzip-compressed)."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        import gzip

        return gzip.decompress(data)
    return data


GITHUB = SPECS / "github.json.gz"


@pytest.fixture(autouse=True)
def _the_fast_layer_runs_no_command_line(request: pytest.FixtureRequest) -> Iterator[None]:
    """The one rule for what is `integration`, held while every test runs: a test that runs the
    `skillpress` command line as a process (a CLI end to end, an MCP server over stdio) is marked
    `integration` (its module's pytestmark, or its own); the fast layer calls the application
    layer, or the command in-process (typer's CliRunner)."""
    if request.node.get_closest_marker("integration") is not None:
        yield
        return
    import subprocess

    real = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        argv = [str(a) for a in (args if isinstance(args, list | tuple) else [args])]
        if any("skillpress.cli.main" in a or a.endswith("/skillpress") for a in argv):
            raise AssertionError(
                f"{request.node.nodeid} runs the command line as a process: mark it `integration`"
            )
        real(self, args, *rest, **kw)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command line run in-process (typer's CliRunner) configures logging for itself: at its
    quieter level, into the stream it captured and then closed. Each test leaves structlog as it
    found it, so no later test loses its log events (or writes them to a closed file)."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(scope="session")
def server_pool(request: pytest.FixtureRequest) -> Iterator[ServerPool]:
    pool = ServerPool()
    yield pool
    pool.close()


_USED: list[str] = []

# a test that starts real servers carries the `integration` marker, one that sweeps the real specs
# (or sizes like theirs) `corpus`, explicitly: a module's `pytestmark`, or the test's own marker.
# Asking for a server fixture without it is refused here, so no slow test lands in the fast layer.
_SERVER_FIXTURES = {"server_pool", "nats_url", "postgres_url", "s3_server", "nats_server"}


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two processes, as measured on the two-core machines CI runs on (each starts its
    own servers on first use), or SKILLPRESS_TEST_WORKERS."""
    return int(os.environ.get("SKILLPRESS_TEST_WORKERS") or 2)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the corpus tests are the longest (the sweep's sample alone minutes): started first, so the
    # processes end together rather than one waiting out the last long test
    items.sort(key=lambda item: item.get_closest_marker("corpus") is None)
    unmarked = [
        item.nodeid
        for item in items
        if set(getattr(item, "fixturenames", ())) & _SERVER_FIXTURES
        and item.get_closest_marker("integration") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            f"{unmarked[0]} starts real servers: mark it `integration` (its module's pytestmark)"
        )


def _announce(request: pytest.FixtureRequest, running: Running) -> None:
    from skillpress.platform.nats_urls import shown_url

    shown = shown_url(running.address) if running.address.startswith("nats") else running.address
    _USED.append(f"{running.name} at {shown}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _USED:
        terminalreporter.section("real servers this run used (all stopped)")
        for line in _USED:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def nats_url(server_pool: ServerPool, request: pytest.FixtureRequest) -> str:
    running = server_pool.nats()
    _announce(request, running)
    return running.address


@pytest.fixture(scope="session")
def postgres_url(server_pool: ServerPool, request: pytest.FixtureRequest) -> str:
    running = server_pool.postgres()
    _announce(request, running)
    return running.address


@pytest.fixture(scope="session")
def s3_server(server_pool: ServerPool, request: pytest.FixtureRequest) -> tuple[str, str, str]:
    running, access, secret = server_pool.s3()
    _announce(request, running)
    return running.address, access, secret


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A nats-server of the test's own (one it may stop, cut or take the stream from)."""
    from skillpress.platform.embedded_nats import NatsServer

    server = NatsServer(tmp_path / "nats").start()
    yield server
    server.kill()
