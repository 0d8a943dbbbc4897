"""The fixtures every attacker-side test of the trust boundary shares: a home on each record
store (SQLite, and PostgreSQL on the session's server), and an API that records what reaches it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillpress.platform.settings import Settings
from tests.fake_api import FakeApi, fake_api
from tests.trust.harness import STORES, settings_for


@pytest.fixture(params=STORES)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return settings_for(request, tmp_path / "home")


@pytest.fixture
def pay_api() -> Iterator[FakeApi]:
    with fake_api() as made:
        yield made
