"""Concurrency and identity: two runs never lose salvaged lines, and a file swapped mid-fix is never mixed.

Every rewrite holds an exclusive ``flock`` on the transcript from its open to
its commit, and on the sidecar from its open until the transcript commits. One
run schedules a file once, whatever names it is given by. The file is known by
its handle (``fstat``), and the path must still name it right before the rename.
The races are made to happen at a fixed point through ``files.hook``, never by luck.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from apx_doctor import files
from apx_doctor.runner import Mode, RunOptions, run_path

from ._support import json_report, run_cli
from .test_crash_safe_writes import CALL, USER, others

NOT_RUN = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'
BAD = [b'{"role":"assistant","content":"half\x00\n', b"\xff\xfe not json\n"]
OLD = USER + BAD[0] + CALL + BAD[1] + USER
REPAIRED = USER + CALL + NOT_RUN + USER
SALVAGE = RunOptions(mode=Mode.IN_PLACE, salvage=True)


def _sidecar(path: Path) -> Path:
    return Path(f"{path}.rejected.jsonl")


def _hook(monkeypatch: pytest.MonkeyPatch, react) -> None:
    monkeypatch.setattr(files, "hook", react)


# --- two runs on one file ----------------------------------------------------


def test_a_second_salvage_run_waits_for_the_first_and_salvages_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run B starts while run A, about to commit, holds the lock; B waits, then finds the file repaired."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    b_waits = threading.Event()
    reports = {}

    def run(name: str) -> None:
        reports[name] = run_path(str(path), SALVAGE)

    second = threading.Thread(target=run, args=("b",), name="b")

    def react(point: str, where: str) -> None:
        me = threading.current_thread().name
        if me == "a" and point == "before-commit":
            second.start()
            assert b_waits.wait(60), "the second run did not wait for the first one's lock"
        elif me == "b" and point == "busy":
            b_waits.set()

    _hook(monkeypatch, react)
    first = threading.Thread(target=run, args=("a",), name="a")
    first.start()
    first.join(120)
    second.join(120)
    assert reports["a"].error is None and reports["a"].written
    assert reports["b"].error is None and not reports["b"].written
    assert path.read_bytes() == REPAIRED
    assert _sidecar(path).read_bytes() == b"".join(BAD), "each unparseable line is in the sidecar exactly once"


def test_when_the_first_run_fails_the_waiting_one_salvages_the_lines_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fails after its sidecar append: it takes back its own lines, under its lock; B then salvages them once."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    _sidecar(path).write_bytes(b"from an earlier run\n")
    b_waits = threading.Event()
    reports = {}

    def run(name: str) -> None:
        reports[name] = run_path(str(path), SALVAGE)

    second = threading.Thread(target=run, args=("b",), name="b")

    def react(point: str, where: str) -> None:
        me = threading.current_thread().name
        if me == "a" and point == "before-replace":
            second.start()
            assert b_waits.wait(60)
            raise files.WriteError(f"{where}: write failed: injected")
        if me == "b" and point == "busy":
            b_waits.set()

    _hook(monkeypatch, react)
    first = threading.Thread(target=run, args=("a",), name="a")
    first.start()
    first.join(120)
    second.join(120)
    assert reports["a"].error is not None and not reports["a"].written
    assert reports["b"].error is None and reports["b"].written
    assert path.read_bytes() == REPAIRED
    assert _sidecar(path).read_bytes() == b"from an earlier run\n" + b"".join(BAD)


def test_a_file_another_run_holds_is_busy_exit_2_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    monkeypatch.setattr(files, "LOCK_WAIT", 0)
    with open(path, "rb") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        result = run_cli("fix", "--in-place", "--salvage", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and "busy" in result.output
    assert path.read_bytes() == OLD and not _sidecar(path).exists()
    assert others(tmp_path, path) == []


def test_a_sidecar_another_run_holds_is_busy_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    _sidecar(path).write_bytes(b"theirs\n")
    monkeypatch.setattr(files, "LOCK_WAIT", 0)
    with open(_sidecar(path), "rb") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        result = run_cli("fix", "--in-place", "--salvage", str(path))
    assert result.exit_code == 2 and "busy" in result.output and str(_sidecar(path)) in result.output
    assert path.read_bytes() == OLD and _sidecar(path).read_bytes() == b"theirs\n"


def test_a_folder_with_a_symlink_to_a_file_in_it_repairs_and_salvages_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(OLD)
    (folder / "latest.jsonl").symlink_to("a.jsonl")
    monkeypatch.chdir(folder)
    result = run_cli("fix", "--in-place", "--salvage", "--output-format", "json", "--jobs", "2", ".")
    assert result.exit_code == 1
    report = json_report(result)
    assert sum(1 for f in report["files"] if f.get("written")) == 1
    assert sum(1 for f in report["files"] if "the same file as" in (f.get("skipped") or "")) == 1
    assert (folder / "a.jsonl").read_bytes() == REPAIRED
    assert (folder / "latest.jsonl").is_symlink()
    assert _sidecar(folder / "a.jsonl").read_bytes() == b"".join(BAD)


@pytest.mark.parametrize("second", ["same", "dotted", "hard link"])
def test_one_file_named_twice_on_one_command_line_is_fixed_once(tmp_path: Path, second: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    other = {"same": str(path), "dotted": f"{tmp_path}/./s.jsonl", "hard link": str(tmp_path / "t.jsonl")}[second]
    if second == "hard link":
        os.link(path, other)
    result = run_cli("fix", "--in-place", "--salvage", "--output-format", "json", str(path), other)
    files_ = json_report(result)["files"]
    assert sum(1 for f in files_ if f.get("written")) <= 1
    if second == "hard link":
        # Refused (a rewrite would split the links), once: nothing is salvaged.
        assert result.exit_code == 2 and path.read_bytes() == OLD and not _sidecar(path).exists()
        return
    assert result.exit_code == 1
    assert path.read_bytes() == REPAIRED
    assert _sidecar(path).read_bytes() == b"".join(BAD)


# --- a file renamed over the path -----------------------------------------------

NEW = USER + b'{"role":"user","content":"a new session, not ours"}\n' * 3


@pytest.mark.parametrize("point", ["locked", "before-commit", "before-replace"])
@pytest.mark.parametrize("salvage", [False, True], ids=["plain", "salvage"])
def test_a_file_renamed_over_the_path_during_a_fix_is_exit_2_and_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, salvage: bool
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD if salvage else USER + CALL + USER)
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_bytes(NEW)
    done = []

    def react(at: str, where: str) -> None:
        if at == point and not done:
            done.append(at)
            os.rename(fresh, path)

    _hook(monkeypatch, react)
    result = run_cli("fix", "--in-place", *(["--salvage"] if salvage else []), str(path))
    assert done == [point]
    assert result.exit_code == 2, result.output
    assert "another file was put in its place" in result.output and "nothing was written" in result.output
    assert path.read_bytes() == NEW, "the file renamed over the path was changed"
    assert not _sidecar(path).exists()
    assert others(tmp_path, path) == [], "a temporary file was left behind"


def test_the_prefix_is_copied_from_the_file_read_not_from_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even without the final check, the bytes come from the handle: the temporary file is old bytes only."""
    path = tmp_path / "s.jsonl"
    old = USER * 50 + CALL + USER
    path.write_bytes(old)
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_bytes(NEW * 50)
    seen = []

    def react(at: str, where: str) -> None:
        if at == "locked":
            os.rename(fresh, path)
        if at == "before-commit":
            temp = [p for p in tmp_path.iterdir() if files.TEMP_TAG in p.name]
            seen.append(temp[0].read_bytes())

    _hook(monkeypatch, react)
    assert run_cli("fix", "--in-place", str(path)).exit_code == 2
    assert seen and seen[0].startswith(USER * 50 + CALL) and b"not ours" not in seen[0]


def test_a_file_replaced_before_the_lock_was_taken_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaced between the open and the lock (another run's commit): the file now there is the one repaired."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(USER)
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_bytes(USER + CALL + USER)
    done = []

    def react(at: str, where: str) -> None:
        if at == "opened" and not done:
            done.append(at)
            os.rename(fresh, path)

    _hook(monkeypatch, react)
    assert run_cli("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == REPAIRED


# --- never write through what we did not create --------------------------------


def test_a_symlinked_sidecar_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    _sidecar(path).symlink_to(victim)
    result = run_cli("fix", "--in-place", "--salvage", str(path))
    assert result.exit_code == 2 and "symbolic link" in result.output
    assert victim.read_bytes() == b"precious\n" and path.read_bytes() == OLD


def test_a_fifo_sidecar_is_refused_without_hanging(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    os.mkfifo(_sidecar(path))
    result = run_cli("fix", "--in-place", "--salvage", str(path))
    assert result.exit_code == 2 and "not a regular file" in result.output
    assert path.read_bytes() == OLD


def test_a_hard_linked_sidecar_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"x\n")
    os.link(elsewhere, _sidecar(path))
    result = run_cli("fix", "--in-place", "--salvage", str(path))
    assert result.exit_code == 2 and "hard links" in result.output
    assert elsewhere.read_bytes() == b"x\n" and path.read_bytes() == OLD


def test_a_fifo_is_refused_for_in_place_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    result = run_cli("fix", "--in-place", str(fifo))
    assert result.exit_code == 2 and "not a regular file" in result.output and str(fifo) in result.output


def test_output_into_a_fifo_streams_into_it_and_keeps_it_a_fifo(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(USER + CALL + USER)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    result = run_cli("fix", "--output", str(fifo), str(source))
    reader.join(60)
    assert result.exit_code == 1, result.output
    assert got == [REPAIRED]
    assert fifo.is_fifo() and others(tmp_path, source, fifo) == []


def test_output_into_a_device_streams_into_it_and_never_replaces_it(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(USER + CALL + USER)
    before = os.stat("/dev/null")
    result = run_cli("fix", "--output", "/dev/null", str(source))
    assert result.exit_code == 1, result.output
    after = os.stat("/dev/null")
    assert os.path.exists("/dev/null") and (after.st_ino, after.st_rdev, after.st_mode) == (
        before.st_ino,
        before.st_rdev,
        before.st_mode,
    )
    assert not [n for n in os.listdir("/dev") if files.TEMP_TAG in n]


def test_a_hard_linked_output_is_refused_and_never_split(tmp_path: Path) -> None:
    source, out, link = tmp_path / "s.jsonl", tmp_path / "out.jsonl", tmp_path / "link.jsonl"
    source.write_bytes(USER + CALL + USER)
    out.write_bytes(b"previous\n")
    os.link(out, link)
    result = run_cli("fix", "--output", str(out), str(source))
    assert result.exit_code == 2 and "hard links" in result.output and str(out) in result.output
    assert out.read_bytes() == link.read_bytes() == b"previous\n"
    assert out.stat().st_ino == link.stat().st_ino
