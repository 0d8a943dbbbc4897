"""The second core: a forked child renders a share of a large API's files, with the same bytes."""

from __future__ import annotations

import json
import os

from skillpress.derive import DeriveOptions, derive_package
from skillpress.derive.split import fork_map


def _spec(ops: int) -> bytes:
    paths = {
        f"/things{i}/{{id}}": {
            "get": {
                "operationId": f"getThing{i}",
                "summary": f"Get thing {i}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
        for i in range(ops)
    }
    doc = {"openapi": "3.0.3", "info": {"title": "Things", "version": "1"}, "paths": paths}
    return json.dumps(doc).encode()


def test_a_forked_share_renders_the_same_package() -> None:
    data = _spec(400)
    alone = derive_package(data, DeriveOptions(processes=1))
    shared = derive_package(data, DeriveOptions(processes=2))
    assert shared.files == alone.files and shared.version_id == alone.version_id


def test_a_child_that_fails_is_replaced_by_computing_its_share_here() -> None:
    parent = os.getpid()

    def square(x: int) -> int:
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return x * x

    items = list(range(400))
    assert fork_map(square, items, 2).results() == [x * x for x in items]
    assert fork_map(square, items[:10], 2).pid is None  # too few to pay for a fork
