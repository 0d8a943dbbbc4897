"""Local JSON-pointer references: resolved inside the one document, never fetched."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from skillpress.format.errors import SpecRefused

__all__ = ["Resolver", "BUNDLE_HINT"]

BUNDLE_HINT = (
    "skillpress reads one self-contained document; bundle a multi-file spec first"
    " (for example `npx @redocly/cli bundle openapi.yaml -o bundled.yaml`)"
)
_MAX_CHAIN = 32


class Resolver:
    """Resolves `#/...` pointers in one document; refuses every other kind of reference."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self._cache: dict[str, Any] = {}

    def pointer(self, ref: str, where: str = "") -> Any:
        if not isinstance(ref, str):
            raise SpecRefused(f"$ref at {where or 'the document'} is not a string")
        if not ref.startswith("#"):
            raise SpecRefused(f"external reference {ref[:200]!r} at {where or '?'}: {BUNDLE_HINT}")
        cached = self._cache.get(ref, self)
        if cached is not self:
            return cached
        node: Any = self.doc
        path = ref[1:]
        if path and not path.startswith("/"):
            raise SpecRefused(
                f"reference {ref[:200]!r} at {where}: only JSON pointers (#/...) are supported"
            )
        for raw in path.split("/")[1:] if path else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SpecRefused(
                    f"reference {ref[:200]!r} at {where or '?'} points at nothing in the document"
                )
        self._cache[ref] = node
        return node

    def deref(self, obj: Any, where: str) -> Any:
        """Follow a chain of `$ref` objects (parameters, responses, bodies, path items)."""
        seen: list[str] = []
        while isinstance(obj, dict) and "$ref" in obj:
            ref = obj["$ref"]
            if ref in seen or len(seen) >= _MAX_CHAIN:
                raise SpecRefused(
                    f"reference cycle at {where}: {' -> '.join(seen + [str(ref)])[:300]}"
                )
            seen.append(ref)
            obj = self.pointer(ref, where)
        return obj
