"""`serve` with production settings and no NATS (#44.8): refused in one line, before anything
starts, and never "skillpress stopped." for a server that never started."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_up import home_env
from tests.cli_process import skillpress

pytestmark = pytest.mark.integration  # runs the command line as processes


@pytest.mark.parametrize(
    ("settings", "shared"),
    [
        ({"database_url": "postgresql://skillpress@db.internal/skillpress"}, "PostgreSQL"),
        ({"s3_endpoint": "s3.internal:9000"}, "S3"),
    ],
)
def test_serve_on_shared_stores_without_nats_is_refused_in_a_line(
    tmp_path: Path, settings: dict[str, str], shared: str
) -> None:
    done = skillpress(
        "serve", "--port", "0", env=home_env(tmp_path / "home", **settings), replace_env=True
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: serve has records or blobs on shared servers ({shared}) but no"
        " SKILLPRESS_NATS_URL: set it to the pipeline's NATS (without it, serve would start a"
        " private NATS and workers no one else sees)"
    ]
    assert "skillpress stopped." not in done.stdout
