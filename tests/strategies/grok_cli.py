"""Random Grok CLI ``chat_history.jsonl`` files, and the item builders the grok-cli tests share.

A drawn history opens with the system prompt and the untagged ``<user_info>``
preamble, then turns: user prompts (some injected by the runtime), reasoning
items, replies whose tool calls are answered in any order, partly, twice or
only after another item stands between, server-side ``backend_tool_call``
items, results that answer nothing, and grok's own cancellation results.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

FORMAT = "grok-cli"


def system() -> dict:
    return {"type": "system", "content": "You are Grok 4.5 released by xAI."}


def preamble() -> dict:
    return {"type": "user", "content": [{"type": "text", "text": "<user_info>\nOS Version: linux\n</user_info>"}]}


def user(text: str, index: int | None = None, **extra: Any) -> dict:
    item: dict[str, Any] = {"type": "user", "content": [{"type": "text", "text": f"<user_query>\n{text}\n</user_query>"}]}
    if index is not None:
        item["prompt_index"] = index
    item.update(extra)
    return item


def assistant(content: str, calls: list[str] = (), name: str = "run_terminal_cmd") -> dict:
    item: dict[str, Any] = {"type": "assistant", "content": content}
    if calls:
        item["tool_calls"] = [{"id": c, "name": name, "arguments": json.dumps({"command": "ls"})} for c in calls]
    item["model_id"] = "grok-4.5"
    return item


def result(call_id: str, content: str) -> dict:
    return {"type": "tool_result", "tool_call_id": call_id, "content": content}


def reasoning(n: int) -> dict:
    return {
        "type": "reasoning",
        "id": f"rs_{n}",
        "summary": [{"type": "summary_text", "text": "thinking"}],
        "encrypted_content": "<opaque>",
        "status": "completed",
    }


def backend_call(n: int) -> dict:
    action = {"type": "search", "query": "python", "sources": []}
    return {
        "type": "backend_tool_call",
        "kind": {"tool_type": "web_search", "action": action, "id": f"ws_{n}", "status": "completed"},
    }


_CANCELLED = "Tool execution was cancelled by the user (tool `run_terminal_cmd` was not executed)."


@st.composite
def _turn(draw, turn: int) -> list[dict]:
    synthetic = draw(st.integers(0, 5)) == 0
    items = [
        user(
            draw(st.text(max_size=8)) or "go",
            None if synthetic else turn,
            **({"synthetic_reason": "system_reminder"} if synthetic else {}),
        )
    ]
    for step in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            items.append(reasoning(step))
        if draw(st.integers(0, 3)) == 0:
            items.append(backend_call(step))
        calls = [f"call-{turn}-{step}-{i}" for i in range(draw(st.integers(0, 3)))]
        items.append(assistant(draw(st.sampled_from(["", "on it"])), calls))
        if calls and draw(st.integers(0, 5)) == 0:
            items.append(reasoning(100 + step))  # closes the calls: their results come late
        answered = draw(st.permutations(calls))
        for call_id in answered[: draw(st.integers(0, len(answered)))]:
            items.append(result(call_id, draw(st.sampled_from(["ok", "", _CANCELLED, "not run: the turn was interrupted"]))))
        if calls and draw(st.integers(0, 6)) == 0:
            items.append(result(calls[0], "again"))
        if draw(st.integers(0, 6)) == 0:
            items.append(result("call-ghost", "?"))
    return items


@st.composite
def histories(draw) -> list:
    items = [system(), preamble()]
    for turn in range(draw(st.integers(0, 4))):
        items += draw(_turn(turn))
    if draw(st.integers(0, 3)) == 0:
        items.append(assistant("Done."))
    return items
