"""Load an untrusted OpenAPI document from bytes: bounded, refused rather than truncated.

JSON is parsed by the standard library, YAML by libyaml through PyYAML's safe loader with
only the JSON-compatible tags. Nothing here opens a file or a socket: a `$ref` is never
followed at load time (local references are resolved later, others refused).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillpress.format.errors import SpecRefused
from skillpress.format.text import INVISIBLE, visible

__all__ = [
    "LoadLimits",
    "document_text",
    "has_invisible",
    "json_pairs",
    "load_document",
    "load_json",
    "may_have_invisible",
    "openapi_document",
    "parse_bytes",
    "visible_prose",
]


MAX_SPEC_BYTES = 32 * 1024 * 1024  # the default of SKILLPRESS_MAX_SPEC_BYTES


@dataclass(frozen=True)
class LoadLimits:
    """Bounds applied while loading. The defaults admit every real spec we know of."""

    max_bytes: int = MAX_SPEC_BYTES
    max_yaml_aliases: int = 10_000
    max_expanded_nodes: int = 5_000_000


def json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a mapping; a duplicate key is refused."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise SpecRefused(
                    f"duplicate key {key!r}: a document with duplicate keys is ambiguous; remove one"
                )
            seen.add(key)
    return obj


def _json_constant(name: str) -> Any:
    raise SpecRefused(f"non-finite number {name} in JSON: JSON has no infinity or NaN")


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise SpecRefused(f"number {text[:40]} is out of range (not a finite double)")
    return value


def load_json(
    text: str,
    parse_int: Callable[[str], Any] = int,
    pairs: Callable[[list[tuple[str, Any]]], Any] = json_pairs,
) -> Any:
    """A JSON document's text as `parse_bytes` reads it (`parse_int` reads its integers, `pairs`
    its objects: `json_pairs` refuses a duplicate key)."""
    try:
        return json.loads(
            text,
            object_pairs_hook=pairs,
            parse_constant=_json_constant,
            parse_float=_json_float,
            parse_int=parse_int,
        )
    except json.JSONDecodeError as exc:
        raise SpecRefused(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise SpecRefused("JSON nested deeper than the parser allows") from None
    except ValueError as exc:  # int too large to convert, etc.
        if isinstance(exc, SpecRefused):
            raise
        raise SpecRefused(f"not valid JSON: {exc}") from None


def parse_bytes(
    data: bytes, limits: LoadLimits | None = None, parse_int: Callable[[str], Any] = int
) -> Any:
    """Parse JSON or YAML bytes into plain Python data, applying every load bound (`parse_int`
    reads a JSON document's integers: one that looks at them gives the same values)."""
    limits = limits or LoadLimits()
    text = document_text(data, limits)
    if text.lstrip()[0] in "{[":
        doc = load_json(text, parse_int)
    else:  # (PyYAML is imported for a YAML document only: a JSON one need not wait for it)
        from skillpress.format.load_yaml import load_yaml

        doc = load_yaml(text, limits)
    if has_invisible(text):
        doc = visible_prose(doc)
    return doc


def document_text(data: bytes, limits: LoadLimits) -> str:
    """The text of a document's bytes, refused as `parse_bytes` refuses it before parsing (too
    large, not UTF-8, a NUL, empty); a byte order mark is dropped."""
    if len(data) > limits.max_bytes:
        raise SpecRefused(
            f"document is {len(data):,} bytes, over the {limits.max_bytes:,}-byte limit"
            " (raise SKILLPRESS_MAX_SPEC_BYTES if this spec is genuine)"
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecRefused(
            f"document is not UTF-8 (invalid byte at offset {exc.start}); re-save it as UTF-8"
        ) from None
    if "\x00" in text:
        raise SpecRefused("document contains a NUL character; it is not a text document")
    if not text or text.isspace():
        raise SpecRefused("the document is empty")
    return text


def has_invisible(text: str) -> bool:
    """Whether the document's text holds an invisible character, as itself or as an escape."""
    return bool(INVISIBLE.search(text) or _ESCAPED_INVISIBLE.search(text))


def may_have_invisible(data: bytes) -> bool:
    """Whether the document's UTF-8 bytes may hold an invisible character (`has_invisible` of
    their text decides): a screen that never misses one, at a fraction of decoding them. Every
    character `INVISIBLE` names is in U+2000–U+206F or is U+FEFF, three bytes in UTF-8 (each
    pattern starts with two of them, which the search looks for first); a document that is not
    UTF-8 is refused when its text is read."""
    return any(pattern.search(data) for pattern in _INVISIBLE_BYTES)


# an invisible character written as an escape (JSON's and YAML's `\u200b`)
_ESCAPED_INVISIBLE = re.compile(r"\\u(?:200[b-f]|202[a-e]|206[0-46-9]|feff)", re.IGNORECASE)
_ESCAPED_INVISIBLE_BYTES = re.compile(_ESCAPED_INVISIBLE.pattern.encode(), re.IGNORECASE)
_INVISIBLE_BYTES = (  # INVISIBLE's characters as UTF-8, and as escapes
    re.compile(rb"\xe2\x80[\x8b-\x8f\xaa-\xae]"),
    re.compile(rb"\xe2\x81[\xa0-\xa4\xa6-\xa9]"),
    re.compile(rb"\xef\xbb\xbf"),
    _ESCAPED_INVISIBLE_BYTES,
)


# the spec's words for people and models, written out with invisible characters taken out: a
# description cannot hide an instruction behind a bidi control (names and values the API reads
# are kept as they are, and derive refuses to offer a name that reads as another)
_PROSE_KEYS = frozenset({"description", "summary", "title", "operationId", "x-summary"})


def visible_prose(doc: Any) -> Any:
    """The document with its prose (`_PROSE_KEYS`) written out without invisible characters."""
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _PROSE_KEYS and isinstance(value, str):
                    node[key] = visible(value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
    return doc


def load_document(data: bytes, limits: LoadLimits | None = None) -> dict[str, Any]:
    """Parse and check that the bytes are an OpenAPI 3.x or Swagger 2.0 document."""
    return openapi_document(parse_bytes(data, limits))


def openapi_document(doc: Any) -> dict[str, Any]:
    """`doc` when it is an OpenAPI 3.x or Swagger 2.0 document (SpecRefused says why not)."""
    if not isinstance(doc, dict):
        raise SpecRefused("not an OpenAPI document: the top level is not a mapping")
    version = doc.get("openapi")
    if version is not None:
        if not isinstance(version, str) or not re.match(r"^3\.\d+(\.\d+)?", version):
            raise SpecRefused(
                f"unsupported OpenAPI version {version!r}: skillpress reads 2.0, 3.0 and 3.1"
            )
        return doc
    swagger = doc.get("swagger")
    if swagger is not None:
        if str(swagger) != "2.0":
            raise SpecRefused(f"unsupported Swagger version {swagger!r}: only 2.0 exists")
        return doc
    raise SpecRefused("not an OpenAPI document: no 'openapi' or 'swagger' field at the top level")
