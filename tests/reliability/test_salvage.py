"""Salvage: fix --salvage moves unparseable lines into <file>.rejected.jsonl, then repairs the rest.

The sidecar is appended to, never overwritten; the report lists each moved
line as {"action": "salvage", "line": N}. Without --salvage such a file is
never written.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ._support import json_report, run_cli
from .test_crash_safe_writes import CALL, USER

NOT_RUN = b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n'
CUT = b'{"role":"user","content":"what did it fi'
GARBAGE = b'{"role":"assistant","content":"half\x00\n'


def _sidecar(path: Path) -> Path:
    return Path(f"{path}.rejected.jsonl")


def test_a_cut_last_line_is_moved_out_and_the_rest_repaired(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(USER + CALL + CUT)
    result = run_cli("fix", "--salvage", "--in-place", "--output-format", "json", str(path))
    assert result.exit_code == 1
    report = json_report(result)["files"][0]
    assert report["written"] is True
    assert {"action": "salvage", "line": 3} in report["edits"]
    assert [e["action"] for e in report["edits"]] == ["salvage", "insert"]
    assert path.read_bytes() == USER + CALL + NOT_RUN
    assert _sidecar(path).read_bytes() == CUT + b"\n"
    # The repaired file is sound now.
    assert run_cli("check", str(path)).exit_code == 0


def test_several_bad_lines_go_in_order_and_the_sidecar_is_only_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _sidecar(path).write_bytes(b"from an earlier run\n")
    path.write_bytes(USER + GARBAGE + CALL + b"\xff\xfe\n" + USER + CUT)
    result = run_cli("fix", "--salvage", "--output-format", "json", "--output", str(tmp_path / "out.jsonl"), str(path))
    edits = json_report(result)["files"][0]["edits"]
    assert [e["line"] for e in edits if e["action"] == "salvage"] == [2, 4, 6]
    assert _sidecar(path).read_bytes() == b"from an earlier run\n" + GARBAGE + b"\xff\xfe\n" + CUT + b"\n"
    assert (tmp_path / "out.jsonl").read_bytes() == USER + CALL + NOT_RUN + USER
    # A second run appends again; nothing already there is overwritten.
    run_cli("fix", "--salvage", "--output", str(tmp_path / "out2.jsonl"), str(path))
    assert _sidecar(path).read_bytes().startswith(b"from an earlier run\n" + GARBAGE)
    assert _sidecar(path).read_bytes().count(CUT) == 2


@pytest.mark.parametrize("mode", [["--in-place"], ["--output", "OUT"], []], ids=["in-place", "output", "dry-run"])
def test_without_salvage_such_a_file_is_never_written(tmp_path: Path, mode: list[str]) -> None:
    path, out = tmp_path / "s.jsonl", tmp_path / "out.jsonl"
    old = USER + CALL + CUT
    path.write_bytes(old)
    result = run_cli("fix", *[str(out) if a == "OUT" else a for a in mode], str(path))
    assert result.exit_code == 1
    assert path.read_bytes() == old and not out.exists() and not _sidecar(path).exists()


def test_a_dry_run_salvage_lists_the_lines_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(USER + CALL + CUT)
    result = run_cli("fix", "--salvage", "--color", "never", str(path))
    assert result.exit_code == 1
    assert "salvage" in result.output
    assert path.read_bytes() == USER + CALL + CUT and not _sidecar(path).exists()


def test_the_sidecar_is_as_private_as_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(USER + CALL + CUT)
    path.chmod(0o600)
    run_cli("fix", "--salvage", "--in-place", str(path))
    assert stat.S_IMODE(_sidecar(path).stat().st_mode) == 0o600


def test_salvage_from_standard_input_is_a_usage_error() -> None:
    result = run_cli("fix", "--salvage", "--output", "-", "-", input=USER + CUT)
    assert result.exit_code == 2 and "--salvage" in result.output


def test_salvage_to_standard_output_keeps_the_sidecar_beside_the_input(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(USER + CALL + CUT)
    result = run_cli("fix", "--salvage", "--output", "-", str(path))
    assert result.exit_code == 1
    assert result.stdout.encode() == USER + CALL + NOT_RUN
    assert _sidecar(path).read_bytes() == CUT + b"\n"
    assert path.read_bytes() == USER + CALL + CUT
