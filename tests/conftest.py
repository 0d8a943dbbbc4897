"""Shared fixtures: the spec corpus and the real servers (started once per session, on first use)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from tests.servers import Running, ServerPool

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


@pytest.fixture(scope="session")
def server_pool(request: pytest.FixtureRequest) -> Iterator[ServerPool]:
    pool = ServerPool()
    yield pool
    pool.close()


_USED: list[str] = []

# a test needs real servers (and is marked `integration`) when it asks for one of these fixtures,
# runs a parameter on one, or sits in a module that starts them itself (CLI stacks, Prism)
_SERVER_FIXTURES = {"server_pool", "nats_url", "postgres_url", "s3_server", "nats_server"}
_SERVER_PARAMS = {"postgresql", "s3"}
_SERVER_MODULES = {
    "test_nats.py",
    "test_pipeline_cli.py",
    "test_prism_conformance.py",
    "test_up.py",
    "test_api.py",
    "test_console_browser.py",
    "test_dogfood.py",
}


def _real_spec(value: object) -> bool:
    """A parameter naming one of the real specs (a path into the fixtures, or a spec's file name)."""
    if isinstance(value, Path):
        return FIXTURES in value.parents
    if not isinstance(value, str) or len(value) > 200 or "\n" in value or "/" in value:
        return False
    return (SPECS / value).is_file()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        values = list(callspec.params.values()) if callspec is not None else []
        params = set(map(str, values))
        # a sweep over the real specs (or sizes like theirs): its own layer, beside the fast one
        if any(_real_spec(v) for v in values):
            item.add_marker(pytest.mark.corpus)
        if (
            fixtures & _SERVER_FIXTURES
            or params & _SERVER_PARAMS
            or item.path.name in _SERVER_MODULES
        ):
            item.add_marker(pytest.mark.integration)


def _announce(request: pytest.FixtureRequest, running: Running) -> None:
    _USED.append(f"{running.name} at {running.address}")


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
