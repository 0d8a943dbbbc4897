"""Writing a package to a directory as a whole, and reading one back (derived or hand-written)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath

__all__ = ["write_package_dir", "read_package_dir", "OutputDirError", "LazyFiles"]

_MAX_PACKAGE_FILES = 50_000


class OutputDirError(OSError):
    """The output directory cannot take the package (exists with other content, unwritable)."""


def write_package_dir(
    files: dict[str, bytes], out: Path, marker: str = "skill.json", *, detach_removal: bool = False
) -> None:
    """Write `files` into `out` as a whole: a new directory is swapped in, stale files never linger.
    An existing `out` is replaced only if it holds `marker` (what this command wrote before).
    With `detach_removal` the replaced directory (renamed aside, hidden) is removed by a detached
    process, so a command that is about to exit does not wait for ten thousand unlinks."""
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
            if detach_removal:
                _remove_detached(old)
            else:
                shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _remove_detached(path: Path) -> None:
    """Remove `path` (and any older leftovers beside it: a removal that was killed) in a process
    of its own session, with no terminal or pipes of ours; where none can start, remove it here."""
    import glob
    import subprocess

    prefix = path.name[: path.name.rindex(".old-") + 5]
    leftovers = sorted(str(p) for p in path.parent.glob(glob.escape(prefix) + "*") if p.is_dir())
    rm = shutil.which("rm")
    if rm is not None:
        try:
            subprocess.Popen(
                [rm, "-rf", "--", *leftovers],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
            return
        except OSError:
            pass
    for leftover in leftovers:
        shutil.rmtree(leftover, ignore_errors=True)


class LazyFiles(Mapping[str, bytes]):
    """A package's files by name, each read when first asked for: loading a skill to call one
    operation reads `skill.json` and that operation's file, not the other ten thousand."""

    def __init__(self, names: list[str], read: Callable[[str], bytes]) -> None:
        self._names = names
        self._known = frozenset(names)
        self._read = read
        self._cache: dict[str, bytes] = {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self._known:
            raise KeyError(name)
        data = self._cache.get(name)
        if data is None:
            data = self._cache[name] = self._read(name)
        return data

    def __contains__(self, name: object) -> bool:
        return name in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def read_package_dir(path: Path, *, hand_written: bool = False) -> Mapping[str, bytes]:
    """A package directory's files by name, read on first use. `hand_written` admits a directory
    of operation files without `skill.json` (a skill written by a person rather than derived)."""
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
    names: list[str] = []
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_file() and not entry.name.startswith("."):
                names.append(entry.name)
                if len(names) > _MAX_PACKAGE_FILES:
                    raise OutputDirError(f"{path} holds more than {_MAX_PACKAGE_FILES} files")

    def read(name: str) -> bytes:
        try:
            return (path / name).read_bytes()
        except OSError as exc:
            raise OutputDirError(f"{path / name}: cannot be read ({exc.strerror})") from None

    return LazyFiles(sorted(names), read)
