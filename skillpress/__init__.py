"""skillpress: an API's OpenAPI document as an agent skill.

The public Python surface for agent hosts is here, one import away::

    from skillpress import SkillHost

Every module of the project lives under this one name (the derivation core, the runtime, the
application layer, the faces, the platform shell and the schemas), so nothing generic like
`services` lands in an environment. Names below are imported when first used, so
`import skillpress` (the command line's first import) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillpress.app.serving.gatekeepers import api_gatekeeper
    from skillpress.errors import Permanent, Retryable, SkillpressError, Unavailable
    from skillpress.host import SkillHost
    from skillpress.runtime.calling.calls import GateClosed, Gatekeeper
    from skillpress.runtime.calling.request import CallRefused, ExecutionFailed, PreparedRequest
    from skillpress.runtime.calling.results import CallResult
    from skillpress.runtime.package.model import PackageError, UnknownOperation

_HOMES = {
    "SkillHost": "skillpress.host",
    "api_gatekeeper": "skillpress.app.serving.gatekeepers",
    "SkillpressError": "skillpress.errors",
    "Permanent": "skillpress.errors",
    "Retryable": "skillpress.errors",
    "Unavailable": "skillpress.errors",
    "GateClosed": "skillpress.runtime.calling.calls",
    "Gatekeeper": "skillpress.runtime.calling.calls",
    "CallResult": "skillpress.runtime.calling.results",
    "ExecutionFailed": "skillpress.runtime.calling.request",
    "PackageError": "skillpress.runtime.package.model",
    "UnknownOperation": "skillpress.runtime.package.model",
    "CallRefused": "skillpress.runtime.calling.request",
    "PreparedRequest": "skillpress.runtime.calling.request",
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
