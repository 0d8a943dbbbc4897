"""The `skillpress` command's entry point: `--help` from a cache of its own output, and a plain
`derive` line run without the command line being built at all (`derive_command`).

Building the command tree (typer, click, every command's signature) costs several times what
printing help does, and `skillpress --help` is what a person runs first. So a help command line
(`skillpress [COMMAND ...] --help`) is answered from the text the full command line printed for
it before, kept under the user's cache directory with a fingerprint of everything the text
depends on: this interpreter, the sources of `skillpress/` (size and modification time of every
module), typer's, and the terminal's width. Any difference, a missing or unreadable cache, or
any other command line: the full command line runs (and a help text it prints is kept for next
time). This module imports nothing beyond the interpreter's core.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main", "help_key", "cache_file"]

_WORD = frozenset("abcdefghijklmnopqrstuvwxyz-")


def _is_help(args: list[str]) -> bool:
    """`--help` after nothing but command names (no options, no arguments)."""
    return (
        bool(args)
        and args[-1] == "--help"
        and len(args) <= 4
        and all(a and set(a) <= _WORD and not a.startswith("-") for a in args[:-1])
    )


def _columns() -> int:
    """The width help is wrapped to, found as `shutil.get_terminal_size` finds it."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def _sources(root: str, out: list[str]) -> None:
    with os.scandir(root) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    _sources(entry.path, out)
            elif entry.name.endswith(".py"):
                st = entry.stat()
                out.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")


def _typer_stamp() -> str:
    for entry in sys.path:
        init = os.path.join(entry or ".", "typer", "__init__.py")
        try:
            st = os.stat(init)
        except OSError:
            continue
        return f"{init}:{st.st_size}:{st.st_mtime_ns}"
    return "no typer"


def help_key(args: list[str], root: str | None = None) -> str:
    """Everything a help text depends on, as one line: a cached text with another key is stale."""
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [
        sys.executable,
        sys.version.replace("\n", " "),
        _typer_stamp(),
        f"columns={_columns()}",
    ]
    parts.append(" ".join(args))
    _sources(root, parts)
    return " | ".join(parts)


def cache_file(args: list[str]) -> str | None:
    """Where the help for `args` is kept (None when there is no home to keep it in)."""
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.path.join(os.path.expanduser("~"), ".cache") if os.path.expanduser("~") != "~" else ""
    )
    if not base:
        return None
    name = "_".join(a.strip("-") for a in args) or "help"
    return os.path.join(base, "skillpress", "help", f"{name}.txt")


def _cached(path: str, key: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline()
            if first.rstrip("\n") != key:
                return None
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _keep(path: str, key: str, text: str) -> None:
    """Write the cache entry whole (a reader never sees half of one); a failure only means the
    next help runs the full command line again."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(key + "\n" + text)
        os.replace(tmp, path)
    except OSError:
        pass


def _printed_help(args: list[str]) -> tuple[int, str]:
    """Run the full command line for `args`, printing its output and returning it."""
    import contextlib
    import io

    from skillpress.cli.main import app

    buffer = io.StringIO()
    code: int | str | None = 0
    with contextlib.redirect_stdout(buffer):
        try:
            app(args, prog_name="skillpress")
        except SystemExit as exc:
            code = exc.code
    text = buffer.getvalue()
    sys.stdout.write(text)
    return (code if isinstance(code, int) else 1), text


def main() -> None:
    args = sys.argv[1:]
    if _is_help(args):
        path = cache_file(args)
        key = help_key(args)
        text = _cached(path, key) if path else None
        if text is None:
            code, text = _printed_help(args)
            if code == 0 and text and path:
                _keep(path, key, text)
            sys.stdout.flush()
            sys.exit(code)
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if args[:1] == ["derive"]:  # a plain derive runs without building the command line
        from skillpress.cli.derive_command import run_plain

        if run_plain(args[1:]):
            return
    from skillpress.cli.main import main as run

    run()


if __name__ == "__main__":
    main()
