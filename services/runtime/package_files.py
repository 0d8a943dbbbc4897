"""Read an operation file's frontmatter and prose, and a package's tools, from its files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from services.derive.expand import expand_types

__all__ = ["OperationFile", "PackageError", "parse_operation_file", "package_tools", "PROVIDERS"]

PROVIDERS = ("anthropic", "openai", "mcp")


class PackageError(ValueError):
    """A package file is malformed; the message names the file and what is wrong."""


@dataclass
class OperationFile:
    name: str
    frontmatter: dict[str, Any]
    prose: str

    @property
    def operation(self) -> dict[str, Any] | None:
        op = self.frontmatter.get("operation")
        return op if isinstance(op, dict) else None

    def description(self) -> str:
        """The first paragraph of the prose after the heading: what the operation is."""
        paras = [p.strip() for p in self.prose.split("\n\n") if p.strip()]
        for para in paras:
            if not para.startswith("#"):
                return " ".join(para.split())
        return self.name


def parse_operation_file(name: str, text: str) -> OperationFile:
    front: dict[str, Any] = {}
    prose = text
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end < 0:
            raise PackageError(f"{name}.md: frontmatter starts with '---' but never ends")
        try:
            loaded = yaml.safe_load(text[4:end])
        except yaml.YAMLError as exc:
            raise PackageError(f"{name}.md: frontmatter is not valid YAML: {exc}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise PackageError(f"{name}.md: frontmatter is not a mapping")
        front = loaded or {}
        prose = text[end + 5 :]
    return OperationFile(name, front, prose)


def _schema_of(op_file: OperationFile) -> dict[str, Any]:
    op = op_file.operation or {}
    raw = op.get("schema")
    if isinstance(raw, str):
        try:
            schema = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PackageError(f"{op_file.name}.md: operation.schema is not valid JSON: {exc}") from None
    elif isinstance(raw, dict):
        schema = raw
    else:
        raise PackageError(f"{op_file.name}.md: operation has no schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise PackageError(f"{op_file.name}.md: operation.schema must be a JSON Schema object")
    return schema


def package_tools(files: dict[str, bytes], provider: str) -> list[dict[str, Any]]:
    """Every declared operation of a package as a tool in `provider`'s shape, references expanded."""
    if provider not in PROVIDERS:
        raise PackageError(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}")
    try:
        meta = json.loads(files["skill.json"])
        types = json.loads(files.get("types.json", b"{}"))
    except KeyError:
        raise PackageError("not a skill package: skill.json is missing") from None
    except json.JSONDecodeError as exc:
        raise PackageError(f"skill.json or types.json is not valid JSON: {exc}") from None
    tools: list[dict[str, Any]] = []
    for entry in meta.get("operations", []):
        if not entry.get("tool"):
            continue
        path = entry["file"]
        if path not in files:
            raise PackageError(f"{path}: listed in skill.json but missing from the package")
        op_file = parse_operation_file(entry["name"], files[path].decode())
        schema = expand_types(_schema_of(op_file), types)
        desc = op_file.description()
        name = entry["tool"]
        if provider == "anthropic":
            tools.append({"name": name, "description": desc, "input_schema": schema})
        elif provider == "openai":
            tools.append({"type": "function", "function": {"name": name, "description": desc, "parameters": schema}})
        else:
            tools.append({"name": name, "description": desc, "inputSchema": schema})
    return tools
