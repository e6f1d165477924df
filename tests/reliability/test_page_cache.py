"""How a long rewrite uses the kernel, and that it loses nothing by it.

A rewrite tells the kernel (posix_fadvise DONTNEED) two things: the cached pages of
the file its output replaces are no longer needed, and each finished step of the
new file can go to disk now. Both are hints only. An in-place repair has the
kernel copy the unchanged prefix (copy_file_range), which is most of the file
when the cut turn is the last. These tests hold the promises around them: every
byte of the repair is written, the input being read is never the file released,
a system that refuses the hint or the copy still gets its repair, and a file
that shrinks meanwhile is left to whoever shrank it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from apx_doctor import files

from ._support import run_cli
from .test_crash_safe_writes import broken_transcript, repaired

pytestmark = pytest.mark.skipif(not files.HAS_FADVISE, reason="this system has no posix_fadvise")


class Hints:
    """Records each DONTNEED hint as (device, inode, length) and passes it on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[int, int, int]] = []
        real = os.posix_fadvise

        def record(fd: int, offset: int, length: int, advice: int) -> None:
            found = os.fstat(fd)
            self.calls.append((found.st_dev, found.st_ino, length))
            real(fd, offset, length, advice)

        monkeypatch.setattr(files.os, "posix_fadvise", record)

    def about(self, stat: os.stat_result) -> list[int]:
        return [length for dev, ino, length in self.calls if (dev, ino) == (stat.st_dev, stat.st_ino)]


@pytest.mark.parametrize("mode", ["--in-place", "--output"])
def test_a_long_rewrite_hands_over_finished_steps_and_keeps_every_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    data = broken_transcript(3 << 20)
    expected = repaired(tmp_path, data)
    source = tmp_path / "session.jsonl"
    source.write_bytes(data)
    target = source if mode == "--in-place" else tmp_path / "out.jsonl"
    monkeypatch.setattr(files, "WRITEBACK_STEP", 64 << 10)
    hints = Hints(monkeypatch)
    args = ["fix", mode, str(source)] if mode == "--in-place" else ["fix", "--output", str(target), str(source)]
    assert run_cli(*args).exit_code == 1
    assert target.read_bytes() == expected
    handed = hints.about(target.stat())  # the new file, after the rename
    assert handed, "no finished step was handed to writeback"
    assert handed == sorted(handed) and len(set(handed)) == len(handed)
    # Never the last step: those bytes may still sit in the write buffer.
    assert max(handed) <= len(expected) - (64 << 10)


def test_the_file_an_output_replaces_is_released_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(broken_transcript(1 << 16))
    out.write_bytes(b"an earlier repair\n")
    old = out.stat()
    hints = Hints(monkeypatch)
    assert run_cli("fix", "--output", str(out), str(source)).exit_code == 1
    assert hints.about(old) == [0], "the replaced file's pages were not released"
    assert hints.about(source.stat()) == []


def test_an_output_that_is_its_own_input_keeps_the_input_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = broken_transcript(1 << 16)
    expected = repaired(tmp_path, data)
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    before = path.stat()
    hints = Hints(monkeypatch)
    assert run_cli("fix", "--output", str(path), str(path)).exit_code == 1
    assert path.read_bytes() == expected
    assert hints.about(before) == []


@pytest.mark.parametrize("refusal", ["raises", "missing"])
def test_a_system_that_refuses_the_hint_still_gets_its_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    data = broken_transcript(3 << 20)
    expected = repaired(tmp_path, data)
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(data)
    out.write_bytes(b"an earlier repair\n")
    monkeypatch.setattr(files, "WRITEBACK_STEP", 64 << 10)
    if refusal == "raises":

        def refuse(*args: object) -> None:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

        monkeypatch.setattr(files.os, "posix_fadvise", refuse)
    else:
        monkeypatch.setattr(files, "HAS_FADVISE", False)
    assert run_cli("fix", "--output", str(out), str(source)).exit_code == 1
    assert out.read_bytes() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


# --- the unchanged prefix of an in-place repair -----------------------------------


def _cut_last_turn() -> bytes:
    """A long sound session whose last turn was cut: the prefix is almost the whole file."""
    data = broken_transcript(2 << 20)
    # broken_transcript puts its dangling call first; move it to the end.
    head = data[: data.index(b"\n", data.index(b"\n") + 1) + 1]
    return data[len(head) :] + head


def _partial_then_failing(real):
    calls = []

    def copy(source, target, count, offset_src=None, *rest):
        calls.append(count)
        if len(calls) == 1:
            return real(source, target, min(count, 100_000), offset_src, *rest)
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    return copy


@pytest.mark.parametrize("kernel", ["copies", "missing", "refuses", "stops-midway"])
def test_an_in_place_repair_keeps_the_unchanged_prefix_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    data = _cut_last_turn()
    expected = repaired(tmp_path, data)
    assert expected.startswith(data[:-200]), "the repair goes at the very end"
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    if kernel == "missing":
        monkeypatch.delattr(files.os, "copy_file_range", raising=False)
    elif kernel == "refuses":

        def refuse(*args: object) -> int:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

        monkeypatch.setattr(files.os, "copy_file_range", refuse, raising=False)
    elif kernel == "stops-midway":
        if not hasattr(os, "copy_file_range"):
            pytest.skip("this system has no copy_file_range")
        monkeypatch.setattr(files.os, "copy_file_range", _partial_then_failing(os.copy_file_range))
    copied: list[int] = []
    if kernel == "copies" and hasattr(os, "copy_file_range"):
        real = os.copy_file_range

        def spy(*args: object) -> int:
            copied.append(real(*args))
            return copied[-1]

        monkeypatch.setattr(files.os, "copy_file_range", spy)
    assert run_cli("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == expected
    if copied:
        assert sum(copied) > len(data) - 1000, "the kernel copied the prefix"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]


@pytest.mark.parametrize("kernel", ["copies", "missing"])
def test_a_file_that_shrinks_before_its_prefix_is_copied_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    data = _cut_last_turn()
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    if kernel == "missing":
        monkeypatch.delattr(files.os, "copy_file_range", raising=False)
    real = files._ensure_rewritable

    def cut_by_another_writer(*args: object) -> None:
        real(*args)
        with open(path, "r+b") as handle:
            handle.truncate(len(data) // 2)

    monkeypatch.setattr(files, "_ensure_rewritable", cut_by_another_writer)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2
    assert "shrank while it was being repaired" in result.output and str(path) in result.output
    assert path.read_bytes() == data[: len(data) // 2], "only the other writer's change"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]
