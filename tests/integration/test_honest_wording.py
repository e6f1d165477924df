"""What the summary and the timeline say is what happened."""

from __future__ import annotations

from pathlib import Path

from ._cli import BROKEN, CLEAN, run_cli


def test_output_to_stdout_writes_no_file_and_says_none(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    to_stdout = run_cli("fix", "--output", "-", "a.jsonl")
    assert to_stdout.exit_code == 1 and b"not run" in to_stdout.stdout_bytes
    assert "written" not in to_stdout.stderr and "1 not-run record inserted" in to_stdout.stderr
    to_file = run_cli("fix", "--output", "out.jsonl", "a.jsonl")
    assert "1 file written" in to_file.stderr


def test_a_missing_file_is_not_counted_as_checked(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(CLEAN)
    for fmt in ("text", "concise", "json-lines", "github"):
        result = run_cli("check", "--output-format", fmt, "missing.jsonl")
        assert result.exit_code == 2
        assert "0 files checked" in result.stderr and "1 could not be processed" in result.stderr, fmt
    both = run_cli("check", "missing.jsonl", "a.jsonl")
    assert "1 file checked" in both.stderr and "1 could not be processed" in both.stderr


def test_show_labels_system_and_developer_messages_by_their_role(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(
        b'{"role":"system","content":"be brief"}\n'
        b'{"role":"developer","content":"use tools"}\n' + CLEAN + b'{"role":"assistant","content":"done"}\n'
    )
    out = run_cli("show", "a.jsonl").stdout
    assert "system: be brief" in out and "developer: use tools" in out
    assert "reply: done" in out
    assert "reply: be brief" not in out and "reply: use tools" not in out
