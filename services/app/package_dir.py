"""Writing a package to a directory as a whole, and reading one back (derived or hand-written)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

__all__ = ["write_package_dir", "read_package_dir", "OutputDirError"]

_MAX_PACKAGE_FILES = 50_000


class OutputDirError(OSError):
    """The output directory cannot take the package (exists with other content, unwritable)."""


def write_package_dir(files: dict[str, bytes], out: Path, marker: str = "skill.json") -> None:
    """Write `files` into `out` as a whole: a new directory is swapped in, stale files never linger.
    An existing `out` is replaced only if it holds `marker` (what this command wrote before)."""
    out = out.resolve()
    if out.exists():
        if not out.is_dir():
            raise OutputDirError(f"{out} exists and is not a directory")
        if any(out.iterdir()) and not (out / marker).exists():
            raise OutputDirError(f"{out} is not empty and holds no {marker}; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        made = {tmp}
        for name, data in files.items():
            # `tmp` is ours and fresh, so a lexical check is enough: no absolute names, no `..`
            parts = PurePosixPath(name).parts
            if not parts or name.startswith("/") or any(p in ("..", ".") for p in parts):
                raise OutputDirError(f"{name!r} would be written outside {out}")
            target = tmp.joinpath(*parts)
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_package_dir(path: Path, *, hand_written: bool = False) -> dict[str, bytes]:
    """A package directory's files by name. `hand_written` admits a directory of operation
    files without `skill.json` (a skill written by a person rather than derived)."""
    if not path.is_dir():
        raise OutputDirError(f"{path} is not a directory")
    if hand_written and not (path / "skill.json").is_file():
        if not any(p.suffix == ".md" for p in path.iterdir()):
            raise OutputDirError(
                f"{path} holds neither skill.json nor operation files (*.md): not a skill package"
            )
    elif not (path / "skill.json").is_file():
        raise OutputDirError(
            f"{path} holds no skill.json: not a skill package (make one with `skillpress derive`)"
        )
    files: dict[str, bytes] = {}
    for entry in sorted(path.iterdir()):
        if entry.is_file() and not entry.name.startswith("."):
            files[entry.name] = entry.read_bytes()
            if len(files) > _MAX_PACKAGE_FILES:
                raise OutputDirError(f"{path} holds more than {_MAX_PACKAGE_FILES} files")
    return files
