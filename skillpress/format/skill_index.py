"""`index.json`, what a runtime reads of a package before any operation: its slug, credential and
hosts, and a row per operation (name, file, tool, kind), read lazily so a call to one of ten
thousand operations costs what a call to one of ten costs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from skillpress.format.manifest import (
    INDEX_FORMAT,
    AuthCompanion,
    ManifestError,
    as_mapping,
    companions,
    opt_str,
    strs,
)

_Row = tuple[str, str, str, str | None, str | None]


_OPERATIONS = b',"operations":['


@dataclass(frozen=True)
class SkillIndex:
    """`index.json` read back: a skill's name, hosts, base URL and credential header at once, its
    operations' (name, method, path, tool, why not a tool) rows when asked for, and one row
    found without reading the others (`find`): a call costs the same for any number of them."""

    slug: str
    title: str
    base_url: str | None
    hosts: tuple[str, ...]
    auth_header: str | None
    auth_kind: str | None
    data: bytes = field(repr=False, compare=False)
    auth_token_url: str | None = None
    auth_scopes: tuple[str, ...] = ()
    auth_env: str | None = None
    auth_in: str = "header"
    auth_also: tuple[AuthCompanion, ...] = ()
    auth_others: tuple[AuthCompanion, ...] = ()

    @classmethod
    def from_json(cls, data: bytes) -> SkillIndex:
        first = data[: data.find(b"\n")]  # not partition: that copies the rest
        try:
            if not first.endswith(_OPERATIONS):
                raise ValueError("no operations list after the first line")
            raw = json.loads(first[: -len(_OPERATIONS)] + b"}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"index.json: not a skill index: {exc}") from None
        if not isinstance(raw, Mapping) or raw.get("format") != INDEX_FORMAT:
            raise ManifestError(f"index.json: not a format-{INDEX_FORMAT} skill index")
        slug = raw.get("slug")
        if not isinstance(slug, str) or not slug:
            raise ManifestError("index.json: slug is missing")
        auth = as_mapping(raw.get("auth"))
        return cls(
            slug=slug,
            title=str(raw.get("title") or slug),
            base_url=opt_str(raw.get("base_url")),
            hosts=strs(raw.get("hosts")),
            auth_header=opt_str(auth.get("header")),
            auth_kind=opt_str(auth.get("kind")),
            data=data,
            auth_token_url=opt_str(auth.get("token_url")),
            auth_scopes=strs(auth.get("scopes")),
            auth_env=opt_str(auth.get("env")),
            auth_in=opt_str(auth.get("in")) or "header",
            auth_also=companions(auth.get("also")),
            auth_others=companions(auth.get("others")),
        )

    @cached_property
    def rows(self) -> tuple[_Row, ...]:
        try:
            rows = json.loads(self.data).get("operations")
        except (ValueError, UnicodeDecodeError, AttributeError) as exc:
            raise ManifestError(f"index.json: not valid JSON: {exc}") from None
        if not isinstance(rows, list):
            raise ManifestError("index.json: operations is not a list")
        return tuple(_row(r) for r in rows)

    def find(self, key: str) -> _Row | None:
        """The row of the operation named `key`, or whose tool is named `key`: its line found by
        its text (one operation per line), only that line parsed."""
        quoted = json.dumps(key, ensure_ascii=False).encode()
        for needle, column in ((b"\n[" + quoted + b",", 0), (b"," + quoted + b",", 3)):
            at = self.data.find(needle)
            while at >= 0:
                start = self.data.rfind(b"\n", 0, at + 1) + 1
                end = self.data.find(b"\n", at + 1)
                try:
                    row = _row(
                        json.loads(self.data[start : end if end >= 0 else None].rstrip(b","))
                    )
                except (ValueError, ManifestError):
                    row = None
                if row is not None and row[column] == key:
                    return row
                at = self.data.find(needle, at + 1)
        return None


def _row(value: Any) -> _Row:
    if (
        isinstance(value, list)
        and len(value) == 5
        and all(isinstance(v, str) for v in value[:3])
        and all(v is None or isinstance(v, str) for v in value[3:])
    ):
        return (value[0], value[1], value[2], value[3], value[4])
    raise ManifestError("index.json: an operation is [name, method, path, tool, reason]")
