"""The pure derivation core: from an OpenAPI document to a skill package.

Nothing here touches the network, the filesystem, a database or a message broker; every
function takes data and returns data. `derive_package` is the entry point.
"""

from services.derive.errors import SpecRefused
from services.derive.load import LoadLimits, load_document
from services.derive.package import DeriveOptions, SkillPackage, derive_package

__all__ = [
    "DeriveOptions",
    "LoadLimits",
    "SkillPackage",
    "SpecRefused",
    "derive_package",
    "load_document",
]
