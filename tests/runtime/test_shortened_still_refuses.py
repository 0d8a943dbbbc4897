"""A tool schema shortened to its budget still refuses what the spec refuses for a value's shape
(#42): a type cut past the depth kept keeps its own type, the fields it requires (their types
and bounds) and its union's branches, so `amount: "ten"` or an amount without its currency is
refused before anything is sent, as the spec would, where the cut type admitted any value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.host import SkillHost
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.package.skill import load_skill

MONEY = {
    "type": "object",
    "required": ["value", "currency"],
    "properties": {
        "value": {"type": "integer", "minimum": 0},
        "currency": {"type": "string", "minLength": 3, "maxLength": 3},
        "note": {"type": "string"},
    },
}


def _bulk(n: int) -> dict[str, Any]:
    """A type big enough that the tool cannot carry every type in detail."""
    return {
        "type": "object",
        "properties": {
            f"field_{n}_{i}": {"type": "string", "enum": [f"choice_{n}_{i}_{j}" for j in range(6)]}
            for i in range(30)
        },
    }


def _spec() -> bytes:
    schemas: dict[str, Any] = {f"Bulk{n}": _bulk(n) for n in range(30)}
    schemas["Money"] = MONEY
    schemas["Card"] = {
        "type": "object",
        "required": ["number"],
        "properties": {"type": {"const": "card"}, "number": {"type": "string"}},
    }
    schemas["Wallet"] = {
        "type": "object",
        "required": ["wallet"],
        "properties": {"type": {"const": "wallet"}, "wallet": {"type": "string"}},
    }
    schemas["Line"] = {
        "type": "object",
        "required": ["price"],
        "properties": {"price": {"$ref": "#/components/schemas/Money"}, "sku": {"type": "string"}},
    }
    schemas["Order"] = {
        "type": "object",
        "required": ["lines", "method"],
        "properties": {
            "lines": {"type": "array", "items": {"$ref": "#/components/schemas/Line"}},
            "method": {
                "oneOf": [
                    {"$ref": "#/components/schemas/Card"},
                    {"$ref": "#/components/schemas/Wallet"},
                ]
            },
            **{f"extra{n}": {"$ref": f"#/components/schemas/Bulk{n}"} for n in range(30)},
        },
    }
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Shop", "version": "1"},
        "servers": [{"url": "https://shop.example.test"}],
        "paths": {
            "/orders": {
                "post": {
                    "operationId": "createOrder",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["order", "total"],
                                    "properties": {
                                        "order": {"$ref": "#/components/schemas/Order"},
                                        "total": {"$ref": "#/components/schemas/Money"},
                                        "tip": {"$ref": "#/components/schemas/Money"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {"schemas": schemas},
    }
    return yaml.safe_dump(doc).encode()


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> SkillHost:
    files = derive_package(_spec(), DeriveOptions(slug="shop")).files
    root: Path = tmp_path_factory.mktemp("skills")
    write_package_dir(files, root / "shop")
    tool = load_skill(files).tool("create_order")
    assert tool.declaration is not None
    assert "not detailed" in str(tool.schema)  # the schema was shortened to fit
    return SkillHost(root, limits=CallLimits(retries=0))


GOOD: dict[str, Any] = {
    "order": {
        "lines": [{"price": {"value": 10, "currency": "EUR"}}],
        "method": {"type": "card", "number": "4111"},
    },
    "total": {"value": 10, "currency": "EUR"},
}


def test_a_value_of_the_right_shape_is_sent(host: SkillHost) -> None:
    prepared = host.prepare("shop_create_order", GOOD)
    assert prepared.url == "https://shop.example.test/orders"


@pytest.mark.parametrize(
    "change",
    [
        {"total": "ten euros"},  # a string where an object is declared
        {"total": {"value": 10}},  # an amount without its currency
        {"tip": {"value": 10, "currency": "EURO"}},  # an optional one past its bound
        {"order": {**GOOD["order"], "lines": [{"price": {"value": -1, "currency": "EUR"}}]}},
        {"order": {**GOOD["order"], "lines": ["a line"]}},
        {"order": {**GOOD["order"], "method": {"type": "card"}}},  # no branch takes it
    ],
)
def test_a_value_the_spec_refuses_is_refused_before_it_is_sent(
    host: SkillHost, change: dict[str, Any]
) -> None:
    with pytest.raises(CallRefused):
        host.prepare("shop_create_order", {**GOOD, **change})
