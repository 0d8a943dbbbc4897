"""A YAML document loaded for `load`: libyaml through PyYAML's safe loader with only the
JSON-compatible tags, string keys, no duplicate keys, finite floats, and aliases bounded (an
alias bomb is refused before it is expanded)."""

from __future__ import annotations

import math
import re
from typing import Any, Protocol

import yaml

from skillpress.format.errors import SpecRefused

__all__ = ["load_yaml"]


class YamlLimits(Protocol):
    """The bounds of `load.LoadLimits` a YAML document is read within."""

    @property
    def max_yaml_aliases(self) -> int: ...

    @property
    def max_expanded_nodes(self) -> int: ...


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


def _expanded_size(root: Any, limits: YamlLimits) -> None:
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


def load_yaml(text: str, limits: YamlLimits) -> Any:
    """The YAML document in `text` as plain data (SpecRefused says why not)."""
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
