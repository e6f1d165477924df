"""Random fine-tuning datasets: rows of chat conversations, sound or with dropped, reordered and
orphan results, many ending on a tool call that is the example's training target."""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "datasets"

_TEXT = st.text(max_size=12)
_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]


@st.composite
def _messages(draw, row: int) -> list[dict]:
    messages: list[dict] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": "You control a drone."})
    for turn in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(_TEXT)})
        for step in range(draw(st.integers(0, 2))):
            ids = [f"call_{row}_{turn}_{step}_{i}" for i in range(draw(st.integers(1, 3)))]
            calls = [{"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids]
            messages.append({"role": "assistant", "tool_calls": calls})
            answered = draw(st.permutations(ids))
            for call_id in answered[: draw(st.integers(0, len(ids)))]:
                messages.append({"role": "tool", "tool_call_id": call_id, "content": draw(_TEXT)})
            if draw(st.integers(0, 6)) == 0:
                messages.append({"role": "tool", "tool_call_id": "ghost", "content": "?"})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(_TEXT)})
    if draw(st.booleans()):
        # The training target: a final call with no result, as fine-tuning data has it.
        messages.append(
            {"role": "assistant", "tool_calls": [{"id": "call_id", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}
        )
    return messages


@st.composite
def _row(draw, row: int) -> dict:
    keys = draw(st.permutations(["messages", "tools", "parallel_tool_calls"]))
    values = {"messages": draw(_messages(row)), "tools": _TOOLS, "parallel_tool_calls": draw(st.booleans())}
    return {key: values[key] for key in keys}


@st.composite
def histories(draw) -> list:
    return [draw(_row(row)) for row in range(draw(st.integers(1, 4)))]
