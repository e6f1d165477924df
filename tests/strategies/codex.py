"""Random Codex rollouts: sound turns, dropped and reordered outputs, orphans, events between
calls and outputs, aborted turns, compactions and record types Codex may add later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

FORMAT = "codex"

_START = datetime(2025, 12, 5, 11, 0, tzinfo=UTC)
_TEXT = st.text(max_size=12)
_CALL_KINDS = st.sampled_from(["function_call", "custom_tool_call", "local_shell_call"])
_OUTPUT_FOR = {
    "function_call": "function_call_output",
    "local_shell_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
}


def _message(role: str, text: str) -> tuple[str, dict]:
    part = "output_text" if role == "assistant" else "input_text"
    return "response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _call(kind: str, call_id: str, name: str) -> tuple[str, dict]:
    if kind == "function_call":
        return "response_item", {"type": kind, "name": name, "arguments": "{}", "call_id": call_id}
    if kind == "custom_tool_call":
        return "response_item", {"type": kind, "name": name, "input": "*** Begin Patch", "call_id": call_id}
    action = {"type": "exec", "command": ["ls"], "timeout_ms": None, "working_directory": None, "env": None, "user": None}
    return "response_item", {"type": kind, "call_id": call_id, "status": "completed", "action": action}


def _output(kind: str, call_id: str, text: str) -> tuple[str, dict]:
    return "response_item", {"type": _OUTPUT_FOR[kind], "call_id": call_id, "output": text}


_NOISE = st.sampled_from(
    [
        ("event_msg", {"type": "token_count", "info": None}),
        ("event_msg", {"type": "agent_message", "message": "working"}),
        ("turn_context", {"cwd": "/w", "model": "m"}),
        ("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": None}),
        ("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}}),
        ("response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "g"}}),
        ("future_record", {"anything": True}),
        _message("assistant", "on it"),
        _message("developer", "<permissions instructions>"),
    ]
)


@st.composite
def _turn(draw, turn: int) -> list[tuple[str, dict]]:
    lines = [_message("user", draw(_TEXT) or "go")]
    for step in range(draw(st.integers(0, 4))):
        calls = [(draw(_CALL_KINDS), f"call_{turn}_{step}_{i}") for i in range(draw(st.integers(0, 3)))]
        lines += [_call(kind, call_id, "shell") for kind, call_id in calls]
        lines += draw(st.lists(_NOISE, max_size=2))
        answered = draw(st.permutations(calls))
        for kind, call_id in answered[: draw(st.integers(0, len(answered)))]:
            lines.append(_output(kind, call_id, draw(st.sampled_from(["ok", "", "aborted"]))))
            lines += draw(st.lists(_NOISE, max_size=1))
        if calls and draw(st.integers(0, 4)) == 0:
            lines.append(("event_msg", {"type": "turn_aborted", "reason": "interrupted"}))
        if draw(st.integers(0, 6)) == 0:
            lines.append(_output("function_call", "call_ghost", "?"))
    if draw(st.integers(0, 5)) == 0:
        lines.append(("compacted", {"message": "summary", "replacement_history": []}))
    return lines


@st.composite
def histories(draw) -> list:
    body: list[tuple[str, dict]] = [
        ("session_meta", {"id": "s", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.77.0"}),
    ]
    if draw(st.booleans()):
        body.append(_message("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"))
    for turn in range(draw(st.integers(0, 4))):
        body += draw(_turn(turn))
    step = timedelta(milliseconds=draw(st.sampled_from([0, 1, 1000])))
    return [{"timestamp": _stamp(_START + step * i), "type": kind, "payload": payload} for i, (kind, payload) in enumerate(body)]


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
