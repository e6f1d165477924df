"""Random Factory Droid files: session stores and stream-json logs, and the line builders the tests share.

A drawn session store is a ``session_start`` header and a chain of entries,
each hanging off the message written before it. Replies make zero to three
``tool_use`` calls, sometimes over two assistant messages of one reply; their
``tool_result`` blocks come in any order over one or two user messages, some
never come, some answer nothing, and a result message may carry a system
reminder after its results (which ends the turn). ``todo_state`` lines stand
between them and a ``compaction_state`` ends a turn now and then.

A drawn stream-json log is one or more ``droid exec`` runs: ``init``, the
prompt, calls and results (some missing), the assistant's text, and usually
the ``completion``. Its calls are reported, never answered.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FORMAT = "factory-droid"

SESSION = "3f1c9a52-7d4e-4b8a-9c21-5e6f7a8b9c0d"
REMINDER = "<system-reminder>\nThe working directory is /home/dev/app.\n</system-reminder>"


def stamp(n: int) -> str:
    return f"2025-12-26T23:{50 + n // 60 % 10:02d}:{n % 60:02d}.{n * 13 % 1000:03d}Z"


def session_start(session: str = SESSION) -> dict:
    return {
        "type": "session_start",
        "id": session,
        "title": "Fix the login",
        "sessionTitle": "Fix the login",
        "owner": "dev",
        "version": 2,
        "cwd": "/home/dev/app",
    }


def message(entry_id: str, parent: str | None, role: str, content: list, n: int = 0) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": stamp(n),
        "message": {"role": role, "content": content},
    }


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str = "Execute") -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}


def tool_result(call_id: str, content: str) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def event(kind: str, n: int, **fields: Any) -> dict:
    return {"type": kind, "session_id": "sid-run", "timestamp": 1767812640000 + n * 1000, **fields}


_TEXT = st.text(max_size=12)


class _Store:
    """Hands out ids and keeps the last message, so every entry hangs off the one before."""

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[dict] = [session_start()]
        self.last: str | None = SESSION

    def add(self, role: str, content: list) -> None:
        self.count += 1
        entry_id = f"m{self.count}"
        self.lines.append(message(entry_id, self.last, role, content, self.count))
        self.last = entry_id

    def other(self, kind: str, **fields: Any) -> None:
        self.count += 1
        self.lines.append({"type": kind, "id": f"x{self.count}", "timestamp": stamp(self.count), **fields})


@st.composite
def _store_reply(draw, s: _Store, tag: str) -> None:
    calls = [f"toolu_{tag}_{i}" for i in range(draw(st.integers(0, 3)))]
    blocks = [text(draw(_TEXT))] + [tool_use(c) for c in calls]
    split = draw(st.integers(0, len(blocks)))
    s.add("assistant", blocks[:split] or blocks)
    if 0 < split < len(blocks):
        s.add("assistant", blocks[split:])  # the same reply, continued
    if draw(st.integers(0, 3)) == 0:
        s.other("todo_state", todos="1. [in_progress] work", messageIndex=s.count)
    answered = draw(st.permutations(calls))
    answered = answered[: draw(st.integers(0, len(answered)))]
    cut = draw(st.integers(0, len(answered)))
    for group in (answered[:cut], answered[cut:]):
        if not group:
            continue
        content: list = [tool_result(c, draw(st.sampled_from(["ok", "", "aborted"]))) for c in group]
        if draw(st.integers(0, 4)) == 0:
            content.append(text(REMINDER))
        s.add("user", content)
    if draw(st.integers(0, 6)) == 0:
        s.add("user", [tool_result(draw(st.sampled_from(["toolu_ghost", *calls])), "?")])


@st.composite
def _store(draw) -> list:
    s = _Store()
    for turn in range(draw(st.integers(0, 4))):
        prompt = [text(draw(_TEXT))]
        if draw(st.booleans()):
            prompt.insert(0, text(REMINDER))
        s.add("user", prompt)
        for step in range(draw(st.integers(1, 3))):
            draw(_store_reply(s, f"{turn}{step}"))
        if draw(st.integers(0, 6)) == 0:
            s.other(
                "compaction_state",
                summaryText="earlier work",
                summaryTokens=3,
                anchorMessage={"id": s.last, "index": s.count},
                removedCount=1,
            )
    return s.lines


@st.composite
def _stream(draw) -> list:
    lines: list[dict] = []
    n = 0
    for run in range(draw(st.integers(1, 3))):
        lines.append(event("system", n, subtype="init", cwd="/tmp/run", tools=["Execute"], model="droid-model"))
        lines.append(event("message", n, role="user", text=draw(_TEXT) or "go", id=f"u{run}"))
        calls = [f"call_{run}_{i}" for i in range(draw(st.integers(0, 3)))]
        for call_id in calls:
            n += 1
            lines.append(
                event(
                    "tool_call",
                    n,
                    id=call_id,
                    messageId=f"u{run}",
                    toolId="Execute",
                    toolName="Execute",
                    parameters={"command": "ls"},
                )
            )
        answered = draw(st.permutations(calls))
        for call_id in answered[: draw(st.integers(0, len(answered)))]:
            n += 1
            lines.append(event("tool_result", n, id=call_id, messageId=f"u{run}", toolId="Execute", isError=False, value="ok"))
        lines.append(event("message", n, role="assistant", text="done", id=f"a{run}"))
        if draw(st.integers(0, 3)):
            lines.append(event("completion", n, finalText="done", numTurns=1))
    return lines


def histories() -> st.SearchStrategy[list]:
    return st.one_of(_store(), _stream())
