"""Crash-safe writes: after any failure or kill, a file is its old bytes or its new bytes.

Failures are injected at each step of an in-place write (create, write, flush,
fsync, chmod, close, replace) with ENOSPC, EACCES and EROFS; processes are
killed with SIGKILL at fixed steps and at random moments. A failed run leaves
no temporary file; a killed run's temporary file is recognisable by its name
and the next run on that folder removes it. Paths that cannot be rewritten get
a clear exit 2 naming them.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apx_doctor import files

from ._support import json_report, run_cli

ROOT = Path(__file__).resolve().parents[2]
USER = b'{"role":"user","content":"check the deploy dashboard"}\n'
CALL = b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"browser_text","arguments":"{}"}}]}\n'
FILLER = b'{"role":"assistant","content":"' + "déjà vu ".encode() * 40 + b'"}\n'


def broken_transcript(size: int) -> bytes:
    """A dangling call first (so a write starts at once), then ``size`` bytes of turns."""
    count = max(size // (len(USER) + len(FILLER)), 1)
    return USER + CALL + (USER + FILLER) * count


def repaired(tmp_path: Path, data: bytes) -> bytes:
    source, out = tmp_path / "expected-in.jsonl", tmp_path / "expected-out.jsonl"
    source.write_bytes(data)
    assert run_cli("fix", "--output", str(out), str(source)).exit_code == 1
    new = out.read_bytes()
    source.unlink()
    out.unlink()
    assert new != data
    return new


def others(folder: Path, *keep: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p not in keep)


# --- failures injected in-process ---------------------------------------------


class FaultyHandle:
    """A temporary file handle whose ``step`` (flush or close) fails with ``code``."""

    def __init__(self, real, step: str, code: int) -> None:
        self.real, self.step, self.code = real, step, code
        self.raw = real.raw

    def _maybe_fail(self, step: str) -> None:
        if step == self.step:
            raise OSError(self.code, os.strerror(self.code))

    def write(self, data):
        return self.real.write(data)

    def flush(self):
        self._maybe_fail("flush")
        return self.real.flush()

    def close(self):
        self.real.close()
        self._maybe_fail("close")

    def fileno(self):
        return self.real.fileno()


def _failing(code: int):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return fail


STEPS = ["mkstemp", "write", "flush", "fsync", "fchmod", "close", "replace"]
CODES = [errno.ENOSPC, errno.EACCES, errno.EROFS]


def inject(monkeypatch: pytest.MonkeyPatch, step: str, code: int) -> None:
    if step == "mkstemp":
        monkeypatch.setattr(files.tempfile, "mkstemp", _failing(code))
    elif step == "write":
        # Beneath the write buffer, as a full disk fails it: the temporary file's own write.
        monkeypatch.setattr(files.os, "write", _failing(code))
    elif step in ("flush", "close"):
        real = files._open_temp
        monkeypatch.setattr(files, "_open_temp", lambda fd, target: FaultyHandle(real(fd, target), step, code))
    else:
        monkeypatch.setattr(files.os, step, _failing(code))


@pytest.mark.parametrize("code", CODES, ids=errno.errorcode.get)
@pytest.mark.parametrize("step", STEPS)
def test_a_failed_in_place_write_leaves_the_old_bytes_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, code: int
) -> None:
    path = tmp_path / "session.jsonl"
    old = broken_transcript(3 << 20)  # beyond the write buffer, so writes reach the file
    path.write_bytes(old)
    inject(monkeypatch, step, code)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and os.strerror(code) in result.output
    # Named as the write it was, never as a failed read of the input.
    assert ("cannot create a temporary file" if step == "mkstemp" else "write failed") in result.output
    assert path.read_bytes() == old
    assert others(tmp_path, path) == [], "a temporary file was left behind"


@pytest.mark.parametrize("step", ["write", "fsync", "replace"])
def test_a_failed_output_write_leaves_no_output_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(broken_transcript(1 << 20))
    out.write_bytes(b"previous\n")
    inject(monkeypatch, step, errno.ENOSPC)
    result = run_cli("fix", "--output", str(out), str(source))
    assert result.exit_code == 2 and str(out) in result.output and "write failed" in result.output
    assert out.read_bytes() == b"previous\n"
    assert others(tmp_path, source, out) == []


@pytest.mark.parametrize("step", ["write", "fsync", "replace"])
def test_a_failed_salvage_takes_its_lines_back_out_of_the_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    path = tmp_path / "s.jsonl"
    sidecar = tmp_path / "s.jsonl.rejected.jsonl"
    old = USER + CALL + b'{"role":"user","content":"cut'
    path.write_bytes(old)
    sidecar.write_bytes(b"earlier rejected line\n")
    # os.write is the sidecar's append; fsync and replace fail for both files.
    monkeypatch.setattr(files.os, step, _failing(errno.ENOSPC))
    result = run_cli("fix", "--salvage", "--in-place", str(path))
    assert result.exit_code == 2
    assert path.read_bytes() == old
    assert sidecar.read_bytes() == b"earlier rejected line\n"
    assert others(tmp_path, path, sidecar) == []


# --- SIGKILL ------------------------------------------------------------------

KILLER = """
import os, signal, sys
when, name = os.environ["KILL_AT"].split("-", 1)
real = getattr(os, name)
def wrapped(*args, **kwargs):
    if when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    result = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
    return result
setattr(os, name, wrapped)
from apx_doctor.cli import main
sys.argv = ["apx-doctor", *sys.argv[1:]]
main()
"""


def _doctor(*args: str, env: dict | None = None) -> subprocess.Popen:
    code = KILLER if env else "from apx_doctor.cli import main; import sys; sys.argv[0] = 'apx-doctor'; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )


def _finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize(
    "kill_at, survives",
    [("before-fsync", "old"), ("before-fchmod", "old"), ("before-replace", "old"), ("after-replace", "new")],
)
def test_a_killed_run_leaves_old_or_new_bytes_and_the_next_run_tidies(tmp_path: Path, kill_at: str, survives: str) -> None:
    path = tmp_path / "session.jsonl"
    old = broken_transcript(1 << 20)
    new = repaired(tmp_path, old)
    path.write_bytes(old)
    killed = _finish(_doctor("fix", "--in-place", str(path), env={"KILL_AT": kill_at}))
    assert killed.returncode == -signal.SIGKILL
    assert path.read_bytes() == (old if survives == "old" else new)
    left = others(tmp_path, path)
    assert all(files.TEMP_TAG in name and name.startswith(".session.jsonl") for name in left), left
    if survives == "old":
        assert left, "a run killed before its replace leaves its temporary file"
    again = _finish(_doctor("fix", "--in-place", str(path)))
    assert again.returncode == (1 if survives == "old" else 0), again.stderr
    assert path.read_bytes() == new
    assert others(tmp_path, path) == [], "the next run did not remove the killed run's temporary file"


def test_sigkill_at_random_moments_never_leaves_a_mix(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    old = broken_transcript(40 << 20)
    new = repaired(tmp_path, old)
    path.write_bytes(old)
    started = time.monotonic()
    assert _finish(_doctor("fix", "--in-place", str(path))).returncode == 1
    whole = time.monotonic() - started  # only to spread the kills over a run
    rng = random.Random(6)
    seen = set()
    for _ in range(8):
        path.write_bytes(old)
        proc = _doctor("fix", "--in-place", str(path))
        time.sleep(rng.uniform(0, whole))
        proc.send_signal(signal.SIGKILL)
        _finish(proc)
        now = path.read_bytes()
        assert now in (old, new), "the file is neither the old bytes nor the new ones"
        seen.add(now == new)
        assert all(files.TEMP_TAG in name for name in others(tmp_path, path))
        assert _finish(_doctor("fix", "--in-place", str(path))).returncode in (0, 1)
        assert path.read_bytes() == new
        assert others(tmp_path, path) == []


# --- whose temporary files are stale -------------------------------------------


def _temp_name(target: str, pid: int, host: str | None = None) -> str:
    return f".{target}{files.TEMP_TAG}{pid}-{host or files._host_tag()}-abc123{files.TEMP_SUFFIX}"


def test_a_live_runs_temp_is_kept_a_dead_or_abandoned_one_removed(tmp_path: Path) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        keep = tmp_path / _temp_name("a.jsonl", live.pid)
        other_host = tmp_path / _temp_name("a.jsonl", dead.pid, "ffff" if files._host_tag() != "ffff" else "eeee")
        gone = tmp_path / _temp_name("a.jsonl", dead.pid)
        abandoned = tmp_path / _temp_name("b.jsonl", live.pid)
        lookalike = tmp_path / "notes.apx-doctor-plan.txt"
        for p in (keep, other_host, gone, abandoned, lookalike):
            p.write_bytes(b"partial")
        hour_ago = time.time() - 3600
        os.utime(abandoned, (hour_ago, hour_ago))
        removed = files.remove_stale_temps(str(tmp_path))
        assert sorted(removed) == sorted([gone.name, abandoned.name])
        assert keep.exists() and other_host.exists() and lookalike.exists()
    finally:
        live.kill()
        live.wait()


def test_a_temp_file_names_the_process_that_writes_it(tmp_path: Path) -> None:
    """A --jobs worker is a fork: its temporary files carry its own pid, not its parent's."""
    target = tmp_path / "a.jsonl"
    target.write_bytes(USER)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: create, report, clean up, leave without pytest's teardown
        try:
            temp = files._AtomicTemp(str(target))
            os.write(write, os.path.basename(temp.name).encode())
            temp.abort()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    name = os.read(read, 4096).decode()
    assert name.startswith(f".a.jsonl{files.TEMP_TAG}{pid}-{files._host_tag()}-")


# --- paths that cannot be rewritten ---------------------------------------------


def test_a_read_only_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "ro.jsonl"
    old = broken_transcript(1000)
    path.write_bytes(old)
    path.chmod(0o444)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and "read-only" in result.output
    assert path.read_bytes() == old and others(tmp_path, path) == []


def test_a_sound_read_only_file_is_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "ro.jsonl"
    path.write_bytes(USER)
    path.chmod(0o444)
    assert run_cli("fix", "--in-place", str(path)).exit_code == 0


def test_a_read_only_folder_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "s.jsonl"
    old = broken_transcript(1000)
    path.write_bytes(old)
    folder.chmod(0o555)
    try:
        result = run_cli("fix", "--in-place", str(path))
        assert result.exit_code == 2
        assert str(path) in result.output and "read-only" in result.output
        assert path.read_bytes() == old and others(folder, path) == []
    finally:
        folder.chmod(0o755)


def test_a_file_with_several_hard_links_is_refused_and_both_names_kept(tmp_path: Path) -> None:
    path, link = tmp_path / "s.jsonl", tmp_path / "link.jsonl"
    old = broken_transcript(1000)
    path.write_bytes(old)
    os.link(path, link)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and "hard links" in result.output
    assert path.read_bytes() == old and link.read_bytes() == old
    assert os.stat(path).st_ino == os.stat(link).st_ino


def test_a_path_that_does_not_exist_is_exit_2_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "s.jsonl"
    result = run_cli("fix", "--in-place", str(missing))
    assert result.exit_code == 2 and str(missing) in result.output


def _bash(command: str, tmp_path: Path) -> subprocess.CompletedProcess:
    doctor = Path(sys.executable).parent / "apx-doctor"
    return subprocess.run(["bash", "-c", command.replace("DOCTOR", str(doctor))], capture_output=True, cwd=tmp_path, timeout=60)


def test_check_reads_a_process_substitution_pipe(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_bytes(USER + CALL)
    result = _bash("DOCTOR check --output-format json <(cat s.jsonl)", tmp_path)
    assert result.returncode == 1, result.stderr
    report = json_report(type("R", (), {"stdout": result.stdout.decode()}))
    assert [f["code"] for f in report["files"][0]["findings"]] == ["APX001"]


def test_a_pipe_is_never_fixed_in_place(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_bytes(USER + CALL)
    result = _bash("DOCTOR fix --in-place <(cat s.jsonl)", tmp_path)
    assert result.returncode == 2
    assert b"/dev/fd/" in result.stderr and b"not a regular file" in result.stderr
