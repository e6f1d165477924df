"""Concurrency and resources: a crashing worker costs only its file; memory stays flat.

--jobs runs files on a process pool: a worker that dies or raises still lets
every other file be reported, and the run exits 2. Memory is bounded by the
longest line, not the file: peak RSS on a 1 GB file holding one 100 MB line is
measured in a child process with resource.getrusage.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apx_doctor import runner

from ._support import run_cli
from .test_crash_safe_writes import CALL, ROOT, USER

PARENT = os.getpid()


def _folder(tmp_path: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = tmp_path / f"s{i:02d}.jsonl"
        path.write_bytes(USER + CALL if i % 2 else USER)
        paths.append(path)
    return paths


def _crash_on(monkeypatch: pytest.MonkeyPatch, victim: Path, how: str) -> None:
    real = runner.run_path

    def run_path(path, options):
        if os.getpid() != PARENT and Path(path) == victim:
            if how == "dies":
                os._exit(137)  # as the OOM killer would leave it
            raise RuntimeError("adapter bug")
        return real(path, options)

    monkeypatch.setattr(runner, "run_path", run_path)
    # Workers must inherit the patch: fork, whatever the runner would pick here.
    monkeypatch.setattr(runner, "_context", lambda: multiprocessing.get_context("fork"))


@pytest.mark.parametrize("how", ["dies", "raises"])
def test_a_worker_crash_still_reports_every_other_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if not hasattr(runner, "iter_paths"):
        pytest.skip("--jobs is not in the runner yet")
    paths = _folder(tmp_path, 12)
    victim = paths[5]
    _crash_on(monkeypatch, victim, how)
    result = run_cli("check", "--jobs", "3", "--output-format", "json", *map(str, paths))
    assert result.exit_code == 2
    files = json.loads(result.stdout)["files"]
    assert [f["path"] for f in files] == [str(p) for p in paths], "a file is missing or out of order"
    for path, report in zip(paths, files):
        if path == victim:
            assert str(victim) in report["error"]
        else:
            assert "error" not in report
            assert [f["code"] for f in report["findings"]] == (["APX001"] if paths.index(path) % 2 else [])


FILLER = b'{"role":"assistant","content":"' + b"word " * 200 + b'"}\n'
BLOCK = (USER + FILLER) * 1000


def _write_big(path: Path, size: int, line: int) -> None:
    """``size`` bytes of turns with one ``line``-byte user entry in the middle; fast to write."""
    big = b'{"role":"user","content":"' + b"x" * line + b'"}\n'
    written, placed = 0, False
    with open(path, "wb") as out:
        out.write(USER + CALL)
        while written < size - len(big):
            out.write(BLOCK)
            written += len(BLOCK)
            if not placed and written >= (size - len(big)) // 2:
                out.write(big)
                placed = True
        if not placed:
            out.write(big)


PEAK = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


def _peak(*args: str) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", PEAK, sys.executable, "-m", "apx_doctor", *args], capture_output=True, check=True, cwd=ROOT
    )
    code, peak = out.stdout.split()
    return int(code), int(peak)


def test_memory_is_bounded_by_the_longest_line_not_the_file(tmp_path: Path) -> None:
    if shutil.disk_usage(tmp_path).free < 4 << 30:
        pytest.skip("needs 4 GB of free disk for a 1 GB transcript and its repair")
    line = 100 << 20
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _write_big(small, 250 << 20, line)
    _write_big(big, 1 << 30, line)
    small_code, small_peak = _peak("check", str(small))
    big_code, big_peak = _peak("check", str(big))
    assert small_code == big_code == 1
    # Four times more file, the same longest line: the same memory.
    assert big_peak - small_peak < 64 << 20, f"peak grew from {small_peak >> 20} MB to {big_peak >> 20} MB"
    assert big_peak < big.stat().st_size // 2
    small.unlink()
    fix_code, fix_peak = _peak("fix", "--output", str(tmp_path / "out.jsonl"), str(big))
    assert fix_code == 1 and (tmp_path / "out.jsonl").stat().st_size > big.stat().st_size
    assert fix_peak < big.stat().st_size // 2, f"fix peaked at {fix_peak >> 20} MB"
