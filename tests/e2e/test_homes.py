"""Broken sessions found where the runtimes keep them, by the call id in the error (issue 13).

One HOME holds a Claude Code session and a Codex rollout, each interrupted by
killing the real runtime mid-tool, beside the bookkeeping JSONL the runtimes
keep in their homes. The doctor is pointed at nothing but that HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from apx_doctor.formats.base import DEFAULT_MARKER

from .fence import Fence
from .runtimes import ClaudeCode, Codex
from .test_runtimes import REPAIRED, sent_on_resume, the_call


def doctor(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GITHUB_ACTIONS")}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "apx_doctor", *args], capture_output=True, text=True, env=env, cwd=home, timeout=120
    )


def test_the_homes_lead_from_a_call_id_to_its_session_and_the_repair_resumes(fence: Fence, tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude, codex = ClaudeCode(fence, tmp_path / "claude", home), Codex(fence, tmp_path / "codex", home)
    try:
        claude_session, codex_rollout = claude.interrupt(), codex.interrupt()
        claude_call, codex_call = the_call(claude), the_call(codex)
        # What else the homes hold as JSONL: the prompts typed, the thread index.
        (home / ".claude" / "history.jsonl").write_text(
            json.dumps(
                {"display": "run the tests", "pastedContents": {}, "timestamp": 1764620000000, "project": str(claude.work)}
            )
            + "\n"
        )
        (home / ".codex" / "history.jsonl").write_text(json.dumps({"session_id": "x", "ts": 1764620000, "text": "hi"}) + "\n")
        (home / ".codex" / "session_index.jsonl").write_text(json.dumps({"id": "x", "thread_name": "hi"}) + "\n")

        listed = doctor(home, "sessions", "--output-format", "json")
        assert listed.returncode == 1, listed.stderr
        rows = {row["runtime"]: row for row in json.loads(listed.stdout)["sessions"]}
        assert set(rows) == {"claude-code", "codex"}
        assert rows["claude-code"]["call_ids"] == [claude_call]
        assert rows["claude-code"]["session_id"] == claude.session_id()
        assert rows["claude-code"]["resume_command"] == ["claude", "--resume", claude.session_id()]
        assert rows["codex"]["call_ids"] == [codex_call]
        assert rows["codex"]["session_id"] == codex.session_id()
        assert rows["codex"]["resume_command"] == ["codex", "resume", codex.session_id()]

        checked = doctor(home, "check", str(home / ".claude"), str(home / ".codex"))
        assert checked.returncode == 1, checked.stdout + checked.stderr

        rollout_before = codex_rollout.read_bytes()
        fixed = doctor(home, "fix", "--in-place", "--call-id", claude_call)
        assert fixed.returncode == 1, fixed.stdout + fixed.stderr
        assert str(claude_session) in fixed.stderr
        assert codex_rollout.read_bytes() == rollout_before, "only the session that holds the call is repaired"
        assert DEFAULT_MARKER.encode() in claude_session.read_bytes()

        sent, requests = sent_on_resume(claude, "resume", claude_call)
        assert sent == REPAIRED, sent
        assert [r.error for r in requests if r.status != 200] == []
    finally:
        claude.close()
        codex.close()
