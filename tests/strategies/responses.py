"""Random OpenAI Responses input histories: function, custom and local shell calls, outputs
dropped, reordered or delayed behind assistant messages and reasoning, self-contained server
items, unknown item types, orphans, duplicates and placeholders.

Only calls with an honest not-run output are drawn here (the repaired file must check clean);
computer/shell/apply_patch calls are pinned by tests/formats/test_responses.py.
"""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "responses"

_TEXT = st.text(max_size=12)
_OUTPUT_TEXT = st.one_of(_TEXT, st.sampled_from(["aborted", "not run: the turn was interrupted"]))
_KINDS = st.sampled_from(["function_call", "custom_tool_call", "local_shell_call"])


def _call(kind: str, call_id: str) -> dict:
    if kind == "function_call":
        return {"type": kind, "call_id": call_id, "name": "get_weather", "arguments": "{}"}
    if kind == "custom_tool_call":
        return {"type": kind, "call_id": call_id, "name": "apply", "input": "x"}
    return {
        "type": kind,
        "id": f"ls_{call_id}",
        "call_id": call_id,
        "action": {"type": "exec", "command": ["ls"], "env": {}},
        "status": "completed",
    }


def _output(kind: str, call_id: str, text: str) -> dict:
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "id": call_id, "output": text}
    return {"type": f"{kind}_output", "call_id": call_id, "output": text}


_FILLER = st.sampled_from(
    [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hm", "annotations": []}],
        },
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "some_future_item", "call_id": "x"},
    ]
)


@st.composite
def _response(draw, turn: int, step: int) -> list[dict]:
    calls = [(draw(_KINDS), f"call_{turn}_{step}_{i}") for i in range(draw(st.integers(0, 3)))]
    items: list[dict] = []
    for kind, call_id in calls:
        if draw(st.booleans()):
            items.append(draw(_FILLER))
        items.append(_call(kind, call_id))
    answered = list(draw(st.permutations(calls)))[: draw(st.integers(0, len(calls)))]
    for kind, call_id in answered:
        if draw(st.booleans()):
            items.append(draw(_FILLER))  # outputs may come later in the same turn
        items.append(_output(kind, call_id, draw(_OUTPUT_TEXT)))
    if draw(st.integers(0, 4)) == 0:
        ghost = draw(st.sampled_from(["call_ghost", *(c for _, c in calls)]))
        items.append(_output("function_call", ghost, "?"))  # orphan or duplicate
    return items


@st.composite
def _turn(draw, turn: int) -> list[dict]:
    opener = draw(
        st.sampled_from(
            [
                {"role": "user", "content": "hi"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ]
        )
    )
    lines = [opener]
    for step in range(draw(st.integers(0, 3))):
        lines.extend(draw(_response(turn, step)))
    if draw(st.integers(0, 5)) == 0:
        lines.append({"role": "developer", "content": "be brief"})
    return lines


@st.composite
def histories(draw) -> list:
    lines: list = []
    if draw(st.booleans()):
        lines.append({"role": "system", "content": "sys"})
    for turn in range(draw(st.integers(0, 4))):
        lines.extend(draw(_turn(turn)))
    return lines
