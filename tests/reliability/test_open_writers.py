"""A session a runtime still holds open for writing is never replaced, and --backup keeps the original.

The rename of an in-place repair gives the file a new inode: a runtime that
keeps the old one open (Codex holds its rollout for the whole session) goes on
appending to a file nobody reads. So fix --in-place looks for another process
holding the file open for writing, before it starts and again right before
the rename, and refuses (exit 2, the process named, nothing written) unless
--force.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from apx_doctor import files, stream

from ._support import run_cli
from .test_crash_safe_writes import CALL, USER, others

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc: Linux only")

SESSION = USER + CALL + USER
NOT_RUN = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'

# Opens the file for appending (as a runtime does), says so, closes it when told, exits at EOF.
HOLDER = """
import sys
handle = open(sys.argv[1], sys.argv[2])
print("open", flush=True)
sys.stdin.readline()
handle.close()
print("closed", flush=True)
sys.stdin.read()
"""


class Holder:
    def __init__(self, path: Path, mode: str = "a") -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline().strip() == "open"

    @property
    def pid(self) -> int:
        return self.process.pid

    def close_file(self) -> None:
        self.process.stdin.write("close\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "closed"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(SESSION)
    return path


def test_a_file_open_for_writing_elsewhere_is_refused_then_fixed_once_closed(session: Path, tmp_path: Path) -> None:
    holder = Holder(session)
    try:
        result = run_cli("fix", "--in-place", str(session))
        assert result.exit_code == 2
        assert f"open for writing by process {holder.pid} (" in result.output
        assert "python" in result.output and "--force" in result.output
        assert session.read_bytes() == SESSION
        assert others(tmp_path, session) == []  # no temporary file, no sidecar
        holder.close_file()
        done = run_cli("fix", "--in-place", str(session))
        assert done.exit_code == 1, done.output
        assert session.read_bytes() == USER + CALL + NOT_RUN + USER
    finally:
        holder.stop()


def test_force_rewrites_at_once(session: Path) -> None:
    holder = Holder(session)
    try:
        result = run_cli("fix", "--in-place", "--force", str(session))
        assert result.exit_code == 1, result.output
        assert session.read_bytes() == USER + CALL + NOT_RUN + USER
    finally:
        holder.stop()


def test_a_reader_is_no_writer(session: Path) -> None:
    holder = Holder(session, "rb")
    try:
        assert files.open_writers(str(session)) == []
        assert run_cli("fix", "--in-place", str(session)).exit_code == 1
    finally:
        holder.stop()


def test_a_writer_that_opens_the_file_during_the_repair_is_caught_before_the_rename(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened after the first look, but before the rename: the second look refuses."""
    holders: list[Holder] = []
    real = stream.run

    def run(lines, config, sink=None):
        result = real(lines, config, sink)
        holders.append(Holder(session, "r+b"))
        return result

    monkeypatch.setattr(stream, "run", run)
    try:
        result = run_cli("fix", "--in-place", str(session))
        assert result.exit_code == 2
        assert f"process {holders[0].pid}" in result.output
        assert session.read_bytes() == SESSION
        assert others(tmp_path, session) == []
    finally:
        for holder in holders:
            holder.stop()


def test_only_a_file_about_to_be_written_is_looked_up(session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(files, "open_writers", lambda path: asked.append(path) or [])
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(USER)
    assert run_cli("check", str(session)).exit_code == 1
    assert run_cli("fix", str(session)).exit_code == 1  # a dry run
    assert run_cli("fix", "--in-place", str(clean)).exit_code == 0
    assert asked == []
    assert run_cli("fix", "--in-place", str(session)).exit_code == 1
    assert asked == [str(session)] * 2  # before the first write, and right before the rename


def test_the_command_of_a_writer_is_shown_inert(session: Path, tmp_path: Path) -> None:
    # A process's command line is anyone's text.
    script = tmp_path / "w.py"
    script.write_text(HOLDER)
    link = tmp_path / "evil\x1b]0;owned\x07.py"
    os.symlink(script, link)
    process = subprocess.Popen(
        [sys.executable, str(link), str(session), "a"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "open"
        result = run_cli("fix", "--in-place", str(session))
        assert result.exit_code == 2
        assert "\x1b" not in result.output and "\x07" not in result.output and "\\x1b]0;owned" in result.output
    finally:
        process.stdin.close()
        process.wait(timeout=30)


# --- --backup ------------------------------------------------------------------


def test_backup_keeps_the_exact_original_and_never_overwrites_one(session: Path, tmp_path: Path) -> None:
    first = run_cli("fix", "--in-place", "--backup", "--output-format", "json", str(session))
    assert first.exit_code == 1, first.output
    backup = session.with_name(session.name + ".bak")
    assert backup.read_bytes() == SESSION
    assert json.loads(first.stdout)["files"][0]["backup"] == str(backup)
    assert f"as {backup}" in first.stderr
    # A second repair keeps its own original beside the first backup.
    second_original = session.read_bytes() + CALL.replace(b'"c1"', b'"c2"') + USER
    session.write_bytes(second_original)
    second = run_cli("fix", "--in-place", "--backup", str(session))
    assert second.exit_code == 1
    assert backup.read_bytes() == SESSION
    assert session.with_name(session.name + ".bak.1").read_bytes() == second_original
    assert others(tmp_path, session) == ["rollout.jsonl.bak", "rollout.jsonl.bak.1"]
    # Backups are not checked by later folder runs.
    again = run_cli("check", "--output-format", "json", str(tmp_path))
    assert again.exit_code == 0 and [f["path"] for f in json.loads(again.stdout)["files"]] == [str(session)]


def test_a_backup_is_a_link_to_the_original_inode(session: Path) -> None:
    inode = session.stat().st_ino
    assert run_cli("fix", "--in-place", "--backup", str(session)).exit_code == 1
    backup = session.with_name(session.name + ".bak")
    assert backup.stat().st_ino == inode and backup.stat().st_nlink == 1
    assert session.stat().st_ino != inode


def test_where_links_fail_the_backup_is_a_copy(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src, dst, *args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(files.os, "link", no_links)
    mode = 0o640
    session.chmod(mode)
    assert run_cli("fix", "--in-place", "--backup", str(session)).exit_code == 1
    backup = session.with_name(session.name + ".bak")
    assert backup.read_bytes() == SESSION
    assert backup.stat().st_mode & 0o777 == mode


def test_no_backup_is_left_when_the_repair_is_refused(session: Path, tmp_path: Path) -> None:
    holder = Holder(session)
    try:
        assert run_cli("fix", "--in-place", "--backup", str(session)).exit_code == 2
        assert others(tmp_path, session) == []
    finally:
        holder.stop()


def test_no_backup_for_a_file_that_needs_no_change(tmp_path: Path) -> None:
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(USER)
    assert run_cli("fix", "--in-place", "--backup", str(clean)).exit_code == 0
    assert others(tmp_path, clean) == []


@pytest.mark.parametrize("option", ["--backup", "--force"])
def test_backup_and_force_are_for_in_place_only(session: Path, option: str) -> None:
    result = run_cli("fix", option, str(session))
    assert result.exit_code == 2 and "--in-place" in result.output
    assert session.read_bytes() == SESSION
