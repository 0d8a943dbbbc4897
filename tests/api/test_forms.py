"""The API's form handling in process (no server started): a pasted spec is taken up to
SKILLPRESS_MAX_SPEC_BYTES, not the form parser's own 1 MB part limit."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from fastapi.testclient import TestClient

from skillpress.api.app import create_app
from skillpress.api.auth import Operators
from skillpress.app.base.context import open_app
from skillpress.platform.settings import Settings

PETSTORE = Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"


def test_a_pasted_spec_over_a_megabyte_is_taken_like_an_uploaded_one(tmp_path: Path) -> None:
    ctx = open_app(Settings(home=tmp_path / "home"))
    try:
        app = create_app(ctx, Operators({"ops": "secret-token"}, b"k" * 32), None)
        doc = yaml.safe_load(PETSTORE.read_text())
        doc["info"]["description"] = "x" * 1_500_000
        with TestClient(app) as client:
            pasted = client.post(
                "/v1/skills/preview",
                data={"spec": json.dumps(doc), "slug": "bigpets"},
                headers={"Authorization": "Bearer secret-token"},
            )
        assert pasted.status_code == 200, pasted.text[:300]
        assert (pasted.json()["slug"], pasted.json()["operations"]) == ("bigpets", 4)
    finally:
        ctx.close()
