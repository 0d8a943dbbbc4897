"""Defensive accessors for untrusted document values: the right type or an empty one."""

from __future__ import annotations

from typing import Any

__all__ = ["as_list", "as_dict", "as_str"]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""
