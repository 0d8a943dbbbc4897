"""Writing a package to a directory as a whole, and reading one back (derived or hand-written)."""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from skillpress.errors import Permanent

if TYPE_CHECKING:  # (imported when a child is made: reading a package needs none)
    from skillpress.derive.split import Child

__all__ = ["write_package_dir", "PackageWriter", "read_package_dir", "OutputDirError", "LazyFiles"]

_MAX_PACKAGE_FILES = 50_000


class OutputDirError(OSError, Permanent):
    """The output directory cannot take the package (exists with other content, unwritable)."""


def write_package_dir(
    files: dict[str, bytes], out: Path, marker: str = "skill.json", *, detach_removal: bool = False
) -> None:
    """Write `files` into `out` as a whole: a new directory is swapped in, stale files never linger.
    An existing `out` is replaced only if it holds `marker` (what this command wrote before).
    With `detach_removal` the replaced directory (renamed aside, hidden) is removed by a detached
    process, so a command that is about to exit does not wait for ten thousand unlinks."""
    PackageWriter(out, marker).commit(files, detach_removal=detach_removal)


class PackageWriter:
    """A package directory written as its files become ready and swapped in whole at the end
    (`commit`). Files handed over early (`write_soon`) are written by a forked child while the
    caller goes on building the rest, on the other core; a thread would not do, since it waits
    for the interpreter lock the caller holds. The child is best forked early
    (`start_writing`), while the caller is small, and sent the files through a pipe: forked
    when they are ready it would share the caller's whole heap, every page of which the caller
    then copies as it touches it (a large API's package is built after that point). The output
    directory is checked when the writer is made, so a wrong `--out` is refused before any
    work. Until `commit`, nothing is in `out`; any failure leaves `out` as it was and removes
    what was written."""

    def __init__(self, out: Path, marker: str = "skill.json") -> None:
        out = out.resolve()
        if out.exists():
            if not out.is_dir():
                raise OutputDirError(f"{out} exists and is not a directory")
            if any(out.iterdir()) and not (out / marker).exists():
                raise OutputDirError(
                    f"{out} is not empty and holds no {marker}; choose another --out"
                )
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._tmp = _fresh_dir(out.parent, f".{out.name}.")
        # the package being replaced: files it holds unchanged are linked, not written again
        self._reuse = out if out.is_dir() and (out / marker).is_file() else None
        self._made = {self._tmp}
        self._handed: dict[str, bytes] = {}  # what a child was given (written when it succeeded)
        self._child: Child | None = None
        self._sending: int | None = None  # the pipe to a started child, until files are sent

    def start_writing(self) -> None:
        """Fork now the child that writes what `write_soon` hands over (only from a
        single-threaded process; nothing where there is no fork)."""
        if self._child is not None or not hasattr(os, "fork"):
            return
        from skillpress.derive.split import in_child

        receive, self._sending = os.pipe()
        with contextlib.suppress(AttributeError, OSError):  # (fewer wake-ups; Linux only)
            import fcntl

            fcntl.fcntl(self._sending, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        sending = self._sending

        def write() -> bytes:  # (the child's work)
            os.close(sending)
            self._write(_received(receive))
            return b""

        self._child = in_child(write)
        os.close(receive)

    def write_soon(self, files: dict[str, bytes]) -> None:
        """Have `files` written by the child (`start_writing`; started now if it is not) while
        the caller goes on; where there is no fork, write them now."""
        if self._sending is None:
            self._wait()
            self.start_writing()
        if self._sending is None:
            self._write(files)
            return
        sending, self._sending = self._sending, None
        try:
            _send(sending, files)
            self._handed = files
        except BrokenPipeError:  # the child is gone: what it did not write is written at commit
            pass
        finally:
            os.close(sending)

    def commit(self, files: dict[str, bytes], *, detach_removal: bool = False) -> None:
        """Write whatever of `files` is not written yet (a file handed over early with other
        bytes is written again), then swap the directory in for `out`. What the child was not
        handed is written while it still writes."""
        out, tmp = self.out, self._tmp
        handed = self._handed if self._child is not None else {}
        try:
            self._write({n: d for n, d in files.items() if n not in handed}, replace=True)
            written = self._wait()
            self._write(
                {n: d for n, d in files.items() if n in handed and written.get(n) != d},
                replace=True,
            )
            for name in set(written) - set(files):
                (tmp / name).unlink()
            if out.exists():
                old = out.with_name(f".{out.name}.old-{os.getpid()}")
                out.rename(old)
                tmp.rename(out)
                if detach_removal:
                    _remove_detached(old)
                else:
                    _rmtree(old)
            else:
                tmp.rename(out)
        except BaseException:
            _rmtree(tmp)
            raise

    def abort(self) -> None:
        """Give up: wait for a child, remove what was written (`out` is untouched)."""
        try:
            self._wait()
        finally:
            _rmtree(self._tmp)

    def _wait(self) -> dict[str, bytes]:
        """Wait for a writing child: what it wrote, or nothing when it failed (the caller then
        writes everything itself); a file system error it met is raised here. A started child
        sent nothing is told there is nothing, and writes nothing."""
        if self._sending is not None:
            with contextlib.suppress(BrokenPipeError):
                _send(self._sending, {})
            os.close(self._sending)
            self._sending = None
        if self._child is None:
            return {}
        succeeded, said = self._child.join()
        self._child = None
        if succeeded:
            return self._handed
        if said:
            raise OutputDirError(said.decode(errors="replace"))
        return {}

    def _write(self, files: dict[str, bytes], replace: bool = False) -> None:
        """Create each file in the new directory; one the package being replaced holds with the
        same bytes is hard-linked from there instead (re-deriving an unchanged API writes no
        data, and removing the old directory then frees no blocks). `replace`: a file there
        already is unlinked first, never truncated (it may be such a link)."""
        tmp, made, old = self._tmp, self._made, self._reuse
        for name, data in files.items():
            # `tmp` is ours and fresh, so a lexical check is enough: no absolute names, no `..`
            parts = PurePosixPath(name).parts
            if not parts or name.startswith("/") or any(p in ("..", ".") for p in parts):
                raise OutputDirError(f"{name!r} would be written outside {self.out}")
            target = tmp.joinpath(*parts)
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            if replace:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(target)
            if old is not None and _link_same(old.joinpath(*parts), data, target):
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)


_PIPE_BYTES = 1 << 20  # what Linux lets a pipe hold unasked (fs/pipe-max-size)
_HEAD = struct.Struct("<IQ")  # a file's name and data lengths, before them
_MAX_BUFFERS = 1023  # iovecs per writev (IOV_MAX is 1024)


def _send(fd: int, files: Mapping[str, bytes]) -> None:
    """`files` written to the pipe as records (head, name, data), and an empty head that says
    they are all there."""
    buffers: list[bytes] = []
    for name, data in files.items():
        encoded = name.encode()
        buffers += (_HEAD.pack(len(encoded), len(data)), encoded, data)
    buffers.append(_HEAD.pack(0, 0))
    _write_all(fd, buffers)


def _write_all(fd: int, buffers: list[bytes]) -> None:
    """Every buffer written, in order, however few bytes each writev takes."""
    views = [memoryview(b) for b in buffers if b]
    at = 0  # the first view not written whole (its written part cut off)
    while at < len(views):
        done = os.writev(fd, views[at : at + _MAX_BUFFERS])
        while at < len(views) and done >= len(views[at]):
            done -= len(views[at])
            at += 1
        if done:
            views[at] = views[at][done:]


def _received(fd: int) -> dict[str, bytes]:
    """The files `_send` wrote to the pipe, read up to the empty head that ends them (the pipe
    may stay open after it: a child forked since holds it too); none when the pipe ends first
    (a sender that stopped short had nothing written)."""
    files: dict[str, bytes] = {}
    with os.fdopen(fd, "rb", buffering=_PIPE_BYTES) as pipe:
        while len(head := pipe.read(_HEAD.size)) == _HEAD.size:
            name_len, data_len = _HEAD.unpack(head)
            if name_len == 0:
                return files
            name, data = pipe.read(name_len), pipe.read(data_len)
            if len(name) != name_len or len(data) != data_len:
                break
            files[name.decode()] = data
    return {}


def _link_same(source: Path, data: bytes, target: Path) -> bool:
    """Hard-link `source` as `target` when it is a plain file holding exactly `data`."""
    try:
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data) or st.st_nlink != 1:
            return False
        if os.read(fd, len(data) + 1) != data:
            return False
        os.link(source, target, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove_detached(path: Path) -> None:
    """Remove `path` (and any older leftovers beside it: a removal that was killed) in a process
    of its own session, with no terminal or pipes of ours; where none can start, remove it here.
    (Spawned as it is, rather than through subprocess: a command about to exit need not import
    it; every descriptor of ours but the three it is given /dev/null for is close-on-exec.)"""
    prefix = path.name[: path.name.rindex(".old-") + 5]
    with os.scandir(path.parent) as entries:
        leftovers = sorted(e.path for e in entries if e.name.startswith(prefix) and e.is_dir())
    try:
        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        os.posix_spawnp(
            "rm", ["rm", "-rf", "--", *leftovers], os.environ, file_actions=quiet, setsid=True
        )
        return
    except (AttributeError, NotImplementedError, OSError):  # (no posix_spawn, no rm)
        pass
    for leftover in leftovers:
        _rmtree(Path(leftover))


def _rmtree(path: Path) -> None:
    import shutil  # (only where something is removed here: a failure, an old package)

    shutil.rmtree(path, ignore_errors=True)


def _fresh_dir(parent: Path, prefix: str) -> Path:
    """A new directory only this process may enter, its name unguessable (as `mkdtemp` makes
    one, without importing tempfile and random for it)."""
    for _ in range(100):
        path = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no new directory could be made in {parent}")


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
        if not any(p.suffix == ".md" for p in path.iterdir()) and not (path / "SKILL.md").is_file():
            raise OutputDirError(
                f"{path} holds neither skill.json nor operation files (*.md): not a skill package"
            )
    elif not (path / "skill.json").is_file():
        raise OutputDirError(
            f"{path} holds no skill.json: not a skill package (make one with `skillpress derive`)"
        )
    names: list[str] = []
    folders = [""]
    if hand_written and (path / "SKILL.md").is_file() and (path / "references").is_dir():
        folders.append("references/")  # an Agent Skills folder: its operations are references
    for folder in folders:
        with os.scandir(path / folder if folder else path) as entries:
            for entry in entries:
                if entry.is_file() and not entry.name.startswith("."):
                    names.append(folder + entry.name)
                    if len(names) > _MAX_PACKAGE_FILES:
                        raise OutputDirError(f"{path} holds more than {_MAX_PACKAGE_FILES} files")

    def read(name: str) -> bytes:
        try:
            return (path / name).read_bytes()
        except OSError as exc:
            raise OutputDirError(f"{path / name}: cannot be read ({exc.strerror})") from None

    return LazyFiles(sorted(names), read)
