"""Output people can read at any width, and file names that can never forge a workflow command."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ._cli import BROKEN, run_cli

CASES = Path(__file__).resolve().parents[1] / "cases"
LONG_ID = "toolu_01ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _broken_with(call_id: str, tool: str = "read_file") -> bytes:
    return BROKEN.replace(b'"c1"', f'"{call_id}"'.encode()).replace(b"read_file", tool.encode())


def test_concise_prints_one_editor_clickable_line_a_finding(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN + b"\n")  # APX001 on line 2, APX105 on line 4
    result = run_cli("check", "--output-format", "concise", "a.jsonl")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert all(re.fullmatch(r"a\.jsonl:\d+:1: APX\d{3} \S.*", line) for line in lines), lines
    assert lines[0].startswith("a.jsonl:2:1: APX001 ") and "c1" in lines[0]
    assert lines[1].startswith("a.jsonl:4:1: APX105 ")
    assert result.stderr == "1 file checked, 1 error, 1 warning\n"


@pytest.mark.parametrize("command", ["check", "fix"])
@pytest.mark.parametrize("call_id", ["call_dash_1", LONG_ID])
def test_at_80_columns_no_call_id_is_split_across_lines(isolated_cwd: Path, command: str, call_id: str) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_broken_with(call_id))
    out = run_cli(command, "a.jsonl", env={"COLUMNS": "80"}).stdout
    assert out and all(len(line) <= 80 for line in out.splitlines())
    # Shown whole, or cut with an ellipsis: never a piece on one line and the rest on the next.
    pieces = [m.group() for m in re.finditer(r"(?<![A-Za-z_])(?:call|toolu)_[A-Za-z0-9_]*…?", out)]
    assert pieces and all(p == call_id or (p.endswith("…") and call_id.startswith(p[:-1])) for p in pieces), pieces
    assert call_id in run_cli(command, "--output-format", "json", "a.jsonl").stdout  # the full value stays in json


def test_at_80_columns_json_is_folded_between_tokens(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    out = run_cli("fix", "a.jsonl", env={"COLUMNS": "80"}).stdout
    record = '{"role": "tool", "tool_call_id": "c1", "content": "not run: the turn was interrupted"}'
    tokens = set(record.split())
    words = [
        w
        for line in out.splitlines()[out.splitlines().index(next(row for row in out.splitlines() if "Record" in row)) + 2 :]
        for w in line.split()
        if '"' in w
    ]
    assert words
    # Every piece of JSON on screen is a whole token, or a token's start cut with an ellipsis.
    for word in words:
        assert word in tokens or (word.endswith("…") and any(t.startswith(word[:-1]) for t in tokens)), word


def test_no_trailing_spaces_when_not_a_terminal(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    for args in (["check", "a.jsonl"], ["fix", "a.jsonl"], ["show", "a.jsonl"]):
        result = run_cli(*args)
        assert result.stdout and not [line for line in result.stdout.splitlines() if line != line.rstrip()], args


def test_the_summary_counts_infos(isolated_cwd: Path) -> None:
    case = CASES / "claude-code" / "internal-error-placeholder-is-reported-as-info" / "input.jsonl"
    shutil.copy(case, isolated_cwd / "a.jsonl")
    for fmt in ("text", "concise", "json-lines", "github"):
        assert "1 info" in run_cli("check", "--output-format", fmt, "a.jsonl").stderr, fmt
    import json

    assert json.loads(run_cli("check", "--output-format", "json", "a.jsonl").stdout)["summary"]["infos"] == 1


# --- names cannot forge workflow commands (issue 18, item 6) -----------------------

HOSTILE_NAMES = [
    "::error title=forged::x",
    "x" * 70 + "::error title=forged::" + "y" * 40,
    "a:" * 60 + ":warning::z",
    "##[error]forged",
    "  ::notice::indented",
]


def _forged(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("::") or "##[" in line]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("columns", [None, "40", "80"])
def test_a_file_name_never_starts_a_workflow_command_in_text_or_show(isolated_cwd: Path, name: str, columns) -> None:
    path = isolated_cwd / (name + ".jsonl")
    path.write_bytes(BROKEN)
    env = {"COLUMNS": columns} if columns else None
    runs = [
        run_cli("check", path.name, env=env),
        run_cli("fix", path.name, env=env),
        run_cli("check", "--output-format", "concise", path.name, env=env),
        run_cli("show", path.name, env=env),
        run_cli("check", "-v", "--output-format", "json-lines", path.name, env=env),
        run_cli("check", "--statistics", "missing" + path.name, env=env),
    ]
    for result in runs:
        assert not _forged(result.stdout) and not _forged(result.stderr), (result.stdout, result.stderr)
    assert any(word in runs[0].stdout for word in ("forged", "warning", "indented"))  # the name is still shown


def test_in_place_messages_escape_the_name(isolated_cwd: Path) -> None:
    path = isolated_cwd / "::error::x.jsonl"
    path.write_bytes(BROKEN)
    for fmt in ("text", "concise", "json", "github"):
        path.write_bytes(BROKEN)
        result = run_cli("fix", "--in-place", "--output-format", fmt, path.name)
        assert result.exit_code == 1 and "Fixing" in result.stdout + result.stderr
        lines = (result.stdout + result.stderr).splitlines()
        assert not [row for row in lines if (row.lstrip().startswith("::") and fmt != "github") or "##[" in row], lines
