"""Random Kimi Code ``wire.jsonl`` files, and the record builders the kimi tests share.

A drawn wire has turns of steps: each step opens with ``step.begin``, streams
content parts and tool calls whose results come in any order, never come,
come after the step ended or answer nothing, and ends with ``step.end`` unless
the turn was cancelled. Steers and notices are appended while tools run;
usage, requests, approvals, compactions and record kinds kimi-code may add
later stand between them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FORMAT = "kimi"

START = 1785613805000


class Wire:
    """Builds records as kimi-code writes them: flat, with an epoch-ms ``time``."""

    def __init__(self, step_ms: int = 5) -> None:
        self.records: list[dict] = [{"type": "metadata", "protocol_version": "1.4", "created_at": START}]
        self.step_ms = step_ms
        self.turn = -1
        self.step = 0
        self.step_uuid = ""

    def add(self, record: dict) -> dict:
        record["time"] = START + len(self.records) * self.step_ms
        self.records.append(record)
        return record

    def prompt(self, text: str, kind: str = "user") -> None:
        self.turn += 1
        self.step = 0
        self.add({"type": "turn.prompt", "input": [{"type": "text", "text": text}], "origin": {"kind": kind}})
        self.message(text, kind)

    def message(self, text: str, kind: str = "user") -> dict:
        message = {"role": "user", "content": [{"type": "text", "text": text}], "toolCalls": [], "origin": {"kind": kind}}
        return self.add({"type": "context.append_message", "message": message})

    def loop(self, event: dict) -> dict:
        return self.add({"type": "context.append_loop_event", "event": event})

    def begin(self) -> dict:
        self.step += 1
        self.step_uuid = f"step-{self.turn}-{self.step}"
        return self.loop({"type": "step.begin", "uuid": self.step_uuid, "turnId": str(self.turn), "step": self.step})

    def text(self, text: str) -> dict:
        part = {"type": "text", "text": text}
        return self.loop(
            {"type": "content.part", "turnId": str(self.turn), "step": self.step, "stepUuid": self.step_uuid, "part": part}
        )

    def call(self, call_id: str, name: str = "Bash") -> dict:
        return self.loop(
            {
                "type": "tool.call",
                "uuid": call_id,
                "turnId": str(self.turn),
                "step": self.step,
                "stepUuid": self.step_uuid,
                "toolCallId": call_id,
                "name": name,
                "args": {"command": "ls"},
                "description": "Running: ls",
            }
        )

    def result(self, call_id: str, output: Any, error: bool | None = None) -> dict:
        result: dict[str, Any] = {"output": output}
        if error is not None:
            result["isError"] = error
        return self.loop({"type": "tool.result", "parentUuid": call_id, "toolCallId": call_id, "result": result})

    def end(self, reason: str = "tool_use") -> dict:
        usage = {"inputOther": 200, "output": 40, "inputCacheRead": 24064, "inputCacheCreation": 0}
        return self.loop(
            {
                "type": "step.end",
                "uuid": self.step_uuid,
                "turnId": str(self.turn),
                "step": self.step,
                "usage": usage,
                "finishReason": reason,
            }
        )


_NOISE = st.sampled_from(
    [
        {"type": "usage.record", "model": "moonshot-ai/kimi-k2.7-code", "usage": {"output": 4}, "usageScope": "turn"},
        {"type": "llm.request", "kind": "loop", "provider": "kimi", "model": "kimi-k2.7-code", "messageCount": 3},
        {
            "type": "permission.record_approval_result",
            "turnId": 0,
            "toolCallId": "Bash_0",
            "toolName": "Bash",
            "result": {"decision": "approved"},
        },
        {"type": "tools.set_active_tools", "names": ["Bash"]},
        {"type": "future.record", "anything": True},
    ]
)


@st.composite
def _turn(draw, wire: Wire, turn: int) -> None:
    wire.prompt(draw(st.text(max_size=8)) or "go", draw(st.sampled_from(["user", "user", "system_trigger"])))
    for step in range(draw(st.integers(0, 3))):
        wire.begin()
        if draw(st.booleans()):
            wire.text("on it")
        calls = [f"Tool_{turn}_{step}_{i}" for i in range(draw(st.integers(0, 3)))]
        for call_id in calls:
            wire.call(call_id)
        for record in draw(st.lists(_NOISE, max_size=2)):
            wire.add(dict(record))
        if draw(st.integers(0, 5)) == 0:
            wire.message("also lint")  # a steer while the tools run
        answered = draw(st.permutations(calls))
        for call_id in answered[: draw(st.integers(0, len(answered)))]:
            output = draw(st.sampled_from(["ok", "", [{"type": "text", "text": "parts"}], "not run: the turn was interrupted"]))
            wire.result(call_id, output, draw(st.sampled_from([None, False, True])))
        if draw(st.integers(0, 6)) == 0:
            wire.result("Tool_ghost", "?")
        if draw(st.integers(0, 5)) == 0:
            wire.add({"type": "turn.cancel"})
            return  # the step is left open
        wire.end()
        if calls and draw(st.integers(0, 6)) == 0:
            wire.result(calls[0], "late")
    if draw(st.integers(0, 8)) == 0:
        wire.add({"type": "context.apply_compaction", "summary": "summary", "compactedCount": 3})


@st.composite
def histories(draw) -> list:
    wire = Wire(step_ms=draw(st.sampled_from([0, 1, 5])))
    wire.add({"type": "config.update", "modelAlias": "moonshot-ai/kimi-k2.7-code", "thinkingEffort": "on"})
    for turn in range(draw(st.integers(0, 4))):
        draw(_turn(wire, turn))
    return wire.records
