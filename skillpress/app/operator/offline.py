"""Deriving a package from a spec file with no pipeline: read it under the size bound, derive it,
and (asked to) let the configured model group its operations when the tags fail."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillpress.derive import DeriveOptions, LoadLimits, SkillPackage, derive_package
from skillpress.derive.package import derive_bytes
from skillpress.derive.package_types import PackageSummary
from skillpress.errors import Refused
from skillpress.format.gc_pause import gc_paused
from skillpress.format.load import MAX_SPEC_BYTES

if TYPE_CHECKING:
    from skillpress.derive.model_grouping import Chat
    from skillpress.platform.settings import Settings

__all__ = [
    "Derived",
    "PackageSummary",
    "SkillPackage",
    "SpecUnreadable",
    "derive_file",
    "derive_with_model",
    "held_to_exit",
    "max_spec_bytes",
    "read_spec_file",
]


class SpecUnreadable(Refused):
    """The spec file cannot be read, or is over the size bound."""


def max_spec_bytes(environ: Mapping[str, str] = os.environ) -> int:
    """`SKILLPRESS_MAX_SPEC_BYTES`, read the way the settings read it, without loading them: an
    offline derivation needs nothing else from the settings."""
    raw = environ.get("SKILLPRESS_MAX_SPEC_BYTES")
    if raw is None or not raw.strip():
        return MAX_SPEC_BYTES
    try:
        value = int(raw.strip())
    except ValueError:
        raise SpecUnreadable(
            f"SKILLPRESS_MAX_SPEC_BYTES={raw!r} is not a whole number of bytes"
        ) from None
    if value <= 0:
        raise SpecUnreadable(f"SKILLPRESS_MAX_SPEC_BYTES={raw!r} must be positive")
    return value


def read_spec_file(spec: Path, max_bytes: int) -> bytes:
    """The file's bytes, refused before reading when it is over `max_bytes`."""
    try:
        size = spec.stat().st_size
        if size > max_bytes:
            raise SpecUnreadable(
                f"{spec} is {size:,} bytes, over the {max_bytes:,}-byte limit (SKILLPRESS_MAX_SPEC_BYTES)"
            )
        return spec.read_bytes()
    except OSError as exc:
        raise SpecUnreadable(f"cannot read {spec}: {exc.strerror or exc}") from None


def derive_with_model(
    data: bytes,
    options: DeriveOptions,
    chat: Chat,
    model: str,
    budget_chars: int,
    say: Callable[[str], None],
) -> SkillPackage:
    """The package, regrouped by the model when tags failed and categories are needed; `say`
    tells what was decided (the offline grouping stands when the model does not answer well)."""
    package = derive_package(data, options)
    offline = package.grouping
    if offline.tag_failure is None or offline.mode != "categories":
        say("--llm: the tags work (or the flat manifest fits); no model needed")
        return package
    say(
        f"--llm: tags failed ({offline.tag_failure}); asking {model} to group"
        f" {len(package.manifest.operations)} operations…"
    )
    from skillpress.derive.model_grouping import choose_grouping

    chosen, why = choose_grouping(offline, package.files, chat, model, budget_chars)
    if chosen is offline:
        say(f"--llm: {why}; kept the offline grouping")
        return package
    return derive_package(data, replace(options, grouping=chosen))


def held_to_exit() -> AbstractContextManager[None]:
    """For a command that derives, writes the package and exits without tearing its heap
    down: the collector stays paused and the caches full until it leaves, since resuming the
    one walks the whole package and emptying the others frees it piece by piece (tens of
    milliseconds of a large API's derivation, for a process about to end). Left any other way
    (a failure), both resume as after any derivation."""
    return gc_paused()


@dataclass(frozen=True)
class Derived:
    """A package derived from a file, the parsed document it came from and what the derivation
    built on the way: a caller about to exit holds them to the end, since freeing a large API's
    piece by piece only adds to the wait."""

    package: SkillPackage
    document: Any
    worked: tuple[object, ...] = ()


def derive_file(
    spec: Path,
    *,
    slug: str | None,
    base_url: str | None,
    on_stage: Callable[[str], None] | None,
    on_files: Callable[[dict[str, bytes]], None] | None,
    llm: Settings | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Derived:
    """`skillpress derive`: the file read under SKILLPRESS_MAX_SPEC_BYTES and derived, a share
    of a large API rendered by a forked child (`on_files` takes the operation files as they are
    made, so they are written while the manifest is built); with `llm` (the settings naming a
    model), the model groups the operations when the tags fail, `say` telling what it decided.
    SpecUnreadable, SpecRefused, or Refused when `llm` names no model, say why not."""
    limits = LoadLimits(max_bytes=max_spec_bytes())
    worked: list[object] = []
    options = DeriveOptions(
        slug=slug,
        base_url=base_url,
        limits=limits,
        processes=2,  # a command line is single-threaded: forking is safe
        on_stage=on_stage,
        # (not with a model: it may derive twice, and forks only a single thread may)
        on_files=None if llm is not None else on_files,
        on_done_with=worked.append,
    )
    data = read_spec_file(spec, limits.max_bytes)
    if llm is not None:
        from skillpress.platform.llm import chat_client

        client = chat_client(llm)
        if client is None:
            raise Refused(
                "--llm: set SKILLPRESS_LLM_BASE_URL and SKILLPRESS_LLM_MODEL (and"
                " SKILLPRESS_LLM_API_KEY_ENV naming the key's variable)"
            )
        package = derive_with_model(
            data, options, client.complete, client.model, llm.llm_context_budget, say
        )
        return Derived(package, None, tuple(worked))
    package, document = derive_bytes(data, options)
    return Derived(package, document, tuple(worked))


def fetch_url(settings: Settings, url: str) -> bytes:
    """The spec at `url`, through the same guard as the fetch stage (no private addresses unless
    allowed, no redirects, bounded size and time); FetchRefused / FetchFailed say why not."""
    from skillpress.platform.fetcher import FetchLimits, fetch_spec

    limits = FetchLimits(
        settings.max_spec_bytes, settings.fetch_timeout, settings.fetch_allow_private
    )
    return fetch_spec(url, limits)
