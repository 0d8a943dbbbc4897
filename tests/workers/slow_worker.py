"""`skillpress worker NAME…` whose every handler first sleeps `SLOW_WORKER_DELAY` seconds: the
failure drills' slow replica (a worker that holds a message, killed while it does). A test-only
wrapper, so no delay setting sits in the production delivery path."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from skillpress.workers import delivery

DELAY = float(os.environ.get("SLOW_WORKER_DELAY", "30"))
_run = delivery._through_outages


async def _slowly(*args: Any) -> Any:
    await asyncio.sleep(DELAY)
    return await _run(*args)


def slowed(delay: float) -> Any:
    """A stand-in for `delivery._through_outages` that sleeps `delay` seconds first."""

    async def run(*args: Any) -> Any:
        await asyncio.sleep(delay)
        return await _run(*args)

    return run


if __name__ == "__main__":
    delivery._through_outages = _slowly  # type: ignore[assignment]
    from skillpress.cli.main import main

    sys.argv = ["skillpress", "worker", *sys.argv[1:]]
    main()
