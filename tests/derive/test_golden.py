"""Golden packages: the exact files derived from five real specs (4 to 203 operations).

Regenerate after an intended change with `SKILLPRESS_UPDATE_GOLDEN=1 pytest tests/derive/test_golden.py`
and review the diff like code.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from skillpress.derive import derive_package

GOLDEN = Path(__file__).parents[1] / "golden"
SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
CASES = [
    "oai-petstore-expanded.yaml",
    "oai-petstore.swagger2.yaml",
    "twilio-insights-v2.json",
    "jupyter-server.swagger2.yaml",
    "harbor.swagger2.yaml",
]


@pytest.mark.parametrize("spec", CASES)
def test_package_matches_golden_files(spec: str) -> None:
    package = derive_package((SPECS / spec).read_bytes())
    folder = GOLDEN / spec.rsplit(".", 1)[0]
    if os.environ.get("SKILLPRESS_UPDATE_GOLDEN") == "1":
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, data in package.files.items():
            (folder / name).write_bytes(data)
    expected = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    assert sorted(package.files) == sorted(expected), "the set of files changed"
    for name, data in package.files.items():
        assert data.decode() == expected[name].decode(), f"{name} differs from its golden copy"
