"""Corpus packages derived once per test session: the sweeps that only read a package share it
(a test of derivation itself, such as determinism, derives afresh)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from services.derive import DeriveOptions, SkillPackage, derive_package

__all__ = ["derived"]


@lru_cache(maxsize=64)
def derived(spec: Path, base_url: str | None = None) -> SkillPackage:
    return derive_package(spec.read_bytes(), DeriveOptions(base_url=base_url))
