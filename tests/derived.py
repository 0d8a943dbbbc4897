"""Corpus packages derived once per test session: the sweeps that only read a package share it
(a test of derivation itself, such as determinism, derives afresh)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from skillpress.derive import DeriveOptions, SkillPackage, derive_package

__all__ = ["derived", "spread"]

T = TypeVar("T")


@lru_cache(maxsize=64)
def derived(spec: Path, base_url: str | None = None) -> SkillPackage:
    from tests.conftest import spec_bytes

    return derive_package(spec_bytes(spec), DeriveOptions(base_url=base_url))


SAMPLE = (
    200  # tools per spec a sweep exercises: all of a mid-size API, an even spread of a huge one
)


def spread(items: tuple[T, ...] | list[T], most: int = SAMPLE) -> list[T]:
    """At most `most` items, evenly spread over `items` (deterministic: the same every run)."""
    if len(items) <= most:
        return list(items)
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]
