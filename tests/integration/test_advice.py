"""Recovery advice: the three questions, answered from the tool's kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apx_doctor.advice import ToolKind, tool_kind

from ._cli import run_cli


@pytest.mark.parametrize(
    "name",
    [
        "get_weather",
        "read_file",
        "list_issues",
        "search",
        "web_fetch",
        "view_image",
        "browser_text",
        "Read",
        "Grep",
        "WebFetch",
        "mcp__github__getIssue",
    ],
)
def test_read_only_names(name: str) -> None:
    assert tool_kind(name) is ToolKind.READ_ONLY


@pytest.mark.parametrize(
    "name",
    [
        "write_file",
        "create_issue",
        "delete_branch",
        "send_email",
        "http_post",
        "exec",
        "Bash",
        "shell",
        "apply_patch",
        "mcp__github__createIssue",
        "Edit",
    ],
)
def test_side_effect_names(name: str) -> None:
    assert tool_kind(name) is ToolKind.SIDE_EFFECTS


def test_a_side_effect_word_beats_a_read_only_word() -> None:
    assert tool_kind("get_and_delete") is ToolKind.SIDE_EFFECTS
    assert tool_kind("search_and_replace") is ToolKind.SIDE_EFFECTS


def test_unknown_names_are_not_guessed() -> None:
    assert tool_kind("frobnicate") is ToolKind.UNKNOWN
    assert tool_kind(None) is ToolKind.UNKNOWN
    assert tool_kind("") is ToolKind.UNKNOWN


def test_configured_lists_come_first_and_side_effects_win_a_tie() -> None:
    assert tool_kind("delete_cache", read_only=["delete_cache"]) is ToolKind.READ_ONLY
    assert tool_kind("get_token", side_effects=["get_*"]) is ToolKind.SIDE_EFFECTS
    assert tool_kind("x", read_only=["x"], side_effects=["x"]) is ToolKind.SIDE_EFFECTS


def _transcript(tool: str) -> bytes:
    call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": '{"path":"/etc/app.conf"}'}}
    lines = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "?"},
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


@pytest.mark.parametrize(
    ("args", "received"),
    [
        (["check"], "none received; `fix` inserts a not-run record"),
        (["fix"], "none received; a not-run record would be inserted"),
        (["fix", "--in-place"], "none received; a not-run record was inserted"),
    ],
)
def test_advice_answers_the_three_questions(args: list[str], received: str, isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_transcript("write_file"))
    result = run_cli(*args, "--output-format", "json", "a.jsonl")
    finding = json.loads(result.stdout)["files"][0]["findings"][0]
    assert finding["advice"] == (
        'requested: write_file with {"path":"/etc/app.conf"}; '
        f"result: {received}; "
        "next: tool with side effects: it may have run; check the current state first, or retry with an idempotency key"
    )


def test_advice_is_a_column_in_text_output(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_transcript("read_file"))
    out = run_cli("check", "--color", "never", "a.jsonl").stdout
    assert "Safe next" in out.splitlines()[2]
    assert "safe to re-run" in " ".join(out.split())


def test_json_names_the_tool_kind(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(_transcript("write_file"))
    finding = json.loads(run_cli("check", "--output-format", "json", "a.jsonl").stdout)["files"][0]["findings"][0]
    assert finding["tool_kind"] == "side-effects"
