"""--jobs: many files on several processes give the same report, in the same order, as one by one."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apx_doctor import runner
from apx_doctor.cli import app
from apx_doctor.runner import Mode, RunOptions, run_path, run_paths

CALL = '{"role":"assistant","content":null,"tool_calls":[{"id":"%s","type":"function","function":{"name":"bash","arguments":"{}"}}]}\n'
RESULT = '{"role":"tool","tool_call_id":"%s","content":"ok"}\n'
USER = '{"role":"user","content":"go on"}\n'


def _folder(tmp_path: Path, count: int = 40) -> list[str]:
    """Sessions of every kind: sound, interrupted, orphaned, unparseable, empty."""
    paths = []
    for i in range(count):
        kind = i % 5
        lines = [USER, CALL % f"c{i}"]
        if kind == 0:
            lines.append(RESULT % f"c{i}")
        elif kind == 1:
            lines.append(USER)  # interrupted: c{i} has no result
        elif kind == 2:
            lines += [RESULT % f"c{i}", RESULT % f"ghost{i}"]
        elif kind == 3:
            lines.append('{"role": "tool", broken\n')
        else:
            lines = []
        path = tmp_path / f"s{i:03d}.jsonl"
        path.write_text("".join(lines), encoding="utf-8")
        paths.append(str(path))
    return paths


def _json_report(args: list[str]) -> tuple[int, dict]:
    result = CliRunner().invoke(app, [*args, "--isolated", "--output-format", "json"])
    return result.exit_code, json.loads(result.stdout)


def test_parallel_check_gives_the_serial_report_in_the_same_order(tmp_path: Path) -> None:
    paths = _folder(tmp_path)
    # A path that cannot be read is reported in its place too.
    paths.insert(7, str(tmp_path / "missing.jsonl"))
    serial_code, serial = _json_report(["check", "--jobs", "1", *paths])
    parallel_code, parallel = _json_report(["check", "--jobs", "3", *paths])
    assert parallel == serial
    assert parallel_code == serial_code == 2
    assert [f["path"] for f in parallel["files"]] == paths
    # Interrupted (kind 1) and cut by a broken line (kind 3): 8 files each.
    assert sum(1 for f in serial["files"] for x in f["findings"] if x["code"] == "APX001") == 16


def test_parallel_dry_run_fix_gives_the_serial_report(tmp_path: Path) -> None:
    paths = _folder(tmp_path, 25)
    assert _json_report(["fix", "--jobs", "1", *paths]) == _json_report(["fix", "--jobs", "4", *paths])


def test_parallel_in_place_fix_writes_what_a_serial_fix_writes(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    paths_one, paths_two = _folder(one, 15), _folder(two, 15)
    CliRunner().invoke(app, ["fix", "--isolated", "--in-place", "--jobs", "1", *paths_one])
    CliRunner().invoke(app, ["fix", "--isolated", "--in-place", "--jobs", "3", *paths_two])
    for a, b in zip(paths_one, paths_two):
        assert Path(a).read_bytes() == Path(b).read_bytes()
    assert any(USER + CALL % "c1" + RESULT % "c1" != Path(p).read_text() for p in paths_two)


def test_run_paths_is_run_path_over_each_path(tmp_path: Path) -> None:
    paths = _folder(tmp_path, 30)
    options = RunOptions(mode=Mode.DRY_RUN)
    expected = [run_path(p, options).to_dict() for p in paths]
    assert [r.to_dict() for r in run_paths(paths, options, jobs=2)] == expected
    assert [r.to_dict() for r in run_paths(paths, [options] * len(paths), jobs=2)] == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the crash is injected into forked workers (Linux)")
def test_a_worker_crash_costs_only_its_own_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _folder(tmp_path, 12)
    doomed = paths[5]
    real = runner.run_path

    def crashing(path: str, options: RunOptions):
        if path == doomed:
            os._exit(70)  # the worker dies without a word, as on a segfault or the OOM killer
        return real(path, options)

    expected = [real(p, RunOptions()).to_dict() for p in paths]
    monkeypatch.setattr(runner, "run_path", crashing)
    # The patch reaches the workers only through fork (other tests may leave threads behind).
    monkeypatch.setattr(runner, "_context", lambda: multiprocessing.get_context("fork"))
    reports = run_paths(paths, RunOptions(), jobs=2)
    assert [r.path for r in reports] == paths
    for i, report in enumerate(reports):
        if paths[i] == doomed:
            assert report.error is not None and "worker process died" in report.error
        else:
            assert report.to_dict() == expected[i]
    code, document = _json_report(["check", "--jobs", "2", *paths])
    assert code == 2
    assert [f.get("error") is not None for f in document["files"]] == [p == doomed for p in paths]


def test_text_output_shows_the_first_rows_and_counts_the_rest(tmp_path: Path) -> None:
    """Large reports: text stays short unless --show-all; json always holds every finding."""
    path = tmp_path / "long.jsonl"
    path.write_text("".join(USER + CALL % f"lost{i:03d}" for i in range(120)) + USER, encoding="utf-8")
    runner_ = CliRunner()
    short = runner_.invoke(app, ["check", "--isolated", "--output-format", "text", str(path)])
    full = runner_.invoke(app, ["check", "--isolated", "--output-format", "text", "--show-all", str(path)])
    assert short.exit_code == full.exit_code == 1
    assert "lost049" in short.stdout and "lost050" not in short.stdout
    assert "70 more findings" in short.stdout and "--show-all" in short.stdout
    assert "lost119" in full.stdout and "more findings" not in full.stdout
    _code, document = _json_report(["check", str(path)])
    assert [f["call_id"] for f in document["files"][0]["findings"]] == [f"lost{i:03d}" for i in range(120)]
