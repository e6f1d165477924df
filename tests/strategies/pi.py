"""Random pi (and OpenClaw) sessions, and the line builders the pi tests share.

A drawn session is a header and then entries, each hanging off the one written
before it (pi appends every entry below the current leaf), except where the
user went back in the tree: a new prompt or a ``branch_summary`` then hangs off
an earlier entry. Replies make zero to three calls; their results come in any
order, some never come, some answer nothing; settings, labels, extension
state and OpenClaw's transcript-only messages stand between them; replies stop
``aborted`` or with an ``error`` now and then, OpenClaw splits one now and then
into fragments sharing a ``turnId``, and a compaction or an extension's
message ends a turn now and then. One session in eight is a version 1 file: no
``version``, no ``id``/``parentId``, and no going back.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

FORMAT = "pi"

SESSION = "019e1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b"
_USAGE = {"input": 12, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 19, "cost": {"total": 0}}


def stamp(n: int) -> str:
    return f"2026-05-12T09:{n // 60 % 60:02d}:{n % 60:02d}.{n * 7 % 1000:03d}Z"


def header(session: str = SESSION, version: int | None = 3) -> dict:
    line: dict[str, Any] = {"type": "session"}
    if version is not None:
        line["version"] = version
    line.update({"id": session, "timestamp": stamp(0), "cwd": "/home/dev/project"})
    return line


def entry(kind: str, entry_id: str | None, parent: str | None, n: int, **fields: Any) -> dict:
    line: dict[str, Any] = {"type": kind}
    if entry_id is not None:
        line["id"] = entry_id
        line["parentId"] = parent
    line["timestamp"] = stamp(n)
    line.update(fields)
    return line


def user(entry_id: str | None, parent: str | None, text: str, n: int = 0) -> dict:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1778576400000 + n}
    return entry("message", entry_id, parent, n, message=message)


def tool_call(call_id: str, name: str = "bash") -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": {"command": "ls"}}


def assistant(entry_id: str | None, parent: str | None, parts: list, n: int = 0, stop: str = "toolUse", **extra: Any) -> dict:
    message = {
        "role": "assistant",
        "content": parts,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": _USAGE,
        "stopReason": stop,
        "timestamp": 1778576400000 + n,
        **extra,
    }
    return entry("message", entry_id, parent, n, message=message)


def tool_result(entry_id: str | None, parent: str | None, call_id: str, text: str, n: int = 0, error: bool = False) -> dict:
    message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": 1778576400000 + n,
    }
    return entry("message", entry_id, parent, n, message=message)


_TEXT = st.text(max_size=12)
_RESULT_TEXT = st.sampled_from(
    [
        "ok",
        "",
        "Operation aborted",
        "aborted",
        "[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair.",
    ]
)


class _Writer:
    """Hands out ids and keeps the leaf, so every entry hangs off the one before (as pi appends)."""

    def __init__(self, linear: bool) -> None:
        self.linear = linear
        self.count = 0
        self.lines: list[dict] = [header(version=None if linear else 3)]
        self.leaf: str | None = None
        self.prompts: list[str | None] = []  # the parent of each prompt (where "edit this message" branches)

    def add(self, make, *args: Any, parent: Any = "leaf", **kwargs: Any) -> str | None:
        self.count += 1
        entry_id = None if self.linear else f"{self.count:08x}"
        parent = self.leaf if parent == "leaf" else parent
        self.lines.append(make(entry_id, parent, *args, n=self.count, **kwargs))
        self.leaf = entry_id
        return entry_id


def _noise(w: _Writer, draw) -> None:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        w.add(lambda i, p, n: entry("thinking_level_change", i, p, n, thinkingLevel="high"))
    elif kind == 1:
        w.add(lambda i, p, n: entry("model_change", i, p, n, provider="openai", modelId="gpt-5"))
    elif kind == 2:
        w.add(lambda i, p, n: entry("label", i, p, n, targetId=p, label="here"))
    elif kind == 3:
        w.add(lambda i, p, n: entry("custom", i, p, n, customType="ext", data={"k": 1}))
    elif kind == 4:
        w.add(lambda i, p, n: entry("session_info", i, p, n, name="work"))
    elif kind == 5:
        bash = {
            "role": "bashExecution",
            "command": "ls",
            "output": "",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
        }
        w.add(lambda i, p, n: entry("message", i, p, n, message={**bash, "timestamp": n}))
    else:
        w.add(assistant, [{"type": "text", "text": "mirrored"}], stop="stop", provider="openclaw", model="delivery-mirror")


@st.composite
def _reply(draw, w: _Writer, tag: str) -> None:
    stop = draw(st.sampled_from(["toolUse", "toolUse", "toolUse", "stop", "aborted", "error"]))
    calls = [f"call_{tag}_{i}" for i in range(draw(st.integers(0, 3)))]
    parts: list = [{"type": "text", "text": draw(_TEXT)}] + [tool_call(c) for c in calls]
    fragments = calls and stop == "toolUse" and draw(st.integers(0, 4)) == 0
    if fragments:
        # OpenClaw: the response's calls committed one fragment at a time.
        for i, call_id in enumerate(calls):
            w.add(assistant, [tool_call(call_id)], turnId=f"turn-{tag}", **({"responseId": f"resp-{tag}"} if i else {}))
    else:
        w.add(assistant, parts, stop=stop)
    if draw(st.booleans()):
        _noise(w, draw)
    answered = draw(st.permutations(calls))
    for call_id in answered[: draw(st.integers(0, len(answered)))]:
        w.add(tool_result, call_id, draw(_RESULT_TEXT), error=draw(st.booleans()))
        if draw(st.integers(0, 3)) == 0:
            _noise(w, draw)
    if draw(st.integers(0, 6)) == 0:
        stray = draw(st.sampled_from(["call_ghost", *calls]))
        w.add(tool_result, stray, "?")


@st.composite
def _turn(draw, w: _Writer, turn: int) -> None:
    if not w.linear and w.prompts and draw(st.integers(0, 5)) == 0:
        # "Edit an earlier message": the new prompt branches off that prompt's parent.
        parent = draw(st.sampled_from(w.prompts))
        if draw(st.booleans()):
            w.add(lambda i, p, n: entry("branch_summary", i, p, n, fromId="00000001", summary="left"), parent=parent)
            parent = "leaf"
        w.prompts.append(w.leaf if parent == "leaf" else parent)
        w.add(user, draw(_TEXT), parent=parent)
    else:
        w.prompts.append(w.leaf)
        w.add(user, draw(_TEXT))
    for step in range(draw(st.integers(1, 3))):
        draw(_reply(w, f"{turn}{step}"))
    ending = draw(st.integers(0, 7))
    if ending == 0:
        w.add(lambda i, p, n: entry("compaction", i, p, n, summary="s", firstKeptEntryId=w.prompts[-1] or "", tokensBefore=9))
    elif ending == 1:
        w.add(lambda i, p, n: entry("custom_message", i, p, n, customType="ext", content="note", display=True))


@st.composite
def histories(draw) -> list:
    w = _Writer(linear=draw(st.integers(0, 7)) == 0)
    if draw(st.booleans()):
        w.add(lambda i, p, n: entry("model_change", i, p, n, provider="anthropic", modelId="claude-sonnet-4-5"))
    for turn in range(draw(st.integers(0, 4))):
        draw(_turn(w, turn))
    return w.lines
