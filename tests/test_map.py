"""The map is the project's own and stays true: docs/architecture.md names every module of
skillpress/ under its folder (and nothing that does not exist), and README's Layout names every
package and only files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _modules() -> set[str]:
    return {
        str(p.relative_to(ROOT))
        for p in (ROOT / "skillpress").rglob("*.py")
        if p.name != "__init__.py" and "migrations" not in p.parts and "__pycache__" not in p.parts
    }


def _packages() -> set[str]:
    return {
        str(p.parent.relative_to(ROOT)) + "/"
        for p in (ROOT / "skillpress").rglob("__init__.py")
        if "migrations" not in p.parts
        and "__pycache__" not in p.parts
        and p.parent != ROOT / "skillpress"
    }


def test_the_architecture_document_maps_every_module_and_only_those() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    mapped: set[str] = set()
    folder = None
    for line in text.split("## Module map", 1)[1].splitlines():
        heading = re.fullmatch(r"\*\*`([\w/]+/)`\*\*", line.strip())
        if heading:
            folder = heading.group(1)
            continue
        entry = re.match(r"- `([\w]+\.py)` — \S", line)
        if entry:
            assert folder is not None, line
            mapped.add(folder + entry.group(1))
    modules = _modules()
    assert sorted(modules - mapped) == [], "modules the map does not name"
    assert sorted(mapped - modules) == [], "names in the map that do not exist"


def _layout_rows() -> dict[str, str]:
    """README's Layout as {folder: everything its rows say of it} (a folder's own row and the
    rows under it, up to the next folder)."""
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("```", 2)[1]
    said: dict[str, str] = {}
    parent = current = ""
    for row in layout.splitlines():
        top = re.match(r"^([\w./]+/)\s", row)
        sub = re.match(r"^  ([\w]+/)\s", row)
        if top:
            parent = current = top.group(1)
        elif sub:
            current = parent + sub.group(1)
        said[current] = said.get(current, "") + "\n" + row
    return said


def test_readme_layout_names_every_package_and_only_what_exists() -> None:
    said = _layout_rows()
    missing = sorted(p for p in _packages() if p not in said)
    assert missing == [], f"packages README's Layout does not name: {missing}"
    every = {p.name for p in ROOT.rglob("*.py") if ".venv" not in p.parts}
    for folder, text in said.items():
        assert not folder or (ROOT / folder).is_dir(), (
            f"README's Layout names {folder}, which does not exist"
        )
        for name in re.findall(r"\b([\w]+\.py)\b", text):
            assert name in every, f"README's Layout names {name}, which does not exist"


def test_a_layout_row_that_lists_its_modules_lists_them_all() -> None:
    """Both ways: where README's Layout enumerates a folder's modules, none is left out."""
    for folder, text in _layout_rows().items():
        named = set(re.findall(r"\b([\w]+\.py)\b", text))
        if not folder or len(named) < 3:  # a row that names a module or two by way of example
            continue
        modules = {p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py"}
        assert sorted(modules - named) == [], f"README's Layout row for {folder} leaves out"
