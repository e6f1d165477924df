"""Transcripts are runtime state: the portable project contract is reported, never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apx_doctor.discover import contract_reason

from ._cli import BROKEN, run_cli


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        (".apc/sessions/run.jsonl", "inside .apc/"),
        ("project/.APC/x.jsonl", "inside .apc/"),
        ("AGENTS.md", "AGENTS.md is a contract file"),
        ("docs/agents.md", "agents.md is a contract file"),
        ("Agents.override.jsonl", "Agents.override.jsonl is a contract file"),
        ("reviewer.agent.jsonl", "named like an agent definition"),
        (".claude/agents/r.jsonl", "named like an agent definition"),
        ("repo/.GitHub/Agents/deep/r.jsonl", "named like an agent definition"),
        ("claude/agents/r.jsonl", "named like an agent definition"),
    ],
)
def test_contract_paths(path: str, reason: str) -> None:
    assert contract_reason(path) == reason


@pytest.mark.parametrize(
    "path",
    [
        "sessions/run.jsonl",
        "apc/run.jsonl",
        "x.apc/run.jsonl",
        ".apc.old/run.jsonl",
        ".apc",
        "agents-log.jsonl",
        "myclaude/agents/r.jsonl",
        ".claude/agents-old/r.jsonl",
        ".claude/x/agents/r.jsonl",
        "agents/claude/r.jsonl",
        "-",
    ],
)
def test_runtime_paths(path: str) -> None:
    assert contract_reason(path) is None


def test_a_transcript_in_apc_is_a_warning_and_is_never_fixed_in_place(isolated_cwd: Path) -> None:
    target = isolated_cwd / ".apc" / "run.jsonl"
    target.parent.mkdir()
    target.write_bytes(BROKEN)
    check = run_cli("check", "--output-format", "json", ".apc/run.jsonl")
    codes = [(f["code"], f["severity"]) for f in json.loads(check.stdout)["files"][0]["findings"]]
    assert codes == [("APX201", "warning"), ("APX001", "error")]

    fixed = run_cli("fix", "--in-place", "--output-format", "json", ".apc/run.jsonl")
    assert target.read_bytes() == BROKEN
    assert "not editing .apc/run.jsonl: it is in the portable project contract (inside .apc/)" in fixed.stderr
    report = json.loads(fixed.stdout)
    assert report["files"][0]["refused"] == "inside .apc/" and report["files"][0]["written"] is False
    assert report["summary"]["inserted"] == 0
    assert fixed.exit_code == 1  # the transcript still needs a repair


def test_folders_walked_into_apc_are_reported_not_written(isolated_cwd: Path) -> None:
    (isolated_cwd / ".apc").mkdir()
    (isolated_cwd / ".apc" / "run.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "live.jsonl").write_bytes(BROKEN)
    result = run_cli("fix", "--in-place", ".")
    assert (isolated_cwd / ".apc" / "run.jsonl").read_bytes() == BROKEN
    assert (isolated_cwd / "live.jsonl").read_bytes() != BROKEN
    assert "Fixing live.jsonl" in result.stdout and "Fixing .apc" not in result.stdout


def test_agents_md_is_never_written(isolated_cwd: Path) -> None:
    agents = isolated_cwd / "AGENTS.md"
    agents.write_bytes(BROKEN)  # even when it happens to hold JSONL
    result = run_cli("fix", "--in-place", "AGENTS.md")
    assert agents.read_bytes() == BROKEN and "not editing AGENTS.md" in result.stderr
    out = run_cli("fix", "--output", ".apc/repaired.jsonl", "AGENTS.md")
    assert out.exit_code == 2 and "refusing to write .apc/repaired.jsonl" in out.stderr
    assert not (isolated_cwd / ".apc").exists()
