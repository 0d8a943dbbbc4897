"""The skills a runtime serves together, by slug: the live ones from the records, or every
package folder under a directory (the one `skillpress follow` keeps). Asked again, it says
which skills changed since, so a server picks up each publication on its next request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from skillpress.app.base.context import AppContext
from skillpress.app.base.package_dir import OutputDirError, read_package_dir
from skillpress.app.serving.followers import folder_stamp, followed_version
from skillpress.runtime.package.model import Skill
from skillpress.runtime.package.skill import load_skill

__all__ = ["Catalog", "Loaded", "folder_catalog", "live_catalog"]

Loaded = tuple[Skill, Mapping[str, bytes], str | None]  # a skill, its files, its version


class Catalog:
    """Skills by slug, each with a stamp that changes when its version does."""

    def __init__(
        self, stamps: Callable[[], dict[str, str]], load: Callable[[str, str], Loaded]
    ) -> None:
        self._stamps, self._load = stamps, load
        self._seen: dict[str, str] = {}

    def current(self) -> dict[str, Loaded]:
        """Every skill now (and remember their stamps)."""
        self._seen = self._stamps()
        return {slug: self._load(slug, stamp) for slug, stamp in sorted(self._seen.items())}

    def changed(self) -> dict[str, Loaded] | None:
        """The skills whose stamp changed or that appeared since last asked (None: none did);
        one that cannot be loaded now (a half-written folder) is asked for again next time."""
        now = self._stamps()
        fresh: dict[str, Loaded] = {}
        for slug, stamp in sorted(now.items()):
            if self._seen.get(slug) == stamp:
                continue
            try:
                fresh[slug] = self._load(slug, stamp)
            except Exception:  # noqa: BLE001 (keep serving the old one; try again on the next request)
                continue
            self._seen[slug] = stamp
        return fresh or None


def live_catalog(ctx: AppContext, base_urls: Mapping[str, str] | None = None) -> Catalog:
    """The published skills: each its live version, read from the blob store as files are asked
    for; a skill named in `base_urls` calls there (and only there)."""
    from skillpress.app.records.versions import live_files, live_stamps

    def stamps() -> dict[str, str]:
        return live_stamps(ctx)

    def load(slug: str, version: str) -> Loaded:
        files = live_files(ctx, slug)
        skill = load_skill(files, base_url=(base_urls or {}).get(slug), lazy=True)
        return skill, files, version[:12]

    return Catalog(stamps, load)


def folder_catalog(folder: Path, base_urls: Mapping[str, str] | None = None) -> Catalog:
    """Every package folder directly under `folder` (a followed folder's `<slug>` links among
    them); one named in `base_urls` calls there (and only there)."""
    if not folder.is_dir():
        raise OutputDirError(f"{folder} is not a directory")

    def stamps() -> dict[str, str]:
        return {
            child.name: folder_stamp(child)
            for child in sorted(folder.iterdir())
            if not child.name.startswith(".") and (child / "skill.json").is_file()
        }

    def load(slug: str, stamp: str) -> Loaded:
        path = folder / slug
        files = read_package_dir(path)
        skill = load_skill(files, slug=slug, base_url=(base_urls or {}).get(slug), lazy=True)
        return skill, files, followed_version(path)

    return Catalog(stamps, load)
