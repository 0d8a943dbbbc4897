"""skillpress: an API's OpenAPI document as an agent skill.

The public Python surface for agent hosts is here, one import away::

    from skillpress import SkillHost

The project's folders are installed under this one name (`skillpress.services`, the derivation
core, runtime, application layer, faces and platform shell; `skillpress.schemas`, the subject
catalogue, event models and records), so nothing generic like `services` lands in an
environment. Names below are imported when first used, so `import skillpress` (the command
line's first import) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillpress.services.app.serving.calling import api_gatekeeper
    from skillpress.services.errors import Permanent, Retryable, SkillpressError, Unavailable
    from skillpress.services.host import SkillHost
    from skillpress.services.runtime.calls import GateClosed, Gatekeeper
    from skillpress.services.runtime.execute import CallResult, ExecutionFailed
    from skillpress.services.runtime.skill import PackageError, UnknownOperation
    from skillpress.services.runtime.translate import CallRefused, PreparedRequest

_HOMES = {
    "SkillHost": "skillpress.services.host",
    "api_gatekeeper": "skillpress.services.app.serving.calling",
    "SkillpressError": "skillpress.services.errors",
    "Permanent": "skillpress.services.errors",
    "Retryable": "skillpress.services.errors",
    "Unavailable": "skillpress.services.errors",
    "GateClosed": "skillpress.services.runtime.calls",
    "Gatekeeper": "skillpress.services.runtime.calls",
    "CallResult": "skillpress.services.runtime.execute",
    "ExecutionFailed": "skillpress.services.runtime.execute",
    "PackageError": "skillpress.services.runtime.skill",
    "UnknownOperation": "skillpress.services.runtime.skill",
    "CallRefused": "skillpress.services.runtime.translate",
    "PreparedRequest": "skillpress.services.runtime.translate",
}

__all__ = [
    "SkillHost",
    "api_gatekeeper",
    "SkillpressError",
    "Permanent",
    "Retryable",
    "Unavailable",
    "GateClosed",
    "Gatekeeper",
    "CallResult",
    "ExecutionFailed",
    "PackageError",
    "UnknownOperation",
    "CallRefused",
    "PreparedRequest",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'skillpress' has no attribute {name!r}")
    return getattr(import_module(home), name)
