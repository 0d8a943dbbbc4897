"""A property readOnly by the schema its `$ref` names is never an argument (Airflow's DagRun
`state`, a readOnly DagState, was offered and sent: the judge found it)."""

from __future__ import annotations

import yaml

from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.format.frontmatter import parse_operation_file


def test_a_property_read_only_through_its_ref_is_not_offered() -> None:
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Runs", "version": "1"},
        "servers": [{"url": "https://runs.example.test"}],
        "components": {
            "schemas": {
                "State": {"type": "string", "enum": ["queued", "done"], "readOnly": True},
                "Run": {
                    "type": "object",
                    "required": ["run_id", "state"],
                    "properties": {
                        "run_id": {"type": "string"},
                        "state": {"$ref": "#/components/schemas/State"},
                        "note": {"type": "string"},
                    },
                },
            }
        },
        "paths": {
            "/runs": {
                "post": {
                    "operationId": "postRun",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Run"}}
                        },
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    files = derive_package(yaml.safe_dump(doc).encode(), DeriveOptions(slug="runs")).files
    _, decl = parse_operation_file("post_run.md", files["post_run.md"].decode())
    assert decl is not None
    assert set(decl.schema["properties"]) == {"run_id", "note"}
    assert decl.schema["required"] == ["run_id"]
