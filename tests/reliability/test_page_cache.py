"""Page-cache hints on long writes: they free memory and start writeback, and lose nothing.

A rewrite tells the kernel (posix_fadvise DONTNEED) two things: the cached pages of
the file its output replaces are no longer needed, and each finished step of the
new file can go to disk now. Both are hints only. These tests hold the promises
around them: every byte of the repair is written, the input being read is never
the file released, and a system that refuses the hint still gets its repair.
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
