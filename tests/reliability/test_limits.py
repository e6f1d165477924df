"""Limits, not crashes: deep nesting, endless streams and hostile Claude Code trees end in a clear answer.

JSON nested up to orjson's 1024 levels is read and checked in every output
format and in ``show``; deeper is APX101 with its reason. A pipe or device that
never ends a line (/dev/zero) is an error naming it. A uuid cycle in a Claude
Code tree ends each ancestry walk at its first repeat.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from apx_doctor import files, jsonl
from apx_doctor.formats import claude_code

from ._support import run_cli
from .test_crash_safe_writes import ROOT

USER = b'{"role":"user","content":"hi"}\n'
CALL = (
    b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}\n'
)


def _deep(depth: int) -> bytes:
    return b'{"role":"tool","tool_call_id":"c1","content":' + b"[" * depth + b"]" * depth + b"}\n"


@pytest.mark.parametrize("depth", [990, 1000, 1020, 1023])
@pytest.mark.parametrize("output_format", ["text", "json", "json-lines", "github", "sarif"])
def test_json_nested_up_to_the_parsers_limit_is_checked_in_every_format(tmp_path: Path, depth: int, output_format: str) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(USER + CALL + _deep(depth) + USER)
    result = run_cli("check", "--output-format", output_format, str(path))
    assert result.exit_code == 0, result.output
    assert "apx-doctor: internal error" not in result.output


@pytest.mark.parametrize("depth", [1024, 1100, 5000])
@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_json_nested_deeper_is_apx101_with_its_reason(tmp_path: Path, depth: int, output_format: str) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(USER + CALL + _deep(depth) + USER)
    result = run_cli("check", "--output-format", output_format, str(path))
    assert result.exit_code == 1, result.output
    assert "APX101" in result.stdout and "nested too deeply" in result.stdout


@pytest.mark.parametrize("depth", [1000, 1023, 1100])
def test_show_and_fix_take_deep_lines(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(USER + CALL + USER + _deep(depth).replace(b'"tool","tool_call_id":"c1"', b'"user"'))
    shown = run_cli("show", str(path))
    assert shown.exit_code in (0, 1, 2) and "Traceback" not in shown.output
    fixed = run_cli("fix", "--output", str(tmp_path / "out.jsonl"), str(path))
    assert (
        fixed.exit_code in (1, 2)
        and "bug worth reporting" not in fixed.output
        and "apx-doctor: internal error" not in fixed.output
    )
    assert fixed.exit_code == 1
    # Repaired when the parser takes the line (its own object is a level); else APX101, nothing written.
    assert (tmp_path / "out.jsonl").exists() == (depth + 1 <= jsonl.MAX_DEPTH)


def test_an_endless_line_from_a_device_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_LINE", 1 << 20)
    result = run_cli("check", "/dev/zero")
    assert result.exit_code == 2
    assert "/dev/zero" in result.output and "longer than" in result.output


def test_show_of_an_endless_device_is_an_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_LINE", 1 << 20)
    result = run_cli("show", "/dev/zero")
    assert result.exit_code == 2 and "/dev/zero" in result.output and "longer than" in result.output


def test_an_endless_line_on_standard_input_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_LINE", 1 << 10)
    result = run_cli("check", "-", input=b"\0" * 5000)
    assert result.exit_code == 2 and "<stdin>" in result.output and "longer than" in result.output


def test_a_real_run_on_dev_zero_exits_2_naming_it() -> None:
    done = subprocess.run([sys.executable, "-m", "apx_doctor", "check", "/dev/zero"], capture_output=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2 and b"/dev/zero" in done.stderr and b"Traceback" not in done.stderr


def _cc(uuid: str, parent: str | None, kind: str, content) -> bytes:
    line = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s",
        "isSidechain": False,
        "message": {"role": kind, "content": content},
    }
    return orjson.dumps(line) + b"\n"


def test_a_uuid_cycle_ends_each_ancestry_walk_at_its_first_repeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [_cc("u0", None, "user", "start")]
    calls = 40
    for n in range(calls):
        # Two lines pointing at each other, then a reply whose call is cut, and a
        # prompt hanging below the cycle: closing the call walks into the cycle.
        lines.append(_cc(f"x{n}", f"y{n}", "user", "loop"))
        lines.append(_cc(f"y{n}", f"x{n}", "user", "loop"))
        lines.append(_cc(f"a{n}", f"y{n}", "assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {}}]))
        lines.append(_cc(f"p{n}", f"x{n}", "user", "next"))
    path = tmp_path / "cycle.jsonl"
    path.write_bytes(b"".join(lines))
    steps = []
    real = claude_code.ClaudeCodeAdapter._parent

    def counted(self, uuid):
        steps.append(uuid)
        return real(self, uuid)

    monkeypatch.setattr(claude_code.ClaudeCodeAdapter, "_parent", counted)
    result = run_cli("fix", "--output", str(tmp_path / "out.jsonl"), "--input-format", "claude-code", str(path))
    assert result.exit_code in (0, 1, 2) and "apx-doctor: internal error" not in result.output
    assert len(steps) <= 20 * len(lines), f"{len(steps)} ancestry steps for {len(lines)} lines"
