"""Random Claude Code sessions, and the line builders the claude-code tests share.

A drawn session has a main thread and, now and then, a sub-agent thread whose
lines are interleaved with it. Replies are split over several assistant lines
sharing ``message.id``; results come in any order, some never come, some
answer nothing; hook progress lines, system lines and metadata lines stand
between them; a compaction happens now and then. Every line with a uuid hangs
off the thread's previous line, as Claude Code writes them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FORMAT = "claude-code"

SESSION = "5f0c2d1e-7a3b-4c9d-8e1f-2a3b4c5d6e7f"
_BASE = {"userType": "external", "cwd": "/home/dev/project", "sessionId": SESSION, "version": "2.1.17", "gitBranch": "main"}


def _head(parent: str | None, agent: str | None) -> dict[str, Any]:
    line: dict[str, Any] = {"parentUuid": parent, "isSidechain": agent is not None, **_BASE}
    if agent is not None:
        line["agentId"] = agent
    return line


def stamp(n: int) -> str:
    return f"2026-01-23T17:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def prompt(uuid: str, parent: str | None, text: Any, agent: str | None = None, n: int = 0) -> dict:
    return {
        **_head(parent, agent),
        "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": uuid,
        "timestamp": stamp(n),
    }


def assistant(uuid: str, parent: str | None, reply: str, block: dict, agent: str | None = None, n: int = 0) -> dict:
    message = {
        "model": "claude-opus-4-5-20251101",
        "id": reply,
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 2, "output_tokens": 3},
    }
    return {**_head(parent, agent), "message": message, "type": "assistant", "uuid": uuid, "timestamp": stamp(n)}


def tool_use(call_id: str, name: str = "Bash") -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}


def result(
    uuid: str, parent: str | None, call_id: str, text: str, source: str | None = None, agent: str | None = None, n: int = 0
) -> dict:
    block = {"tool_use_id": call_id, "type": "tool_result", "content": text, "is_error": False}
    line = {
        **_head(parent, agent),
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "uuid": uuid,
        "timestamp": stamp(n),
        "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False},
    }
    if source is not None:
        line["sourceToolAssistantUUID"] = source
    return line


def progress(uuid: str, parent: str | None, call_id: str, agent: str | None = None, n: int = 0) -> dict:
    data = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash", "command": "true"}
    return {
        **_head(parent, agent),
        "type": "progress",
        "data": data,
        "parentToolUseID": call_id,
        "toolUseID": call_id,
        "timestamp": stamp(n),
        "uuid": uuid,
    }


def system(uuid: str, parent: str | None, subtype: str, agent: str | None = None, n: int = 0, **extra: Any) -> dict:
    return {
        **_head(parent, agent),
        "type": "system",
        "subtype": subtype,
        "content": "",
        "isMeta": False,
        "timestamp": stamp(n),
        "uuid": uuid,
        "level": "info",
        **extra,
    }


_TEXT = st.text(max_size=12)


class _Writer:
    """Hands out uuids and keeps each thread's last line, so every line hangs off the one before."""

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[dict] = []
        self.tips: dict[str | None, str | None] = {}

    def uuid(self) -> str:
        self.count += 1
        return f"00000000-0000-4000-8000-{self.count:012d}"

    def add(self, make, agent: str | None, *args: Any, **kwargs: Any) -> str:
        uuid = self.uuid()
        parent = kwargs.pop("parent", self.tips.get(agent))
        self.lines.append(make(uuid, parent, *args, agent=agent, n=self.count, **kwargs))
        self.tips[agent] = uuid
        return uuid


@st.composite
def _reply(draw, w: _Writer, agent: str | None, tag: str) -> None:
    """One reply over several lines, its results (some missing, some strays), hooks between."""
    reply = f"msg_{tag}"
    calls: list[tuple[str, str]] = []
    if draw(st.booleans()):
        w.add(assistant, agent, reply, {"type": "text", "text": draw(_TEXT)})
    for i in range(draw(st.integers(0, 3))):
        call_id = f"toolu_{tag}_{i}"
        source = w.add(assistant, agent, reply, tool_use(call_id))
        if draw(st.booleans()):
            w.add(progress, agent, call_id)
        if draw(st.integers(0, 2)) == 0:
            # Newer versions: the result comes before the reply's next call,
            # hung off the line that made the call.
            w.add(result, agent, call_id, draw(_TEXT), source=source, parent=source)
        else:
            calls.append((call_id, source))
    answered = draw(st.permutations(calls))
    keep = draw(st.integers(0, len(answered)))
    for call_id, source in answered[:keep]:
        w.add(result, agent, call_id, draw(_TEXT), source=source, parent=draw(st.sampled_from([source, w.tips[agent]])))
        if draw(st.integers(0, 3)) == 0:
            w.add(system, agent, "informational")
    if draw(st.integers(0, 5)) == 0:
        stray = draw(st.sampled_from(["toolu_ghost", *[c for c, _ in calls]] if calls else ["toolu_ghost"]))
        w.add(result, agent, stray, "?", source=None)


@st.composite
def _turn(draw, w: _Writer, turn: int) -> None:
    earlier = [line["uuid"] for line in w.lines if "uuid" in line and not line.get("isSidechain")]
    if earlier and draw(st.integers(0, 5)) == 0:
        # A rewind: the prompt branches off an earlier line.
        w.add(prompt, None, draw(_TEXT), parent=draw(st.sampled_from(earlier)))
    else:
        w.add(prompt, None, draw(_TEXT))
    for step in range(draw(st.integers(1, 3))):
        draw(_reply(w, None, f"{turn}{step}"))
        if draw(st.integers(0, 4)) == 0:
            # A sub-agent runs between the main thread's lines.
            agent = f"agent{turn}{step}"
            w.add(prompt, agent, "look around", parent=None)
            for sub in range(draw(st.integers(1, 2))):
                draw(_reply(w, agent, f"{turn}{step}s{sub}"))
    if draw(st.integers(0, 6)) == 0:
        w.add(system, None, "compact_boundary", parent=None, logicalParentUuid=w.tips.get(None))


@st.composite
def histories(draw) -> list:
    w = _Writer()
    if draw(st.booleans()):
        w.lines.append({"type": "summary", "summary": "earlier work", "leafUuid": "00000000-0000-4000-8000-999999999999"})
    w.lines.append({"type": "queue-operation", "operation": "dequeue", "timestamp": stamp(0), "sessionId": SESSION})
    for turn in range(draw(st.integers(0, 3))):
        draw(_turn(w, turn))
    return w.lines
