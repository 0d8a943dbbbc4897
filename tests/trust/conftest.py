"""The fixtures every attacker-side test of the trust boundary shares: a home on each record
store (SQLite, and PostgreSQL on the session's server), and an API that records what reaches it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillpress.platform.settings import Settings
from tests.trust.harness import STORES, Recorder, recorder, settings_for


@pytest.fixture(params=STORES)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return settings_for(request, tmp_path / "home")


@pytest.fixture
def pay_api() -> Iterator[Recorder]:
    with recorder() as made:
        yield made
