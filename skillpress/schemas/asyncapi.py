"""Export the contracts for non-Python subscribers: an AsyncAPI 3.0 document (`just asyncapi`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skillpress.schemas.events import MESSAGES
from skillpress.schemas.subjects import STREAM

__all__ = ["asyncapi_document", "main"]


def asyncapi_document() -> dict[str, Any]:
    channels: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    for subject, model in sorted(MESSAGES.items()):
        key = subject.replace(".", "_")
        messages[model.__name__] = {"name": model.__name__, "payload": model.model_json_schema()}
        channels[key] = {
            "address": subject,
            "messages": {model.__name__: {"$ref": f"#/components/messages/{model.__name__}"}},
        }
        operations[f"on_{key}"] = {"action": "receive", "channel": {"$ref": f"#/channels/{key}"}}
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "skillpress",
            "version": "0.1.0",
            "description": f"Events and commands on the JetStream stream {STREAM}. Payloads carry ids and small summaries.",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("asyncapi.json")
    out.write_text(json.dumps(asyncapi_document(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
