"""The fast layer: the application on SQLite and a local blob folder, no server started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillpress.app.base.context import AppContext, open_app
from skillpress.platform.settings import Settings


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[AppContext]:
    context = open_app(Settings(home=tmp_path / "home", refresh_interval=0))
    yield context
    context.close()
