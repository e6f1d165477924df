"""Every row of the homes registry: where its sessions are, what they say about themselves, how they resume.

Each runtime gets a home with one interrupted session written as that runtime
writes it, at the place it writes it; ``sessions`` must find it there with the
right id, project and resume command, and an environment override must move
the home.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apx_doctor import homes

from ._cli import run_cli


def _jsonl(*lines: dict) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


QWEN_ID = "3f6b2c1a-9d4e-4f70-8a21-6c5d4e3b2a10"
PI_ID = "019e1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b"
COPILOT_ID = "5b3c1f0e-7d2a-4c61-9a8e-2f4d6b1c9e07"
GEMINI_ID = "37b7abef-713d-4522-85f0-8ff15a4e6d17"
DROID_ID = "4f1d7a2c-0b3e-4c59-9a61-7e2d5c8b1f30"
GROK_ID = "9c2e4b61-3f7a-4d08-b5e1-0a6c8d2f4e19"
KIMI_ID = "d81f0c3a-52b6-4e97-8c1d-7b3a9e5f2c64"
CLINE_ID = "1796186131048_jqcon"


def _qwen(uuid: str, parent: str | None, kind: str, message: dict, **extra) -> dict:
    line = {
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": QWEN_ID,
        "timestamp": "2026-03-14T09:00:01.007Z",
        "type": kind,
        "cwd": "/home/dev/shop",
        "version": "0.21.13",
        "message": message,
    }
    line.update(extra)
    return line


# runtime -> (file under the home, bytes, files beside it, session id, project, resume command, resume folder, call id)
CASES = {
    "qwen-code": (
        f"projects/-home-dev-shop/chats/{QWEN_ID}.jsonl",
        _jsonl(
            _qwen("q1", None, "user", {"role": "user", "parts": [{"text": "Run the tests"}]}),
            _qwen(
                "q2",
                "q1",
                "assistant",
                {
                    "role": "model",
                    "parts": [{"functionCall": {"id": "call_sh1", "name": "run_shell_command", "args": {"command": "npm test"}}}],
                },
                model="qwen3-coder-plus",
            ),
        ),
        {},
        QWEN_ID,
        "/home/dev/shop",
        ["qwen", "--resume", QWEN_ID],
        "/home/dev/shop",
        "call_sh1",
    ),
    "pi": (
        f"sessions/--home-dev-project--/2026-05-12T09-00-00-000Z_{PI_ID}.jsonl",
        _jsonl(
            {"type": "session", "version": 3, "id": PI_ID, "timestamp": "2026-05-12T09:00:00.000Z", "cwd": "/home/dev/project"},
            {
                "type": "message",
                "id": "c2e3f4a5",
                "parentId": None,
                "timestamp": "2026-05-12T09:00:03.021Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "Deploy it"}], "timestamp": 1778576403019},
            },
            {
                "type": "message",
                "id": "d3f4a5b6",
                "parentId": "c2e3f4a5",
                "timestamp": "2026-05-12T09:00:05.035Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "toolCall", "id": "toolu_01", "name": "bash", "arguments": {"command": "make deploy"}}],
                    "stopReason": "toolUse",
                    "timestamp": 1778576405030,
                },
            },
        ),
        {},
        PI_ID,
        "/home/dev/project",
        ["pi", "--session", PI_ID],
        None,
        "toolu_01",
    ),
    "copilot-cli": (
        f"session-state/{COPILOT_ID}/events.jsonl",
        _jsonl(
            {
                "type": "session.start",
                "data": {
                    "sessionId": COPILOT_ID,
                    "version": 1,
                    "producer": "copilot-agent",
                    "copilotVersion": "1.0.11",
                    "startTime": "2026-03-26T17:50:00.000Z",
                    "context": {"cwd": "/tmp/project"},
                    "alreadyInUse": False,
                },
                "id": "e01",
                "timestamp": "2026-03-26T17:50:01.000Z",
                "parentId": None,
            },
            {
                "type": "user.message",
                "data": {
                    "content": "Run the tests",
                    "transformedContent": "Run the tests",
                    "attachments": [],
                    "interactionId": "int-1",
                },
                "id": "e02",
                "timestamp": "2026-03-26T17:50:02.000Z",
                "parentId": "e01",
            },
            {
                "type": "assistant.message",
                "data": {
                    "messageId": "msg-1",
                    "content": "",
                    "toolRequests": [
                        {"toolCallId": "call_test", "name": "bash", "arguments": {"command": "npm test"}, "type": "function"}
                    ],
                    "interactionId": "int-1",
                    "turnId": "0",
                },
                "id": "e03",
                "timestamp": "2026-03-26T17:50:03.000Z",
                "parentId": "e02",
            },
            {
                "type": "abort",
                "data": {"reason": "user initiated"},
                "id": "e04",
                "timestamp": "2026-03-26T17:50:05.000Z",
                "parentId": "e03",
            },
        ),
        {},
        COPILOT_ID,
        "/tmp/project",
        ["copilot", "--resume", COPILOT_ID],
        None,
        "call_test",
    ),
    "gemini-cli": (
        "tmp/shop/chats/session-2026-04-29T21-39-37b7abef.jsonl",
        _jsonl(
            {
                "sessionId": GEMINI_ID,
                "projectHash": "0b7dfb1274ee51b336813b17f2ddab1f56b6591f723e7314126bbd502c69e9c9",
                "startTime": "2026-04-29T21:39:22.319Z",
                "lastUpdated": "2026-04-29T21:39:22.319Z",
                "kind": "main",
            },
            {"id": "g-user-1", "timestamp": "2026-04-29T21:39:33.155Z", "type": "user", "content": [{"text": "Delete tmp/."}]},
            {
                "id": "g-assistant-1",
                "timestamp": "2026-04-29T21:39:35.125Z",
                "type": "gemini",
                "content": "",
                "model": "gemini-3-flash-preview",
                "toolCalls": [
                    {
                        "id": "run_shell_command_rm",
                        "name": "run_shell_command",
                        "args": {"command": "rm -rf tmp"},
                        "status": "executing",
                        "timestamp": "2026-04-29T21:39:35.364Z",
                    }
                ],
            },
        ),
        # Gemini CLI writes the project folder of tmp/<project>/ beside its chats.
        {"tmp/shop/.project_root": b"/home/dev/shop\n"},
        GEMINI_ID,
        "/home/dev/shop",
        ["gemini", "--resume", GEMINI_ID],
        "/home/dev/shop",
        "run_shell_command_rm",
    ),
    "factory-droid": (
        "sessions/-home-dev-shop/4f1d7a2c-0b3e-4c59-9a61-7e2d5c8b1f30.jsonl",
        _jsonl(
            {
                "type": "session_start",
                "id": DROID_ID,
                "title": "Deploy",
                "cwd": "/home/dev/shop",
                "owner": "dev",
                "sessionTitle": "Deploy",
                "version": "0.81.0",
            },
            {
                "type": "message",
                "id": "m1",
                "parentId": DROID_ID,
                "timestamp": "2025-12-26T23:50:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "Deploy it"}]},
            },
            {
                "type": "message",
                "id": "m2",
                "parentId": "m1",
                "timestamp": "2025-12-26T23:50:01.000Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "tu_deploy", "name": "Execute", "input": {"command": "make deploy"}}],
                },
            },
        ),
        {},
        DROID_ID,
        "/home/dev/shop",
        ["droid", "--resume", DROID_ID],
        "/home/dev/shop",
        "tu_deploy",
    ),
    "grok-cli": (
        f"sessions/%2Fhome%2Fdev%2Fshop/{GROK_ID}/chat_history.jsonl",
        _jsonl(
            {"type": "system", "content": "You are Grok."},
            {"type": "user", "content": [{"type": "text", "text": "Run the tests"}], "prompt_index": 0},
            {
                "type": "assistant",
                "content": "Running them.",
                "tool_calls": [{"id": "call-grok-1", "name": "run_terminal_cmd", "arguments": '{"command":"npm test"}'}],
            },
        ),
        # The display log beside it is no session.
        {f"sessions/%2Fhome%2Fdev%2Fshop/{GROK_ID}/updates.jsonl": _jsonl({"type": "turn_completed"})},
        GROK_ID,
        None,
        ["grok", "--resume", GROK_ID],
        None,
        "call-grok-1",
    ),
    "cline": (
        f"{CLINE_ID}/{CLINE_ID}.messages.json",
        (
            json.dumps(
                {
                    "version": 1,
                    "updated_at": "2026-12-02T04:35:31.345Z",
                    "agent": "lead",
                    "sessionId": CLINE_ID,
                    "origin": {"source": "cli", "mode": "user", "sessionId": CLINE_ID, "version": "3.0.65"},
                    "messages": [
                        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "Run the tests"}], "ts": 1},
                        {
                            "id": "msg_1",
                            "role": "assistant",
                            "content": [
                                {
                                    "type": "tool_use",
                                    "id": "call_cline1",
                                    "name": "run_commands",
                                    "input": {"commands": ["npm test"]},
                                }
                            ],
                            "ts": 2,
                        },
                    ],
                    "system_prompt": "You are Cline.",
                },
                indent=2,
            )
            + "\n"
        ).encode(),
        # The session's metadata beside it is no session.
        {
            f"{CLINE_ID}/{CLINE_ID}.json": json.dumps(
                {"version": 1, "session_id": CLINE_ID, "cwd": "/home/dev/shop"}, indent=2
            ).encode()
        },
        CLINE_ID,
        None,
        ["cline", "--id", CLINE_ID],
        None,
        "call_cline1",
    ),
    "kimi": (
        f"sessions/0b7dfb1274ee/{KIMI_ID}/agents/main/wire.jsonl",
        _jsonl(
            {"type": "metadata", "protocol_version": "1.4", "created_at": 1781363635367, "app_version": "0.14.2"},
            {
                "type": "turn.prompt",
                "input": [{"type": "text", "text": "Update src/index.ts"}],
                "origin": {"kind": "user"},
                "time": 1781368649424,
            },
            {
                "type": "context.append_loop_event",
                "event": {"type": "step.begin", "uuid": "step-001", "turnId": "0", "step": 1},
                "time": 1781368649424,
            },
            {
                "type": "context.append_loop_event",
                "event": {
                    "type": "tool.call",
                    "uuid": "call-001",
                    "stepUuid": "step-001",
                    "turnId": "0",
                    "step": 1,
                    "toolCallId": "tool_write_001",
                    "name": "Write",
                    "args": {"path": "src/index.ts"},
                },
                "time": 1781368649425,
            },
        ),
        {},
        KIMI_ID,
        None,
        ["kimi", "--session", KIMI_ID],
        None,
        "tool_write_001",
    ),
}
# Where each runtime's home is, and the variable that moves it (with the folder under it).
HOMES = {
    "claude-code": (".claude", "CLAUDE_CONFIG_DIR", ""),
    "codex": (".codex", "CODEX_HOME", ""),
    "qwen-code": (".qwen", "QWEN_RUNTIME_DIR", ""),
    "gemini-cli": (".gemini", "GEMINI_CLI_HOME", ".gemini"),
    "pi": (".pi/agent", "PI_CODING_AGENT_DIR", ""),
    "copilot-cli": (".copilot", None, ""),
    # Its sessions are one SQLite store (tests/formats/test_opencode.py finds one there).
    "opencode": (".local/share/opencode", "XDG_DATA_HOME", "opencode"),
    "factory-droid": (".factory", None, ""),
    "grok-cli": (".grok", "GROK_HOME", ""),
    "kimi": (".kimi-code", "KIMI_CODE_HOME", ""),
    "cline": (".cline/data/sessions", "CLINE_SESSION_DATA_DIR", ""),
}
ALL_VARIABLES = tuple(dict.fromkeys(v.partition("/")[0] for r in homes.RUNTIMES for v in r.env))


def _env(home: Path, **extra: str) -> dict[str, str | None]:
    env: dict[str, str | None] = {"HOME": str(home), **{name: None for name in ALL_VARIABLES}}
    env.update(extra)
    return env


def test_every_row_is_a_runtime_whose_format_is_read() -> None:
    from apx_doctor.formats import format_names

    assert {r.format for r in homes.runtimes()} <= set(format_names())
    assert set(HOMES) >= {r.name for r in homes.RUNTIMES}, "a new row needs its case here"


@pytest.mark.parametrize("name", sorted(CASES))
def test_sessions_finds_each_runtimes_session_where_it_writes_it(name: str, tmp_path: Path, isolated_cwd: Path) -> None:
    if name not in {r.name for r in homes.runtimes()}:
        pytest.skip(f"no {name} adapter in this installation")
    relative, data, beside, session_id, project, resume, resume_cwd, call_id = CASES[name]
    folder = HOMES[name][0]
    home = tmp_path / "home"
    path = home / folder / relative
    for target, content in {relative: data, **beside}.items():
        (home / folder / target).parent.mkdir(parents=True, exist_ok=True)
        (home / folder / target).write_bytes(content)
    result = run_cli("sessions", "--runtime", name, "--output-format", "json", env=_env(home))
    assert result.exit_code == 1, result.output
    (row,) = json.loads(result.stdout)["sessions"]
    assert (row["path"], row["session_id"], row["project"]) == (str(path), session_id, project)
    assert (row["resume_command"], row["resume_cwd"], row["call_ids"]) == (resume, resume_cwd, [call_id])
    # And fix --call-id finds it with no path.
    assert run_cli("check", "--call-id", call_id, env=_env(home)).exit_code == 1


@pytest.mark.parametrize("name", sorted(HOMES))
def test_each_home_is_its_default_folder_or_its_override(name: str, tmp_path: Path) -> None:
    runtime = next(r for r in homes.RUNTIMES if r.name == name)
    folder, variable, under = HOMES[name]
    assert homes.home_of(runtime, {"HOME": "/u"}).path == str(Path("/u", folder))
    if variable is not None:
        moved = homes.home_of(runtime, {"HOME": "/u", variable: "/elsewhere"})
        assert (moved.path, moved.source) == (str(Path("/elsewhere", under) if under else Path("/elsewhere")), variable)


def test_qwen_runtime_dir_wins_over_qwen_home() -> None:
    qwen = next(r for r in homes.RUNTIMES if r.name == "qwen-code")
    assert homes.home_of(qwen, {"HOME": "/u", "QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/r"}).path == "/r"
    assert homes.home_of(qwen, {"HOME": "/u", "QWEN_HOME": "/q"}).path == "/q"
