"""The pure derivation core: from an OpenAPI document to a skill package.

Nothing here touches the network, the filesystem, a database or a message broker; every
function takes data and returns data. `derive_package` is the entry point. Its names are
imported on first use, so a runtime that needs one small module does not load the whole core.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillpress.derive.package import derive_package
    from skillpress.derive.package_types import DeriveOptions, SkillPackage
    from skillpress.format.errors import SpecRefused
    from skillpress.format.load import LoadLimits, load_document

__all__ = [
    "DeriveOptions",
    "LoadLimits",
    "SkillPackage",
    "SpecRefused",
    "derive_package",
    "load_document",
]

_HOMES = {
    "DeriveOptions": "skillpress.derive.package_types",
    "SkillPackage": "skillpress.derive.package_types",
    "derive_package": "skillpress.derive.package",
    "LoadLimits": "skillpress.format.load",
    "load_document": "skillpress.format.load",
    "SpecRefused": "skillpress.format.errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'skillpress.derive' has no attribute {name!r}")
    return getattr(import_module(home), name)
