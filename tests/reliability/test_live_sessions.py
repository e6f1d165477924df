"""Live sessions: a runtime may still be appending to the file being repaired.

fix --in-place notices any change between its read and its replace (size,
mtime, inode) and refuses, writing nothing; --keep-open-tail leaves the last
turn's dangling calls alone. A process that holds the file open for writing
is refused too (test_open_writers.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apx_doctor import stream

from ._support import json_report, run_cli
from .test_crash_safe_writes import CALL, ROOT, USER, broken_transcript, others

LATE = b'{"role":"tool","tool_call_id":"c1","content":"the dashboard is green"}\n'


def _after_the_read(monkeypatch: pytest.MonkeyPatch, change) -> None:
    """Run ``change`` once the pass has read the whole file, before anything is replaced."""
    real = stream.run

    def run(lines, config, sink=None):
        result = real(lines, config, sink)
        change()
        return result

    monkeypatch.setattr(stream, "run", run)


def _append(path: Path) -> None:
    with open(path, "ab") as handle:
        handle.write(LATE)


def _rewrite_same_size(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data.replace(b"check", b"CHECK", 1))


def _replace_with_copy(path: Path) -> None:
    # Same bytes, same mtime, but a new file (another inode): a runtime that rotates.
    info = path.stat()
    copy = path.with_suffix(".new")
    copy.write_bytes(path.read_bytes())
    os.utime(copy, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(copy, path)


def _touch(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))


@pytest.mark.parametrize("change", [_append, _rewrite_same_size, _replace_with_copy, _touch], ids=lambda f: f.__name__[1:])
def test_fix_in_place_refuses_a_file_that_changed_after_its_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change) -> None:
    path = tmp_path / "live.jsonl"
    path.write_bytes(broken_transcript(1 << 20))
    _after_the_read(monkeypatch, lambda: change(path))
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and "changed while" in result.output and "nothing was written" in result.output
    # What is there now is what the other writer left: nothing of ours.
    assert b"not run" not in path.read_bytes()
    assert others(tmp_path, path) == []


def test_bytes_appended_during_the_replace_are_carried_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The instant between the check and the replace: the appended line is not lost."""
    from apx_doctor import files

    path = tmp_path / "live.jsonl"
    old = USER + CALL
    path.write_bytes(old)
    real_replace = os.replace

    def replace(src, dst):
        if str(dst) == str(path):
            _append(path)  # into the old file, after the check passed
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2
    assert "carried over" in result.output and str(path) in result.output
    data = path.read_bytes()
    assert data.startswith(old) and data.endswith(LATE)


WRITER = """
import os, sys, time
path, stop, log = sys.argv[1:4]
n = 0
while not os.path.exists(stop):
    line = ('{"role":"user","content":"live %d"}\\n' % n).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, line)
    os.close(fd)
    with open(log, "ab") as f:
        f.write(line)
    n += 1
    time.sleep(0.001)
"""


def test_fix_in_place_with_a_real_writer_appending(tmp_path: Path) -> None:
    path, stop, log = tmp_path / "live.jsonl", tmp_path / "stop", tmp_path / "log"
    old = broken_transcript(30 << 20)
    path.write_bytes(old)
    log.write_bytes(b"")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop), str(log)])
    try:
        while path.stat().st_size == len(old):  # the writer is running
            time.sleep(0.001)
        result = subprocess.run(
            [sys.executable, "-m", "apx_doctor", "fix", "--in-place", str(path)], capture_output=True, timeout=300, cwd=ROOT
        )
    finally:
        stop.write_bytes(b"")
        writer.wait(timeout=30)
    assert result.returncode == 2, result.stderr
    # Caught holding the file open (it opens it for each line), or writing to it.
    refused = b"changed while" in result.stderr or b"open for writing" in result.stderr
    assert refused or b"carried over" in result.stderr
    # Every byte the writer wrote is in the file, after the original: nothing of it lost.
    # (Refused: the file is the writer's alone. Carried over, in the instant of the
    # replace: the repair's one record is in it too.)
    not_run = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'
    data = path.read_bytes()
    if refused:
        assert not_run not in data
    assert data.replace(not_run, b"", 1) == old + log.read_bytes()
    assert [p for p in others(tmp_path, path) if p not in ("stop", "log")] == []


def test_keep_open_tail_leaves_the_last_turns_call_alone(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    earlier = USER + CALL + USER  # closed by the next user entry: still repaired
    tail = CALL.replace(b'"c1"', b'"c2"')
    path.write_bytes(earlier + tail)
    checked = json_report(run_cli("check", "--keep-open-tail", "--output-format", "json", str(path)))
    assert [(f["code"], f.get("call_id")) for f in checked["files"][0]["findings"]] == [("APX001", "c1")]
    result = run_cli("fix", "--keep-open-tail", "--in-place", str(path))
    assert result.exit_code == 1
    data = path.read_bytes()
    assert data.endswith(tail) and b'"tool_call_id":"c1"' in data and b'"tool_call_id":"c2"' not in data
    # Without the option the tail is closed too.
    run_cli("fix", "--in-place", str(path))
    assert path.read_bytes().endswith(b'{"role":"tool","tool_call_id":"c2","content":"not run: the turn was interrupted"}\n')
