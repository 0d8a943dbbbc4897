"""The sweep's fixed sample: a list of directory paths, one per line, `#` for comments."""

from __future__ import annotations

from pathlib import Path

__all__ = ["SAMPLE", "sample"]

SAMPLE = Path(__file__).with_name("sample.txt")


def sample(path: Path = SAMPLE) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]
