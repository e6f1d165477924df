"""Inputs the fuzzer found, kept as tests.

A fixed one guards against its return. One not yet fixed is a strict xfail
that names its owner: when the fix lands it passes, and the strict marker makes
the suite say so, so the marker is removed and the input stays as a guard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import json_report, run_cli

DATA = Path(__file__).resolve().parent / "data"


def test_a_dict_where_a_type_name_belongs_is_no_crash(tmp_path: Path) -> None:
    """make fuzz: {"type": {}} raised in the claude-code detector for any auto-detected file."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n{"type":{"a":1},"uuid":"x"}\n{"role":{},"content":"x"}\n')
    result = run_cli("check", "--output-format", "json", str(path))
    assert result.exit_code in (0, 1, 2) and "internal error" not in result.output
    for fmt in ("chat", "anthropic", "responses", "claude-code", "codex"):
        result = run_cli("fix", "--output-format", "json", "--input-format", fmt, str(path))
        report = json_report(result)["files"][0]
        assert "internal error" not in report.get("error", "")


@pytest.mark.parametrize("options", [[], ["--drop-orphans"]])
def test_repeated_sidechain_records_are_repaired(tmp_path: Path, options: list[str]) -> None:
    source = DATA / "claude-code-repeated-sidechain-uuids.jsonl"
    out = tmp_path / "out.jsonl"
    result = run_cli("fix", *options, "--output-format", "json", "--output", str(out), str(source))
    assert "error" not in json_report(result)["files"][0]
    assert result.exit_code == 1 and out.exists()
