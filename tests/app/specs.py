"""Small specs the tests build on: one payment operation whose amount is an object (value, currency)."""

from __future__ import annotations

from typing import Any


def money_spec(server: str) -> dict[str, Any]:
    amount = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "currency": {"type": "string"}},
    }
    body = {"type": "object", "required": ["amount"], "properties": {"amount": amount}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pay", "version": "1"},
        "servers": [{"url": server}],
        "paths": {
            "/payments": {
                "post": {
                    "operationId": "createPayment",
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {"201": {"description": "made"}},
                }
            }
        },
    }
