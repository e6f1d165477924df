"""The agent homes, as a user meets them after a resume error names a call id.

A throw-away HOME holds what Claude Code and Codex CLI keep there: sessions
(one interrupted, one clean, a sub-agent), and the JSONL they write that is no
session (prompt history, thread index, job timelines, a metrics log).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from apx_doctor.homes import RUNTIMES

from ._cli import run_cli

CLAUDE_SESSION = "5f0c2d1e-7a3b-4c9d-8e1f-2a3b4c5d6e7f"
CLAUDE_CLEAN = "8c1d2e3f-4a5b-4c6d-9e7f-0a1b2c3d4e5f"
CODEX_SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"
CODEX_CLEAN = "0199a213-81c0-7800-8aa1-ccab2a035a54"
CLAUDE_CALL = "toolu_01PqR7sT9uVwXyZaBcDeFgHi"
AGENT_CALL = "toolu_01AgEnTsUbAgEnTcAlL0000"
OLD_AGENT_CALL = "toolu_01OlDaGeNtFiLeCaLl00000"
CODEX_CALL = "call_Xy12AbCdEfGhIjKlMnOpQrSt"
PROJECT = "/home/dev/shop"


def _claude_line(kind: str, uuid: str, parent: str | None, message: dict, session: str = CLAUDE_SESSION, **extra) -> dict:
    line = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": PROJECT,
        "sessionId": session,
        "version": "2.1.17",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": "2026-01-23T17:00:06.000Z",
    }
    line.update(extra)
    return line


def _assistant(call_id: str, tool: str, arguments: dict, message_id: str) -> dict:
    return {
        "model": "claude-opus-4-5-20251101",
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": arguments}],
        "stop_reason": None,
        "usage": {"input_tokens": 2, "output_tokens": 3},
    }


def _jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def claude_interrupted(session: str = CLAUDE_SESSION, call_id: str = CLAUDE_CALL) -> bytes:
    return _jsonl(
        [
            {"type": "summary", "summary": "Run the tests", "leafUuid": "u2"},
            {
                "type": "file-history-snapshot",
                "messageId": "u1",
                "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2026-01-23T17:00:05.000Z"},
                "isSnapshotUpdate": False,
            },
            _claude_line("user", "u1", None, {"role": "user", "content": "run the tests"}, session),
            _claude_line(
                "assistant",
                "a1",
                "u1",
                _assistant(call_id, "Bash", {"command": "pytest -q"}, "msg_01A"),
                session,
                requestId="req_01A",
            ),
            _claude_line("user", "u2", "a1", {"role": "user", "content": "why did it stop?"}, session),
        ]
    )


def claude_clean() -> bytes:
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01CleanCall000000000000", "content": "README.md"}],
    }
    return _jsonl(
        [
            _claude_line("user", "c1", None, {"role": "user", "content": "list the files"}, CLAUDE_CLEAN),
            _claude_line(
                "assistant",
                "c2",
                "c1",
                _assistant("toolu_01CleanCall000000000000", "Bash", {"command": "ls"}, "msg_02A"),
                CLAUDE_CLEAN,
            ),
            _claude_line(
                "user", "c3", "c2", result, CLAUDE_CLEAN, toolUseResult={"stdout": "README.md"}, sourceToolAssistantUUID="c2"
            ),
        ]
    )


def claude_subagent() -> bytes:
    # A sub-agent's lines carry the session's id and isSidechain.
    lines = [
        _claude_line("user", "s1", None, {"role": "user", "content": "search the code for TODOs"}, agentId="a81f"),
        _claude_line("assistant", "s2", "s1", _assistant(AGENT_CALL, "Grep", {"pattern": "TODO"}, "msg_03A"), agentId="a81f"),
    ]
    for line in lines:
        line["isSidechain"] = True
    return _jsonl(lines)


def codex_rollout(session: str = CODEX_SESSION, call_id: str | None = CODEX_CALL) -> bytes:
    lines = [
        {
            "timestamp": "2025-12-05T11:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": session,
                "timestamp": "2025-12-05T11:00:00.000Z",
                "cwd": "/home/dev/api",
                "originator": "codex_cli_rs",
                "cli_version": "0.77.0",
                "source": "cli",
                "model_provider": "openai",
            },
        },
        {
            "timestamp": "2025-12-05T11:00:01.000Z",
            "type": "turn_context",
            "payload": {"cwd": "/home/dev/api", "approval_policy": "on-request", "model": "gpt-5-codex"},
        },
        {
            "timestamp": "2025-12-05T11:00:02.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Delete the build folder"}],
            },
        },
    ]
    if call_id is not None:
        lines += [
            {
                "timestamp": "2025-12-05T11:00:04.000Z",
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": '{"command": ["rm", "-rf", "build"]}',
                    "call_id": call_id,
                },
            },
            {
                "timestamp": "2025-12-05T11:00:06.000Z",
                "type": "event_msg",
                "payload": {"type": "turn_aborted", "reason": "interrupted"},
            },
        ]
    else:
        lines.append(
            {
                "timestamp": "2025-12-05T11:00:04.000Z",
                "type": "response_item",
                "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
            }
        )
    return _jsonl(lines)


# What the runtimes keep in their homes that is no session.
BOOKKEEPING = {
    ".claude/history.jsonl": _jsonl(
        [
            {
                "display": "run the tests",
                "pastedContents": {},
                "timestamp": 1769187606000,
                "project": PROJECT,
                "sessionId": CLAUDE_SESSION,
            }
        ]
    ),
    ".claude/jobs/4f2a/timeline.jsonl": _jsonl(
        [{"at": "2026-01-23T17:00:00Z", "state": "working", "detail": "tests", "text": ""}]
    ),
    ".codex/history.jsonl": _jsonl([{"session_id": CODEX_SESSION, "ts": 1764932400, "text": "Delete the build folder"}]),
    ".codex/session_index.jsonl": _jsonl(
        [{"id": CODEX_SESSION, "thread_name": "Delete build", "updated_at": "2025-12-05T11:00:06Z"}]
    ),
}
# Not named by any default pattern: skipped because it fits no format.
METRICS = (".claude/statsig/metrics.jsonl", _jsonl([{"metric": "startup_ms", "value": 412, "ts": 1769187606000}]))


@pytest.fixture
def home(tmp_path: Path, isolated_cwd: Path) -> Path:
    root = tmp_path / "home"
    files = {
        f".claude/projects/-home-dev-shop/{CLAUDE_SESSION}.jsonl": claude_interrupted(),
        f".claude/projects/-home-dev-shop/{CLAUDE_CLEAN}.jsonl": claude_clean(),
        f".claude/projects/-home-dev-shop/{CLAUDE_SESSION}/subagents/agent-a81f.jsonl": claude_subagent(),
        # Older versions wrote a sub-agent's file beside the sessions.
        ".claude/projects/-home-dev-shop/agent-b2c4.jsonl": claude_subagent().replace(
            AGENT_CALL.encode(), OLD_AGENT_CALL.encode()
        ),
        f".codex/sessions/2025/12/05/rollout-2025-12-05T11-00-00-{CODEX_SESSION}.jsonl": codex_rollout(),
        f".codex/sessions/2025/12/05/rollout-2025-12-05T12-00-00-{CODEX_CLEAN}.jsonl": codex_rollout(CODEX_CLEAN, None),
        **BOOKKEEPING,
        METRICS[0]: METRICS[1],
    }
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def env_for(home: Path, **extra: str) -> dict[str, str | None]:
    # Every variable that moves a home is cleared: the test's HOME is the only one read.
    env: dict[str, str | None] = {"HOME": str(home), **{v.partition("/")[0]: None for r in RUNTIMES for v in r.env}}
    env.update(extra)
    return env


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def claude_path(home: Path, session: str = CLAUDE_SESSION) -> Path:
    return home / ".claude/projects/-home-dev-shop" / f"{session}.jsonl"


def codex_path(home: Path) -> Path:
    return home / f".codex/sessions/2025/12/05/rollout-2025-12-05T11-00-00-{CODEX_SESSION}.jsonl"


# --- sessions ---------------------------------------------------------------


def test_sessions_json_lists_exactly_the_interrupted_sessions(home: Path) -> None:
    before = snapshot(home)
    result = run_cli("sessions", "--output-format", "json", env=env_for(home))
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    rows = {(r["runtime"], r["path"]): r for r in doc["sessions"]}
    subagent = home / ".claude/projects/-home-dev-shop" / CLAUDE_SESSION / "subagents/agent-a81f.jsonl"
    old_agent = home / ".claude/projects/-home-dev-shop/agent-b2c4.jsonl"
    assert set(rows) == {
        ("claude-code", str(claude_path(home))),
        ("claude-code", str(subagent)),
        ("claude-code", str(old_agent)),
        ("codex", str(codex_path(home))),
    }
    claude = rows[("claude-code", str(claude_path(home)))]
    assert claude["session_id"] == CLAUDE_SESSION and claude["project"] == PROJECT
    assert claude["call_ids"] == [CLAUDE_CALL]
    assert claude["resume_command"] == ["claude", "--resume", CLAUDE_SESSION] and claude["resume_cwd"] == PROJECT
    assert claude["format"] == "claude-code" and claude["findings"][0]["code"] == "APX001"
    # A sub-agent's file resumes with its session.
    agent = rows[("claude-code", str(subagent))]
    assert agent["session_id"] == CLAUDE_SESSION and agent["call_ids"] == [AGENT_CALL]
    assert agent["resume_command"] == ["claude", "--resume", CLAUDE_SESSION]
    old = rows[("claude-code", str(old_agent))]
    assert old["session_id"] == CLAUDE_SESSION and old["call_ids"] == [OLD_AGENT_CALL]
    codex = rows[("codex", str(codex_path(home)))]
    assert codex["session_id"] == CODEX_SESSION and codex["project"] == "/home/dev/api"
    assert codex["call_ids"] == [CODEX_CALL]
    assert codex["resume_command"] == ["codex", "resume", CODEX_SESSION] and codex["resume_cwd"] is None
    assert codex["modified"].endswith("Z")
    homes = {h["runtime"]: h for h in doc["homes"]}
    assert homes["claude-code"]["path"] == str(home / ".claude") and homes["claude-code"]["exists"]
    assert homes["codex"]["path"] == str(home / ".codex")
    assert doc["summary"]["checked"] == 6 and doc["summary"]["interrupted"] == 4
    # It reads the homes and writes nothing.
    assert snapshot(home) == before


def test_sessions_all_lists_the_clean_ones_and_runtime_narrows(home: Path) -> None:
    result = run_cli("sessions", "--all", "--output-format", "json", env=env_for(home))
    ids = sorted((r["runtime"], r["session_id"], tuple(r["call_ids"])) for r in json.loads(result.stdout)["sessions"])
    assert ("claude-code", CLAUDE_CLEAN, ()) in ids and ("codex", CODEX_CLEAN, ()) in ids
    assert len(ids) == 6
    narrowed = run_cli("sessions", "--runtime", "codex", "--output-format", "json", env=env_for(home))
    assert [r["session_id"] for r in json.loads(narrowed.stdout)["sessions"]] == [CODEX_SESSION]
    clean_only = run_cli("sessions", "--runtime", "codex", "--call-id", "call_none", env=env_for(home))
    assert clean_only.exit_code == 2
    assert run_cli("sessions", "--runtime", "nope", env=env_for(home)).exit_code == 2


def test_sessions_text_shows_each_session_with_its_resume_command(home: Path) -> None:
    result = run_cli("sessions", "--color", "never", env=env_for(home))
    assert result.exit_code == 1
    out = result.stdout
    assert f"cd {PROJECT} && claude --resume {CLAUDE_SESSION}" in out
    assert f"codex resume {CODEX_SESSION}" in out
    assert CLAUDE_CALL in out and CODEX_CALL in out
    # The file, whole on one line: a path to copy.
    assert any(line.split() == ["file", str(codex_path(home))] for line in out.splitlines())
    assert CLAUDE_CLEAN not in out
    assert "4 with interrupted calls" in result.stderr


def test_sessions_follow_the_environment_overrides(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(home / ".claude", elsewhere / "claude")
    os.rename(home / ".codex", elsewhere / "codex")
    env = env_for(home, CLAUDE_CONFIG_DIR=str(elsewhere / "claude"), CODEX_HOME=str(elsewhere / "codex"))
    doc = json.loads(run_cli("sessions", "--output-format", "json", env=env).stdout)
    assert {h["runtime"]: (h["path"], h["env"]) for h in doc["homes"] if h["runtime"] in ("claude-code", "codex")} == {
        "claude-code": (str(elsewhere / "claude"), "CLAUDE_CONFIG_DIR"),
        "codex": (str(elsewhere / "codex"), "CODEX_HOME"),
    }
    assert sorted(r["session_id"] for r in doc["sessions"]) == sorted([CODEX_SESSION] + [CLAUDE_SESSION] * 3)
    # The default folders are not read when an override names another.
    (home / ".codex/sessions/2025/12/05").mkdir(parents=True)
    codex_path(home).write_bytes(codex_rollout("0199a213-81c0-7800-8aa1-dddddddddddd", "call_elsewhere"))
    doc = json.loads(run_cli("sessions", "--output-format", "json", env=env).stdout)
    assert "call_elsewhere" not in {c for r in doc["sessions"] for c in r["call_ids"]}


def test_sessions_without_any_home_is_clean(tmp_path: Path, isolated_cwd: Path) -> None:
    result = run_cli("sessions", env=env_for(tmp_path / "empty"))
    assert result.exit_code == 0
    assert "no agent home found" in result.stderr


def test_a_session_id_that_is_no_id_gets_no_resume_command(home: Path) -> None:
    # Anyone can write a rollout: what goes into a command line must look like an id.
    codex_path(home).write_bytes(codex_rollout("x; rm -rf ~", CODEX_CALL))
    env = env_for(home)
    row = next(
        r
        for r in json.loads(run_cli("sessions", "--output-format", "json", env=env).stdout)["sessions"]
        if r["runtime"] == "codex"
    )
    assert row["session_id"] == "x; rm -rf ~" and row["resume_command"] is None
    assert "rm -rf" not in run_cli("sessions", "--color", "never", env=env).stdout.split("resume")[-1]


def test_sessions_text_shows_hostile_text_escaped(home: Path) -> None:
    claude_path(home).write_bytes(claude_interrupted().replace(PROJECT.encode(), b"/home/dev/\\u001b]52;c;ZXZpbA==\\u0007x"))
    out = run_cli("sessions", "--color", "never", env=env_for(home)).stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]52" in out


# --- check and fix over the homes ---------------------------------------------


def test_check_the_homes_is_exit_1_not_2(home: Path) -> None:
    result = run_cli("check", "--output-format", "json", str(home / ".claude"), str(home / ".codex"), env=env_for(home))
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    files = {f["path"]: f for f in doc["files"]}
    # The runtimes' bookkeeping is excluded by default: not even looked at.
    for name in BOOKKEEPING:
        assert str(home / name) not in files
    # A stray file that fits no format is skipped, with its reason.
    metrics = files[str(home / METRICS[0])]
    assert "cannot tell the transcript format" in metrics["skipped"] and metrics["findings"] == []
    assert doc["summary"]["skipped"] == 1 and doc["summary"]["failed"] == 0
    assert doc["summary"]["files"] == len(doc["files"]) == 7
    assert {f["path"] for f in doc["files"] if f["findings"]} == {
        str(claude_path(home)),
        str(home / ".claude/projects/-home-dev-shop/agent-b2c4.jsonl"),
        str(home / ".claude/projects/-home-dev-shop" / CLAUDE_SESSION / "subagents/agent-a81f.jsonl"),
        str(codex_path(home)),
    }
    text = run_cli("check", str(home / ".claude"), env=env_for(home))
    assert f"skipped {home / METRICS[0]}: not a transcript" in text.stderr
    assert "1 skipped (not a transcript)" in text.stderr


def test_a_file_named_on_the_command_line_that_fits_no_format_is_still_exit_2(home: Path) -> None:
    result = run_cli("check", str(home / METRICS[0]), env=env_for(home))
    assert result.exit_code == 2
    assert "cannot tell the transcript format" in result.stderr
    # Named on the command line, excluded files are checked too (unless --force-exclude).
    assert run_cli("check", str(home / ".codex/history.jsonl"), env=env_for(home)).exit_code == 2
    forced = run_cli("check", "--force-exclude", str(home / ".codex/history.jsonl"), str(codex_path(home)), env=env_for(home))
    assert forced.exit_code == 1 and "history.jsonl" not in forced.output


def test_fix_in_place_by_call_id_repairs_that_session_only(home: Path) -> None:
    before = snapshot(home)
    target = str(claude_path(home).relative_to(home))
    result = run_cli(
        "fix",
        "--in-place",
        "--call-id",
        CLAUDE_CALL,
        env=env_for(home, CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex")),
    )
    assert result.exit_code == 1, result.output
    assert f"call id {CLAUDE_CALL} is in {claude_path(home)}" in result.stderr
    assert f"Claude Code session {CLAUDE_SESSION}" in result.stderr
    after = snapshot(home)
    assert {name for name in after if after[name] != before.get(name)} == {target}
    assert set(after) == set(before)  # no sidecar, no temporary file left
    repaired = after[target]
    assert f'"tool_use_id":"{CLAUDE_CALL}","content":"not run: the turn was interrupted"'.encode() in repaired
    assert run_cli("check", str(claude_path(home)), env=env_for(home)).exit_code == 0
    # The others still hold their calls.
    still = json.loads(run_cli("sessions", "--output-format", "json", env=env_for(home)).stdout)
    assert sorted(c for r in still["sessions"] for c in r["call_ids"]) == sorted([AGENT_CALL, OLD_AGENT_CALL, CODEX_CALL])


def test_check_by_call_id_reports_only_that_call(home: Path) -> None:
    result = run_cli("check", "--output-format", "json", "--call-id", CODEX_CALL, env=env_for(home))
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [f["path"] for f in doc["files"]] == [str(codex_path(home))]
    assert [f["call_id"] for f in doc["files"][0]["findings"]] == [CODEX_CALL]
    # Given paths, it searches those.
    within = run_cli("check", "--call-id", CODEX_CALL, str(home / ".codex"), env=env_for(home))
    assert within.exit_code == 1 and str(codex_path(home)) in within.stderr
    elsewhere = run_cli("check", "--call-id", CODEX_CALL, str(home / ".claude"), env=env_for(home))
    assert elsewhere.exit_code == 2 and "no session holds this call id" in elsewhere.stderr


def test_a_call_id_found_nowhere_is_exit_2_and_writes_nothing(home: Path) -> None:
    before = snapshot(home)
    result = run_cli("fix", "--in-place", "--call-id", "toolu_01NoSuchCall", env=env_for(home))
    assert result.exit_code == 2
    assert "toolu_01NoSuchCall" in result.stderr and "no session holds this call id" in result.stderr
    assert str(home / ".claude") in result.stderr
    assert snapshot(home) == before
    # A clean session's call is no finding: still not found.
    assert run_cli("check", "--call-id", "toolu_01CleanCall000000000000", env=env_for(home)).exit_code == 2


def test_check_without_paths_needs_a_call_id(home: Path) -> None:
    result = run_cli("check", env=env_for(home))
    assert result.exit_code == 2 and "--call-id" in result.stderr


def test_a_folder_with_a_salvage_sidecar_checks_as_if_it_were_not_there(tmp_path: Path, isolated_cwd: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    damaged = folder / "chat.jsonl"
    damaged.write_bytes(
        b'{"role":"user","content":"hi"}\n'
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]}\n'
        b'{"role":"tool","tool_call_id":"c1","con\n'
        b'{"role":"user","content":"and?"}\n'
    )
    assert run_cli("fix", "--salvage", "--in-place", str(damaged)).exit_code == 1
    sidecar = folder / "chat.jsonl.rejected.jsonl"
    assert sidecar.read_bytes() == b'{"role":"tool","tool_call_id":"c1","con\n'
    again = run_cli("check", "--output-format", "json", str(folder))
    assert again.exit_code == 0, again.output
    assert [f["path"] for f in json.loads(again.stdout)["files"]] == [str(damaged)]
    # Unless the defaults are replaced.
    assert run_cli("check", "--exclude", "", str(folder)).exit_code == 1
