"""A format named with --input-format that finds none of its entries refuses, and names the likely one.

Told to read another format's lines, a reader sees no entry of its own and
would pass the file as clean, its calls invisible.
"""

from __future__ import annotations

import pytest

from ._cli import run_cli

CODEX_ROLLOUT = (
    b'{"timestamp":"2025-12-05T11:00:00.000Z","type":"session_meta","payload":{"id":"s1"}}\n'
    b'{"timestamp":"2025-12-05T11:01:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Delete test.txt"}]}}\n'
    b'{"timestamp":"2025-12-05T11:01:05.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"call_4"}}\n'
)
ANTHROPIC_MESSAGES = (
    b'{"role":"user","content":"weather?"}\n'
    b'{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]}\n'
    b'{"role":"user","content":"never mind"}\n'
)


@pytest.mark.parametrize(
    ("data", "forced", "likely"),
    [(CODEX_ROLLOUT, "claude-code", "codex"), (ANTHROPIC_MESSAGES, "chat", "anthropic")],
)
def test_a_forced_format_with_none_of_its_entries_exits_2_naming_the_likely_one(tmp_path, data, forced, likely) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    result = run_cli("check", "--isolated", "--input-format", forced, str(path))
    assert result.exit_code == 2
    assert f"{path}: the file holds no {forced} entries; it looks like {likely}" in result.stderr
    # Auto-detection reads the same file and finds its interrupted call.
    assert run_cli("check", "--isolated", str(path)).exit_code == 1


def test_a_forced_format_that_fits_is_taken(tmp_path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(CODEX_ROLLOUT)
    assert run_cli("check", "--isolated", "--input-format", "codex", str(path)).exit_code == 1


def test_a_forced_format_is_taken_where_no_format_is_sure(tmp_path) -> None:
    # Lines no reader recognises: the user's choice stands (each line is reported as unrecognised).
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"who":"user","said":"hi"}\n')
    result = run_cli("check", "--isolated", "--input-format", "chat", "--output-format", "json", str(path))
    assert result.exit_code == 0 and '"APX104"' in result.stdout
