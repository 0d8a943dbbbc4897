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

import yaml

from skillpress.format.errors import SpecRefused
from skillpress.format.text import INVISIBLE, visible

__all__ = [
    "LoadLimits",
    "has_invisible",
    "load_document",
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


_ANCHOR = re.compile(r"(?:^|[\s\[{,:-])&[^\s\[\]{},]+", re.MULTILINE)

_REFUSED_TAGS = {
    "tag:yaml.org,2002:binary": "!!binary",
    "tag:yaml.org,2002:timestamp": "!!timestamp",
    "tag:yaml.org,2002:omap": "!!omap",
    "tag:yaml.org,2002:pairs": "!!pairs",
    "tag:yaml.org,2002:set": "!!set",
}

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SpecLoader(_BaseLoader):  # type: ignore[misc]
    """Safe loader: JSON-compatible tags only, string keys, no duplicate keys, finite floats."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise SpecRefused(f"expected a mapping at line {node.start_mark.line + 1}")
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecRefused(
                    f"a mapping key at line {key_node.start_mark.line + 1} is not a plain scalar;"
                    " OpenAPI keys are strings"
                )
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in mapping:
                raise SpecRefused(
                    f"duplicate key {key!r} at lines {lines[key]} and {line}:"
                    " a document with duplicate keys is ambiguous; remove one"
                )
            lines[key] = line
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_float(self, node: Any) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise SpecRefused(
                f"non-finite number {node.value!r} at line {node.start_mark.line + 1}:"
                " JSON has no infinity or NaN"
            )
        return value

    def construct_yaml_map(self, node: Any) -> Any:
        data: dict[str, Any] = {}
        yield data
        data.update(self.construct_mapping(node))

    def refuse_tag(self, node: Any) -> Any:
        tag = _REFUSED_TAGS.get(node.tag, node.tag)
        raise SpecRefused(
            f"YAML tag {tag} at line {node.start_mark.line + 1} is not allowed in an OpenAPI"
            " document (only JSON-compatible values are)"
        )


# Dates stay strings: drop the implicit timestamp resolver (a copy, so PyYAML's own is untouched).
_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_SpecLoader.yaml_constructors = dict(_BaseLoader.yaml_constructors)
_SpecLoader.add_constructor("tag:yaml.org,2002:float", _SpecLoader.construct_yaml_float)
_SpecLoader.add_constructor("tag:yaml.org,2002:map", _SpecLoader.construct_yaml_map)
for _tag in _REFUSED_TAGS:
    _SpecLoader.add_constructor(_tag, _SpecLoader.refuse_tag)
_SpecLoader.add_constructor(None, _SpecLoader.refuse_tag)


def _expanded_size(root: Any, limits: LoadLimits) -> None:
    """Refuse a YAML node graph whose aliases expand past the bounds (billion laughs)."""
    sizes: dict[int, int] = {}
    seen_twice = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            children = (
                [c for pair in node.value for c in pair]
                if isinstance(node, yaml.MappingNode)
                else node.value
                if isinstance(node, yaml.SequenceNode)
                else []
            )
            total = 1 + sum(sizes.get(id(c), 0) for c in children)
            if total > limits.max_expanded_nodes:
                raise SpecRefused(
                    f"YAML aliases expand to more than {limits.max_expanded_nodes:,} nodes"
                    " (an alias bomb?); refusing the document"
                )
            sizes[key] = total
            continue
        if key in sizes:
            seen_twice += 1
            if seen_twice > limits.max_yaml_aliases:
                raise SpecRefused(
                    f"more than {limits.max_yaml_aliases:,} YAML aliases; refusing the document"
                )
            continue
        sizes[key] = 0
        stack.append((node, True))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.append((k, False))
                stack.append((v, False))
        elif isinstance(node, yaml.SequenceNode):
            for c in node.value:
                stack.append((c, False))


def _load_yaml(text: str, limits: LoadLimits) -> Any:
    loader = _SpecLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise SpecRefused("the document is empty")
        if _ANCHOR.search(text):
            _expanded_size(node, limits)
        return loader.construct_document(node)
    except SpecRefused:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "malformed YAML"
        if "nesting depth" in problem:
            raise SpecRefused(f"YAML nested deeper than the parser allows{where}") from None
        raise SpecRefused(f"not valid YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise SpecRefused(f"not valid YAML: {exc}") from None
    except RecursionError:
        raise SpecRefused("YAML nested deeper than the parser allows") from None
    finally:
        loader.dispose()


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
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


def _load_json(text: str, parse_int: Callable[[str], Any] = int) -> Any:
    try:
        return json.loads(
            text,
            object_pairs_hook=_json_pairs,
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
    stripped = text.lstrip()
    if not stripped:
        raise SpecRefused("the document is empty")
    doc = _load_json(text, parse_int) if stripped[0] in "{[" else _load_yaml(text, limits)
    if has_invisible(text):
        doc = visible_prose(doc)
    return doc


def has_invisible(text: str) -> bool:
    """Whether the document's text holds an invisible character, as itself or as an escape."""
    return bool(INVISIBLE.search(text) or _ESCAPED_INVISIBLE.search(text))


# an invisible character written as an escape (JSON's and YAML's `\u200b`)
_ESCAPED_INVISIBLE = re.compile(r"\\u(?:200[b-f]|202[a-e]|206[0-46-9]|feff)", re.IGNORECASE)


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
