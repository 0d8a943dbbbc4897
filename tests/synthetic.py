"""Synthetic OpenAPI documents of any size, shaped like large real ones: many small tags (so
tags fail as a grouping), resources with sub-resources, reads and writes with bodies."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["synthetic_spec"]

_VERBS = ("list", "get", "create", "update", "delete")


def synthetic_spec(operations: int, per_tag: int = 8, roots: bool = False) -> bytes:
    """`roots`: every resource at the top of the path (no areas), so paths fail as tags do."""
    paths: dict[str, dict[str, Any]] = {}
    n = 0
    resource = 0
    while n < operations:
        for sub in range(3):
            area = "" if roots else f"/area{resource // 40}"
            base = f"/v1{area}/res{resource}/sub{sub}"
            tag = f"Tag {n // per_tag}"
            for verb in _VERBS:
                if n >= operations:
                    break
                path = base if verb in ("list", "create") else base + "/{id}"
                method = {"list": "get", "get": "get", "create": "post", "update": "patch"}.get(
                    verb, "delete"
                )
                op: dict[str, Any] = {
                    "operationId": f"{verb}Res{resource}Sub{sub}",
                    "summary": f"{verb.capitalize()} sub-resource {sub} of resource {resource}.",
                    "tags": [tag],
                    "responses": {"200": {"description": "ok"}},
                }
                if "{id}" in path:
                    op["parameters"] = [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ]
                if method in ("post", "patch"):
                    op["requestBody"] = {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"name": {"type": "string"}},
                                }
                            }
                        }
                    }
                paths.setdefault(path, {})[method] = op
                n += 1
        resource += 1
    spec = {
        "openapi": "3.0.3",
        "info": {"title": f"Synthetic {operations}", "version": "1"},
        "servers": [{"url": "https://synthetic.test"}],
        "paths": paths,
    }
    return json.dumps(spec).encode()
