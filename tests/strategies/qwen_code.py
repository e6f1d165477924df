"""Random Qwen Code sessions, and the line builders the qwen-code tests share.

A drawn session is written as Qwen Code's recorder writes one: every record
hangs off the record before it (its active tail). A model response is one
assistant record (now and then a second record with the same uuid carries its
usage); its calls are answered by one tool_result record each, in any order,
some never; telemetry, custom-title anchors (which the next record skips),
background notifications, mid-turn messages and Qwen Code's own synthesized
responses stand between them; now and then a call has no id, a result answers
nothing, the history is compressed or (with ``rewinds``) rewound to the tail
before an earlier prompt. With ``sidechains``, a sub-agent's records
(``isSidechain``, ``agentId``) run in a tree of their own between the main
thread's.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FORMAT = "qwen-code"

SESSION = "3f6b2c1a-9d4e-4f70-8a21-6c5d4e3b2a10"
CWD = "/home/dev/shop"
VERSION = "0.21.13"
# What Qwen Code puts in a response it synthesizes for a lost result (llm-chat.ts).
ORPHAN_REPAIR = (
    "Tool execution result was not recorded \u2014 likely interrupted by network "
    "failure, abort, or process exit. Treat as failure and retry if needed."
)


def stamp(n: int) -> str:
    return f"2026-03-14T09:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"


def _base(uuid: str, parent: str | None, kind: str, n: int, agent: str | None) -> dict[str, Any]:
    line: dict[str, Any] = {"uuid": uuid, "parentUuid": parent, "sessionId": SESSION, "timestamp": stamp(n), "type": kind}
    line.update({"cwd": CWD, "version": VERSION, "gitBranch": "main"})
    if agent is not None:
        line.update({"isSidechain": True, "agentId": agent, "agentName": "Explore"})
    return line


def prompt(uuid: str, parent: str | None, text: str, agent: str | None = None, n: int = 0) -> dict:
    line = _base(uuid, parent, "user", n, agent)
    line["message"] = {"role": "user", "parts": [{"text": text}]}
    line["systemPayload"] = {"displayText": text, "hookContext": ""}
    return line


def user_subtype(
    uuid: str, parent: str | None, subtype: str, text: str, agent: str | None = None, n: int = 0, **extra: Any
) -> dict:
    line = _base(uuid, parent, "user", n, agent)
    line["subtype"] = subtype
    line.update(extra)
    line["message"] = {"role": "user", "parts": [{"text": text}]}
    line["systemPayload"] = {"displayText": text}
    return line


def function_call(call_id: str | None, name: str = "run_shell_command") -> dict:
    call: dict[str, Any] = {"name": name, "args": {"command": "ls"}}
    if call_id is not None:
        call = {"id": call_id, **call}
    return {"functionCall": call}


def assistant(uuid: str, parent: str | None, parts: list, agent: str | None = None, n: int = 0) -> dict:
    line = _base(uuid, parent, "assistant", n, agent)
    line["model"] = "qwen3-coder-plus"
    line["message"] = {"role": "model", "parts": parts}
    line["usageMetadata"] = {"promptTokenCount": 1200, "candidatesTokenCount": 40, "totalTokenCount": 1240}
    return line


def usage(uuid: str, parent: str | None, agent: str | None = None, n: int = 0) -> dict:
    """A second record of a response (its uuid), with its usage only."""
    line = _base(uuid, parent, "assistant", n, agent)
    line["model"] = "qwen3-coder-plus"
    line["usageMetadata"] = {"promptTokenCount": 1200, "candidatesTokenCount": 41, "totalTokenCount": 1241}
    return line


def result(
    uuid: str,
    parent: str | None,
    call_id: str,
    text: str,
    error: bool = False,
    name: str = "run_shell_command",
    agent: str | None = None,
    n: int = 0,
) -> dict:
    line = _base(uuid, parent, "tool_result", n, agent)
    response = {"error": text} if error else {"output": text}
    line["message"] = {"role": "user", "parts": [{"functionResponse": {"id": call_id, "name": name, "response": response}}]}
    line["toolCallResult"] = {"callId": call_id, "status": "error" if error else "success", "resultDisplay": text}
    return line


def system(
    uuid: str, parent: str | None, subtype: str, payload: dict | None = None, agent: str | None = None, n: int = 0
) -> dict:
    line = _base(uuid, parent, "system", n, agent)
    line["subtype"] = subtype
    if payload is not None:
        line["systemPayload"] = payload
    return line


_TEXT = st.text(max_size=12)


class _Writer:
    """Hands out uuids and keeps each thread's active tail, as Qwen Code's recorder does."""

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[dict] = []
        self.tails: dict[str | None, str | None] = {}
        # Tails the main thread had right before each prompt (a rewind goes back to one).
        self.turn_parents: list[str | None] = []

    def uuid(self) -> str:
        self.count += 1
        return f"6a1f{self.count:04d}-2b3c-4d5e-8f60-71829304a5b6"

    def add(self, make, agent: str | None, *args: Any, tail: bool = True, uuid: str | None = None, **kwargs: Any) -> str:
        uuid = uuid or self.uuid()
        parent = kwargs.pop("parent", self.tails.get(agent))
        self.lines.append(make(uuid, parent, *args, agent=agent, n=self.count, **kwargs))
        if tail:
            self.tails[agent] = uuid
        return uuid


@st.composite
def _between(draw, w: _Writer, agent: str | None) -> None:
    """Records that may stand between a call and its results: none of them closes a call."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        w.add(system, agent, "ui_telemetry", {"uiEvent": {"event.name": "qwen-code.tool_call"}})
    elif kind == 1:
        # A title anchor is no active tail: the next record skips it.
        w.add(system, agent, "custom_title", {"customTitle": "work", "titleSource": "auto"}, tail=False)
    elif kind == 2:
        w.add(user_subtype, agent, "notification", "<task-notification>\nshell done\n</task-notification>", provenance="system")
    elif kind == 3:
        w.add(user_subtype, agent, "mid_turn_user_message", "also check b")


@st.composite
def _response(draw, w: _Writer, agent: str | None, tag: str) -> None:
    """One model response, its results in any order (some missing, some strays), records between."""
    parts: list[dict] = []
    if draw(st.booleans()):
        parts.append({"text": draw(_TEXT), "thought": True})
    calls = [f"call_{tag}_{i}" for i in range(draw(st.integers(0, 3)))]
    parts += [function_call(c) for c in calls]
    if draw(st.integers(0, 6)) == 0:
        parts.append(function_call(None))  # no id: Qwen Code pairs it with nothing
    if draw(st.booleans()) or not parts:
        parts.append({"text": draw(_TEXT)})
    reply = w.add(assistant, agent, parts)
    if draw(st.integers(0, 4)) == 0:
        w.add(usage, agent, uuid=reply, parent=w.lines[-1]["parentUuid"])
    answered = draw(st.permutations(calls))
    keep = draw(st.integers(0, len(answered)))
    for call_id in answered[:keep]:
        draw(_between(w, agent))
        lost = draw(st.integers(0, 6)) == 0
        w.add(result, agent, call_id, ORPHAN_REPAIR if lost else draw(_TEXT), error=lost or draw(st.booleans()))
    if draw(st.integers(0, 5)) == 0:
        stray = draw(st.sampled_from(["call_ghost", *calls]))
        w.add(result, agent, stray, "?")
    draw(_between(w, agent))


@st.composite
def _turn(draw, w: _Writer, turn: int, sidechains: bool, rewinds: bool) -> None:
    if rewinds and w.turn_parents and draw(st.integers(0, 6)) == 0:
        # A rewind: back to the tail before an earlier prompt.
        w.add(system, None, "rewind", {"truncatedCount": 2}, parent=draw(st.sampled_from(w.turn_parents)))
    w.turn_parents.append(w.tails.get(None))
    w.add(prompt, None, draw(_TEXT))
    for step in range(draw(st.integers(1, 3))):
        draw(_response(w, None, f"{turn}{step}"))
        if sidechains and draw(st.integers(0, 4)) == 0:
            # A sub-agent's records, in a tree of their own.
            agent = f"explore-{turn}{step}"
            w.add(prompt, agent, "look around", parent=None)
            for sub in range(draw(st.integers(1, 2))):
                draw(_response(w, agent, f"{turn}{step}s{sub}"))
    if draw(st.integers(0, 6)) == 0:
        w.add(system, None, "chat_compression", {"info": {"compressionStatus": 1}, "compressedHistory": []})


@st.composite
def histories(draw, sidechains: bool = True, rewinds: bool = True) -> list:
    w = _Writer()
    w.add(system, None, "session_source", {"sourceType": "cli"})
    if draw(st.booleans()):
        w.add(user_subtype, None, "notification", "<task-notification>\nearlier\n</task-notification>", provenance="system")
    for turn in range(draw(st.integers(0, 3))):
        draw(_turn(w, turn, sidechains, rewinds))
    return w.lines
