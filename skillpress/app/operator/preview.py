"""What a spec already answers before anything is stored: its name, where it lives (or the
question to ask when it does not say), its credential header, hosts, sizes, and the body exactly
as agents will carry it. Nothing here writes; the same bytes submitted later derive the same body."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skillpress.derive.auth import auth_hint
from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.errors import Refused
from skillpress.runtime.calling.execute import default_env_var

__all__ = ["Preview", "check_base_url", "preview_spec"]


@dataclass(frozen=True)
class Preview:
    title: str
    slug: str
    description: str
    base_url: str | None
    base_url_question: str | None  # asked when the spec names no absolute server
    auth_header: str | None
    auth_kind: str | None
    credential_env: str  # the variable the credential goes in, prefilled
    credential_holds: str  # what that variable holds and how it is sent
    operations_needing_auth: int
    operations_unservable: int  # need auth a header cannot serve
    unservable_kinds: list[str]
    hosts: list[str]
    operations: int
    tools: int
    categories: int
    body: str
    body_bytes: int
    warnings: list[str]
    # the operations it makes, by name: what an import over a skill in use would remove
    operation_names: tuple[str, ...] = field(default=(), repr=False)
    # the package it derives to: what such an import would change in a skill in use
    files: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("operation_names", "files")}


def _question(warnings: list[str]) -> str:
    for w in warnings:
        if w.startswith("server URL") or w.startswith("the document names no server"):
            reason = w.split(":")[0]
            return f"Where does this API live? ({reason}.) Give its base URL, like https://api.example.com"
    return "Where does this API live? Give its base URL, like https://api.example.com"


def preview_spec(data: bytes, slug: str | None = None, base_url: str | None = None) -> Preview:
    """Derive `data` in memory (SpecRefused with the reason for refused input) and say what it
    answers and what is still to ask."""

    check_base_url(base_url)
    package = derive_package(data, DeriveOptions(slug=slug or None, base_url=base_url or None))
    m = package.manifest
    body = package.files["body.md"].decode()
    return Preview(
        title=m.title,
        slug=m.slug,
        description=m.description,
        base_url=m.base_url,
        base_url_question=None if m.base_url else _question(package.warnings),
        auth_header=m.auth.header,
        auth_kind=m.auth.kind,
        credential_env=default_env_var(m.slug),
        credential_holds=auth_hint(m.auth.to_dict()),
        operations_needing_auth=m.auth.operations_needing_auth,
        operations_unservable=m.auth.operations_unservable,
        unservable_kinds=list(m.auth.unservable_kinds),
        hosts=list(m.hosts),
        operations=m.stats.operations,
        tools=m.stats.tools,
        categories=len(m.categories),
        body=body,
        body_bytes=len(package.files["body.md"]),
        warnings=list(package.warnings),
        operation_names=tuple(o.name for o in m.operations),
        files=package.files,
    )


def check_base_url(base_url: str | None) -> None:
    """A base URL a person gives: an absolute http(s) URL with a host, no credentials, no query
    (a `javascript:` or `file:` one is refused before anything is stored)."""
    if not base_url:
        return
    from urllib.parse import urlsplit

    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(
            f"base URL {base_url!r} is not an absolute http(s) URL, like https://api.example.com"
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise Refused(f"base URL {base_url!r} carries credentials, a query or a fragment")
