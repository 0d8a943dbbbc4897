"""A package directory written while it is still being built: files handed over early are written
by a forked child, the rest at `commit`, and `out` changes only when the whole is there."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from skillpress.app.base.package_dir import OutputDirError, PackageWriter
from skillpress.derive import DeriveOptions, derive_package
from tests.conftest import SPECS


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_early_files_are_written_aside_and_out_changes_only_at_commit(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "skill.json").write_text("the previous package")
    writer = PackageWriter(out)
    writer.write_soon({"a.md": b"first", "b.md": b"handed over, then changed", "c.md": b"gone"})
    assert _tree(out) == {"skill.json": b"the previous package"}
    writer.commit({"a.md": b"first", "b.md": b"final", "skill.json": b"{}", "sub/d.md": b"d"})
    assert _tree(out) == {"a.md": b"first", "b.md": b"final", "skill.json": b"{}", "sub/d.md": b"d"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


def test_a_derivation_written_while_it_is_built_is_the_package_exactly(tmp_path: Path) -> None:
    """The command line's way: the operation files go to the writer as soon as they are rendered
    (a forked child renders a share of Stripe's, another writes them), the rest at commit."""
    data = (SPECS / "stripe.json").read_bytes()
    writer = PackageWriter(tmp_path / "stripe")
    handed: list[int] = []

    def hand(files: dict[str, bytes]) -> None:
        handed.append(len(files))
        writer.write_soon(files)

    package = derive_package(data, DeriveOptions(processes=2, on_files=hand))
    writer.commit(package.files)
    assert _tree(tmp_path / "stripe") == package.files
    # the operation files, handed over before the body and the manifest are built
    assert handed == [len(package.manifest.operations)]
    assert package.version_id == derive_package(data).version_id


def test_a_failing_child_leaves_out_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "skill.json").write_text("kept")
    writer = PackageWriter(out)
    writer.write_soon({"ok.md": b"x", "../escape.md": b"y"})
    with pytest.raises(OutputDirError, match=r"'\.\./escape\.md' would be written outside"):
        writer.commit({"ok.md": b"x", "skill.json": b"{}"})
    assert _tree(out) == {"skill.json": b"kept"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]
    assert not (tmp_path / "escape.md").exists()


def test_abort_removes_what_was_written(tmp_path: Path) -> None:
    writer = PackageWriter(tmp_path / "pkg")
    writer.write_soon({"a.md": b"a"})
    writer.abort()
    assert os.listdir(tmp_path) == []


def test_a_wrong_out_is_refused_before_anything(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("mine")
    with pytest.raises(OutputDirError, match="is not empty and holds no skill.json"):
        PackageWriter(tmp_path / "notes")
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputDirError, match="exists and is not a directory"):
        PackageWriter(tmp_path / "file")
    assert sorted(os.listdir(tmp_path)) == ["file", "notes"]


def test_files_the_replaced_package_holds_unchanged_are_linked_not_written(tmp_path: Path) -> None:
    """Re-deriving an unchanged API writes no data: the same bytes are the same inode (the old
    directory's removal frees nothing); a changed file, or one that is a link elsewhere, is
    written afresh, and nothing of the old directory changes before the swap."""
    out = tmp_path / "pkg"
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_bytes(b"shared")
    first = {"same.md": b"same", "changed.md": b"before", "skill.json": b"{}"}
    PackageWriter(out).commit(first)
    (out / "shared.md").hardlink_to(elsewhere)
    inode = {name: (out / name).stat().st_ino for name in [*first, "shared.md"]}
    writer = PackageWriter(out)
    second = {
        "same.md": b"same",
        "changed.md": b"after",
        "skill.json": b"{}",
        "shared.md": b"shared",
    }
    writer.write_soon({"same.md": b"same", "changed.md": b"after"})
    writer.commit(second)
    assert _tree(out) == second
    assert (out / "same.md").stat().st_ino == inode["same.md"]
    assert (out / "skill.json").stat().st_ino == inode["skill.json"]
    assert (out / "changed.md").stat().st_ino != inode["changed.md"]
    assert (out / "shared.md").stat().st_ino != inode["shared.md"]
    assert elsewhere.read_bytes() == b"shared" and elsewhere.stat().st_nlink == 1
    assert (out / "same.md").stat().st_nlink == 1  # the old directory is gone


def test_a_file_handed_over_then_changed_is_not_written_through_a_link(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    PackageWriter(out).commit({"a.md": b"old", "skill.json": b"{}"})
    writer = PackageWriter(out)
    writer.write_soon({"a.md": b"old"})  # linked from the package being replaced
    deadline = time.monotonic() + 10
    while not any(p.stat().st_nlink == 2 for p in tmp_path.glob(".pkg.*/a.md")):
        assert time.monotonic() < deadline, "the early file was never linked"
        time.sleep(0.01)
    snapshot = tmp_path / "snapshot"
    os.link(out / "a.md", snapshot)  # (what a reader of the old package still holds)
    writer.commit({"a.md": b"new", "skill.json": b"{}"})
    assert (out / "a.md").read_bytes() == b"new"
    assert snapshot.read_bytes() == b"old"


def _files(count: int, size: int) -> dict[str, bytes]:
    return {f"ops/op{i}.md": bytes([65 + i % 26]) * (size + i) for i in range(count)}


def test_a_writer_started_early_is_sent_the_files_through_a_pipe(tmp_path: Path) -> None:
    """Forked before the files exist (while the caller is small), the child is sent them: more
    than a pipe holds, each whole, written exactly; the rest at commit."""
    out = tmp_path / "pkg"
    writer = PackageWriter(out)
    writer.start_writing()
    early = _files(300, 10_000)  # 3 MB: the pipe is filled and emptied many times over
    writer.write_soon(early)
    final = early | {"skill.json": b"{}", "ops/op7.md": b"changed after it was handed over"}
    writer.commit(final)
    assert _tree(out) == final


def test_files_sent_a_few_bytes_at_a_time_arrive_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writev may take less than it is given (a signal, a full pipe): what it did not take is
    sent next, from where it stopped, across more buffers than one writev takes."""
    import skillpress.app.base.package_dir as package_dir

    real = os.writev
    taken: list[int] = []

    def some(fd: int, buffers: list[memoryview]) -> int:
        assert len(buffers) <= package_dir._MAX_BUFFERS
        want = sum(len(b) for b in buffers)
        n = real(fd, [memoryview(b"".join(bytes(b) for b in buffers))[: max(1, want // 3 - 7)]])
        taken.append(n)
        return n

    monkeypatch.setattr(package_dir.os, "writev", some)
    out = tmp_path / "pkg"
    writer = PackageWriter(out)
    writer.start_writing()
    early = _files(1_500, 700)  # 4,501 buffers: five writevs' worth at the most
    writer.write_soon(early)
    writer.commit(early)
    assert _tree(out) == early
    assert len(taken) > 10 and min(taken) < 700  # (cut inside a file, many times)


def test_a_started_writer_sent_nothing_writes_nothing_even_with_its_pipe_held_open(
    tmp_path: Path,
) -> None:
    """A child forked later (the derivation's) holds the pipe too: the writer is told where the
    files end, so it never waits for the pipe to close."""
    out = tmp_path / "pkg"
    writer = PackageWriter(out)
    writer.start_writing()
    holder = os.fork()  # holds every descriptor the caller has, the pipe's end included
    if holder == 0:
        time.sleep(60)
        os._exit(0)
    try:
        started = time.monotonic()
        writer.commit({"skill.json": b"{}"})
        assert time.monotonic() - started < 30  # (a hang guard: it would wait the minute out)
        assert _tree(out) == {"skill.json": b"{}"}
        writer = PackageWriter(tmp_path / "second")
        writer.start_writing()
        writer.write_soon(_files(3, 10))
        writer.commit({"skill.json": b"{}"} | _files(3, 10))
        assert _tree(tmp_path / "second") == {"skill.json": b"{}"} | _files(3, 10)
    finally:
        os.kill(holder, 9)
        os.waitpid(holder, 0)


def test_a_started_writer_that_died_leaves_the_writing_to_commit(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    writer = PackageWriter(out)
    writer.start_writing()
    assert writer._child is not None
    os.kill(writer._child.pid, 9)
    early = _files(200, 5_000)
    writer.write_soon(early)  # (its pipe is closed: nothing is said, the files are kept)
    writer.commit(early | {"skill.json": b"{}"})
    assert _tree(out) == early | {"skill.json": b"{}"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]
