"""Random Copilot CLI ``events.jsonl`` sessions, and the event builders the copilot-cli tests share.

A drawn session is one chain of events (each ``parentId`` is the event before
it): user messages, replies whose tool requests start, complete in any order,
never complete or are completed twice; a reply written over two events with
one ``messageId``; steering messages while tools run; sub-agents whose events
carry the ``parentToolCallId`` of the call that started them; aborts, resumes,
compactions, orphan completions and event types Copilot may add later.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FORMAT = "copilot-cli"

SESSION = "5b3c1f0e-7d2a-4c61-9a8e-2f4d6b1c9e07"


class Chain:
    """Builds events as Copilot writes them: ids e01, e02, ..., each pointing at the one before."""

    def __init__(self, step: int = 1) -> None:
        self.events: list[dict] = []
        self.step = step

    def event(self, kind: str, data: dict, agent: str | None = None) -> dict:
        n = len(self.events) + 1
        event: dict[str, Any] = {"type": kind}
        if agent is not None:
            event["agentId"] = agent
        event["data"] = data
        event["id"] = f"e{n:02d}"
        seconds = n * self.step
        event["timestamp"] = f"2026-03-26T17:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"
        event["parentId"] = self.events[-1]["id"] if self.events else None
        self.events.append(event)
        return event

    def start(self) -> dict:
        return self.event(
            "session.start",
            {
                "sessionId": SESSION,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.11",
                "startTime": "2026-03-26T17:00:00.000Z",
                "context": {"cwd": "/tmp/project"},
                "alreadyInUse": False,
            },
        )

    def user(self, text: str, **extra: Any) -> dict:
        return self.event("user.message", {"content": text, "transformedContent": text, "attachments": [], **extra})

    def reply(self, message_id: str, calls: list[str], parent_call: str | None = None, **extra: Any) -> dict:
        data: dict[str, Any] = {}
        if parent_call is not None:
            data["parentToolCallId"] = parent_call
        data.update({"messageId": message_id, "content": "", "toolRequests": [request(c) for c in calls], **extra})
        return self.event("assistant.message", data)

    def started(self, call_id: str, parent_call: str | None = None) -> dict:
        data = {"toolCallId": call_id, "toolName": "bash", "arguments": {"command": "ls"}}
        if parent_call is not None:
            data["parentToolCallId"] = parent_call
        return self.event("tool.execution_start", data)

    def complete(self, call_id: str, text: str, success: bool = True, parent_call: str | None = None) -> dict:
        data: dict[str, Any] = {"toolCallId": call_id, "success": success, "result": {"content": text}}
        if parent_call is not None:
            data["parentToolCallId"] = parent_call
        return self.event("tool.execution_complete", data)


def request(call_id: str, name: str = "bash") -> dict:
    return {"toolCallId": call_id, "name": name, "arguments": {"command": "ls"}, "type": "function"}


_NOISE = st.sampled_from(
    [
        ("assistant.turn_start", {"turnId": "0", "interactionId": "int-1"}),
        ("assistant.turn_end", {"turnId": "0"}),
        ("assistant.reasoning", {"reasoningId": "r-1", "content": "thinking"}),
        ("hook.start", {"hookInvocationId": "h-1", "hookType": "preToolUse", "input": {"toolName": "bash"}}),
        ("hook.end", {"hookInvocationId": "h-1", "hookType": "preToolUse", "success": True}),
        ("session.info", {"infoType": "notification", "message": "hello"}),
        ("session.usage_checkpoint", {"totalNanoAiu": 1}),
        ("permission.requested", {"requestId": "p-1", "permissionRequest": {"kind": "shell"}}),
        ("session.future_event", {"anything": True}),
    ]
)


@st.composite
def _turn(draw, chain: Chain, turn: int) -> None:
    steering = draw(st.integers(0, 5)) == 0
    chain.user(draw(st.text(max_size=8)) or "go", **({"delivery": "steering"} if steering else {}))
    for step in range(draw(st.integers(0, 3))):
        calls = [f"call_{turn}_{step}_{i}" for i in range(draw(st.integers(0, 3)))]
        message_id = f"msg-{turn}-{step}"
        if calls and draw(st.integers(0, 4)) == 0:
            # One reply over two events: the second carries the rest of the calls.
            chain.reply(message_id, calls[:1])
            chain.reply(message_id, calls[1:])
        else:
            chain.reply(message_id, calls)
        for call_id in calls:
            if draw(st.booleans()):
                chain.started(call_id)
        for kind, data in draw(st.lists(_NOISE, max_size=2)):
            chain.event(kind, data)
        if draw(st.integers(0, 5)) == 0:
            chain.user("and then?", delivery="steering")
        if calls and draw(st.integers(0, 5)) == 0:
            _subagent(draw, chain, calls[0])
        answered = draw(st.permutations(calls))
        for call_id in answered[: draw(st.integers(0, len(answered)))]:
            chain.complete(call_id, draw(st.sampled_from(["ok", "", "not run: the turn was interrupted"])), draw(st.booleans()))
        if calls and draw(st.integers(0, 6)) == 0:
            chain.complete(calls[0], "again")
        if draw(st.integers(0, 6)) == 0:
            chain.complete("call_ghost", "?")
        if draw(st.integers(0, 6)) == 0:
            chain.event("abort", {"reason": "user initiated"})
    if draw(st.integers(0, 6)) == 0:
        chain.event("session.resume", {"resumeTime": "2026-03-26T18:00:00.000Z", "eventCount": len(chain.events)})
    if draw(st.integers(0, 8)) == 0:
        chain.event("session.compaction_complete", {"success": True, "summaryContent": "summary"})


def _subagent(draw, chain: Chain, parent_call: str) -> None:
    chain.event(
        "subagent.started",
        {"toolCallId": parent_call, "agentName": "explore", "agentDisplayName": "Explore", "agentDescription": "x"},
    )
    calls = [f"{parent_call}_sub_{i}" for i in range(draw(st.integers(0, 2)))]
    chain.reply(f"sub-{parent_call}", calls, parent_call=parent_call)
    for call_id in calls:
        chain.started(call_id, parent_call=parent_call)
    for call_id in calls[: draw(st.integers(0, len(calls)))]:
        chain.complete(call_id, "found", parent_call=parent_call)
    if draw(st.booleans()):
        chain.event("subagent.completed", {"toolCallId": parent_call, "agentName": "explore", "agentDisplayName": "Explore"})


@st.composite
def histories(draw) -> list:
    chain = Chain(step=draw(st.sampled_from([0, 1, 7])))
    if draw(st.integers(0, 5)):
        chain.start()
    chain.event("session.model_change", {"newModel": "gpt-5-mini"})
    for turn in range(draw(st.integers(0, 4))):
        draw(_turn(chain, turn))
    return chain.events
