"""`show` reads a file as `check` does, quiet stretches and all: what it learns is what reading every line whole learns.

Its summary counts turns, calls and results, and it draws each interruption
where a repair puts its record. Lines a format's quiet loop takes are never
classified, so the counts come from the step they were taken in; these
properties hold them to the line-by-line reading, for each format with quiet
lines, on drawn histories with extra turns dropped in anywhere (prompts typed
while calls wait, results followed by text, prompts Codex records as events, Claude Code's command output and notices).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiet_support import broken

from apx_doctor import quiet, show
from apx_doctor.formats import adapter_class
from apx_doctor.formats.chat import ChatAdapter

import strategies
from strategies import claude_code

_TURNS = {
    "chat": [{"role": "user", "content": "and now?"}, {"role": "system", "content": "be brief"}],
    "anthropic": [
        {"role": "user", "content": "and now?"},
        {"role": "user", "content": []},
        {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c0", "content": "ok"}, {"type": "text", "text": "go"}],
        },
    ],
    "responses": [
        {"type": "message", "role": "user", "content": "and now?"},
        {"role": "developer", "content": "be brief"},
    ],
    "codex": [
        {"type": "event_msg", "payload": {"type": "user_message", "message": "and now?"}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "UserMessage", "content": []}}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "AgentMessage"}}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        },
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]},
        },
    ],
    "claude-code": [
        claude_code.prompt("00000000-0000-4000-8000-100000000001", None, "and now?"),
        claude_code.prompt("00000000-0000-4000-8000-100000000002", None, [{"type": "text", "text": "and now?"}]),
        claude_code.prompt("00000000-0000-4000-8000-100000000003", None, "<local-command-stdout>ok"),
        claude_code.prompt("00000000-0000-4000-8000-100000000004", None, "<task-notification>done"),
        {**claude_code.prompt("00000000-0000-4000-8000-100000000005", None, "Caveat"), "isMeta": True},
        claude_code.prompt(
            "00000000-0000-4000-8000-100000000006",
            None,
            [{"type": "tool_result", "tool_use_id": "toolu_00_0", "content": "ok"}, {"type": "text", "text": "go"}],
        ),
    ],
}


@st.composite
def _sessions(draw, fmt: str) -> bytes:
    lines = [orjson.dumps(line) + b"\n" for line in draw(strategies.by_format()[fmt].histories())]
    for _ in range(draw(st.integers(0, 4))):
        lines.insert(draw(st.integers(0, len(lines))), orjson.dumps(draw(st.sampled_from(_TURNS[fmt]))) + b"\n")
    return broken(draw, lines)


@contextmanager
def _small_pieces() -> Iterator[None]:
    """Detection reads one line, chunks are small: quiet stretches start early and end anywhere."""
    saved = show.DETECT_LINES, quiet.CHUNK, quiet.UTF8_PIECE
    show.DETECT_LINES, quiet.CHUNK, quiet.UTF8_PIECE = 1, 64, 16
    try:
        yield
    finally:
        show.DETECT_LINES, quiet.CHUNK, quiet.UTF8_PIECE = saved


def _learnt(data: bytes, fmt: str, *, typed: bool) -> tuple:
    """What pass 1 of `show` learns of ``data``: through the quiet loop (a file), or a line at a time (a list)."""

    @contextmanager
    def reopen() -> Iterator:
        yield io.BytesIO(data) if typed else iter(data.splitlines(keepends=True))

    with _small_pieces():
        try:
            plan = show._scan(reopen, adapter_class(fmt), show.ShowOptions())
        except Exception as exc:  # noqa: BLE001 (compared: both ways must stop alike)
            return ("stopped", type(exc).__name__, str(exc))
    inserted = {
        line: [(record, pending.line, pending.call.id) for record, pending in pairs] for line, pairs in plan.inserted.items()
    }
    return (
        (plan.total, plan.turns, plan.calls, plan.results),
        inserted,
        [(record, pending.line) for record, pending in plan.tail],
        [f.to_dict() for f in plan.findings],
        plan.unparsed,
        sorted(plan.marks),
        sorted(plan.around),
    )


@pytest.mark.parametrize("fmt", sorted(_TURNS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_show_learns_through_the_quiet_loop_what_reading_every_line_whole_learns(fmt: str, data) -> None:
    session = data.draw(_sessions(fmt))
    assert _learnt(session, fmt, typed=True) == _learnt(session, fmt, typed=False)


def test_the_turns_of_a_quiet_stretch_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long clean session: taken by the quiet loop, unclassified, and its summary still says every turn."""
    classified = []
    classify = ChatAdapter.classify
    monkeypatch.setattr(ChatAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    lines = []
    for n in range(40):
        lines.append({"role": "user", "content": f"question {n}"})
        lines.append({"role": "assistant", "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "ls"}}]})
        lines.append({"role": "tool", "tool_call_id": f"c{n}", "content": "a result long enough " * 4})
        lines.append({"role": "assistant", "content": "done"})
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    learnt = _learnt(data, "chat", typed=True)
    assert learnt[0] == (160, 40, 40, 40)
    # Only the one line detection read.
    assert len(classified) == 1


def _codex(payload: dict, kind: str = "response_item") -> dict:
    return {"type": kind, "payload": payload}


_LONG = "an output long enough to be no marker " * 3
# A turn opened while a call waits, the call answered after it, in a quiet stretch.
_TURN_WHILE_A_CALL_WAITS = {
    "codex": [
        _codex({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
        _codex({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}),
        _codex({"type": "user_message", "message": "and now?"}, "event_msg"),
        _codex({"type": "function_call_output", "call_id": "c1", "output": _LONG}),
        _codex({"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"}),
        _codex({"type": "item_completed", "item": {"type": "UserMessage"}}, "event_msg"),
        _codex({"type": "function_call_output", "call_id": "c2", "output": _LONG}),
    ],
    "anthropic": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": _LONG}, {"type": "text", "text": "go"}],
        },
    ],
}


@pytest.mark.parametrize("fmt", sorted(_TURN_WHILE_A_CALL_WAITS))
def test_a_turn_opened_while_a_call_waits_is_counted_once(fmt: str) -> None:
    data = b"".join(orjson.dumps(line) + b"\n" for line in _TURN_WHILE_A_CALL_WAITS[fmt] * 3)
    learnt = _learnt(data, fmt, typed=True)
    assert learnt == _learnt(data, fmt, typed=False)
    assert learnt[0][1] == {"codex": 9, "anthropic": 6}[fmt]


def test_chunks_read_whole_while_typing_rests_are_counted_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """300 stray results make the quiet loop read chunks whole for a while: the summary still says what it says line by line."""
    lines: list[dict] = [{"role": "user", "content": "go"}]
    for n in range(300):
        lines.append({"role": "tool", "tool_call_id": f"ghost{n}", "content": "x"})
        if n % 10 == 0:
            lines.append({"role": "user", "content": f"question {n}"})
    for n in range(1000):
        lines.append({"role": "assistant", "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "ls"}}]})
        lines.append({"role": "tool", "tool_call_id": f"c{n}", "content": "a result long enough " * 4})
        if n % 7 == 0:
            lines.append({"role": "user", "content": f"more {n}"})
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    rested = []
    whole = quiet._Loop.whole
    monkeypatch.setattr(quiet._Loop, "whole", lambda self, *args: rested.append(self.resting) or whole(self, *args))

    @contextmanager
    def chunks_of_many_lines() -> Iterator[None]:
        saved = show.DETECT_LINES, quiet.CHUNK
        show.DETECT_LINES, quiet.CHUNK = 1, 4096
        try:
            yield
        finally:
            show.DETECT_LINES, quiet.CHUNK = saved

    monkeypatch.setattr(sys.modules[__name__], "_small_pieces", chunks_of_many_lines)
    learnt = _learnt(data, "chat", typed=True)
    assert rested  # the loop did rest
    assert learnt == _learnt(data, "chat", typed=False)
    assert learnt[0] == (len(lines), 1 + 30 + 143, 1000, 1300)
