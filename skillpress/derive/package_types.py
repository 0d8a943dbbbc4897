"""What derivation takes and gives: its options, the package it makes and its summary, the
content-addressed id, and the two records the stages pass (the API as read, the layout
decided)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skillpress.derive.annotations import (
    Annotation,
)
from skillpress.derive.categories import (
    Category,
    Grouping,
)
from skillpress.derive.model import Operation, Webhook
from skillpress.derive.schema import SchemaTranslator
from skillpress.format.load import LoadLimits
from skillpress.format.manifest import (
    Manifest,
)

RENDERER_VERSION = "skillpress-render/1"

BODY_BUDGET = 8 * 1024
# the body's tokens, estimated from above (`token_estimate`): with the MCP server's fixed part
# (its usage paragraph and five tools, about 580 cl100k tokens) under 2,000 for any API
BODY_TOKENS = 1_400


@dataclass(frozen=True)
class DeriveOptions:
    slug: str | None = None
    base_url: str | None = None
    # the variable the credential is read from, as a person chose it (None: <SLUG>_API_KEY)
    credential_env: str | None = None
    limits: LoadLimits = field(default_factory=LoadLimits)
    body_budget: int = BODY_BUDGET
    body_tokens: int = BODY_TOKENS
    grouping: Grouping | None = None  # decided by the categorize stage; None: decide here
    annotations: tuple[Annotation, ...] = ()  # people's additions, as of one moment
    strict_annotations: bool = (
        False  # refuse (AnnotationRefused) rather than degrade: checking a new one
    )
    processes: int = 1  # >1: a forked child renders a share of a large API's files (single-threaded callers only)
    # told each stage as it ends (a terminal's progress lines); never changes the package
    on_stage: Callable[[str], None] | None = field(default=None, compare=False)
    # given the operation files (path -> bytes, exactly the package's) as soon as they are
    # rendered, before the body, the types and the manifest are built: a caller may start
    # writing them
    on_files: Callable[[dict[str, bytes]], None] | None = field(default=None, compare=False)
    # given what the derivation built on the way and no longer needs, by a caller about to exit
    # that keeps it rather than free it piece by piece (a large API's: ~10 ms); never changes
    # the package
    on_done_with: Callable[[object], None] | None = field(default=None, compare=False)


@dataclass
class SkillPackage:
    """A derived package: file path → bytes, its metadata, and its content-addressed id."""

    files: dict[str, bytes]
    manifest: Manifest
    version_id: str
    warnings: list[str]
    grouping: Grouping

    def summary(self) -> PackageSummary:
        m = self.manifest
        return PackageSummary(
            slug=m.slug,
            title=m.title,
            version_id=self.version_id,
            operations=m.stats.operations,
            tools=m.stats.tools,
            tools_share=m.stats.tools_share,
            categories=len(m.categories),
            mode=m.mode,
            source=m.source,
            tag_failure=m.tag_failure,
            body_bytes=m.stats.body_bytes,
            files=len(self.files),
            base_url=m.base_url,
            hosts=tuple(m.hosts),
            auth_header=m.auth.header,
            warnings=tuple(self.warnings),
        )


@dataclass(frozen=True)
class PackageSummary:
    """What a derivation made, in a few numbers: what `skillpress derive` prints."""

    slug: str
    title: str
    version_id: str
    operations: int
    tools: int
    tools_share: str
    categories: int
    mode: str  # flat | categories
    source: str  # flat | tags | paths | model: where the grouping came from
    tag_failure: str | None
    body_bytes: int
    files: int
    base_url: str | None
    hosts: tuple[str, ...]
    auth_header: str | None
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The summary as `derive --json` prints it."""
        return {
            "slug": self.slug,
            "title": self.title,
            "version_id": self.version_id,
            "operations": self.operations,
            "tools": self.tools,
            "tools_share": self.tools_share,
            "categories": self.categories,
            "categorization": {
                "mode": self.mode,
                "source": self.source,
                "tag_failure": self.tag_failure,
            },
            "body_bytes": self.body_bytes,
            "files": self.files,
            "base_url": self.base_url,
            "hosts": list(self.hosts),
            "auth_header": self.auth_header,
            "warnings": list(self.warnings),
        }


def package_id(files: dict[str, bytes]) -> str:
    """sha256 over the sorted (path, sha256 of bytes) pairs: same files → same id."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode())
        h.update(b"\0")
        h.update(hashlib.sha256(files[path]).hexdigest().encode())
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class ApiSource:
    """What the document says before anything is decided: names, servers, operations, types."""

    doc: dict[str, Any]
    translator: SchemaTranslator
    title: str
    description: str
    slug: str
    base_url: str | None  # the absolute base URL, or None
    url_base: (
        str | None
    )  # what operation URLs start with (a relative server's path when no base URL)
    ops: list[Operation]
    tag_docs: dict[str, str]
    webhooks: list[Webhook] = field(default_factory=list)  # events it sends, never tools


@dataclass(frozen=True)
class Layout:
    """How the body presents the operations: flat, or by categories (and which grouping, from
    where), or past what the body holds by sections of categories."""

    body: str
    categories: list[Category]  # what has a file of operations ([] for a flat manifest)
    grouping: list[Category]  # every operation's category, listed or not
    source: str
    tag_failure: str | None
    sections: list[tuple[Category, list[Category]]] = field(default_factory=list)
    lines: dict[str, str] = field(default_factory=dict)  # each operation's line in a listing
