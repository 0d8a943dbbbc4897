"""Deriving a package from a spec file with no pipeline: read it under the size bound, derive it,
and (asked to) let the configured model group its operations when the tags fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from services.derive import DeriveOptions, SkillPackage, derive_package
from services.derive.model_grouping import Chat, choose_grouping
from services.errors import Refused

__all__ = ["SpecUnreadable", "derive_with_model", "read_spec_file"]


class SpecUnreadable(Refused):
    """The spec file cannot be read, or is over the size bound."""


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
    chosen, why = choose_grouping(offline, package.files, chat, model, budget_chars)
    if chosen is offline:
        say(f"--llm: {why}; kept the offline grouping")
        return package
    return derive_package(data, replace(options, grouping=chosen))
