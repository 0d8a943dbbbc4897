"""Local files a call sends (a multipart part, a raw body): read only from under one folder the
caller allows, never through a link out of it, never a device or a folder, and never more than a
size cap. The model names a path; this decides whether it may be read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from skillpress.runtime.calling.request import FileReader

__all__ = ["MAX_FILE_BYTES", "local_files"]

MAX_FILE_BYTES = 25 * 1024 * 1024


def local_files(root: Path | str, max_bytes: int = MAX_FILE_BYTES) -> FileReader:
    """A reader of the files under `root` (a relative path is taken from `root`); each refusal
    is a ValueError whose text says why, for the call's refusal."""
    base = Path(root).resolve()

    def read(path: str) -> tuple[bytes, str]:
        if not path or "\x00" in path:
            raise ValueError("the path is empty")
        wanted = Path(path)
        target = (wanted if wanted.is_absolute() else base / wanted).resolve()
        if target != base and base not in target.parents:
            raise ValueError(f"{path} is outside {base}, the folder files may be read from")
        try:
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file under {base}") from None
        except OSError as exc:
            raise ValueError(f"{path} cannot be read ({exc.strerror})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{path} is not a regular file")
            if info.st_size > max_bytes:
                raise ValueError(
                    f"{path} is {info.st_size:,} bytes, over the {max_bytes:,} a call may send"
                )
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(max_bytes + 1)
        finally:
            os.close(fd)
        if len(data) > max_bytes:
            raise ValueError(f"{path} is over the {max_bytes:,} bytes a call may send")
        return data, target.name

    return read
