"""Random fine-tuning datasets: rows of chat conversations, LLaMA-Factory v1 messages and ShareGPT
turns, sound or with dropped, reordered, surplus and orphan results, many ending on a tool call
that is the example's training target."""

from __future__ import annotations

import json

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
            {
                "role": "assistant",
                "tool_calls": [{"id": "call_id", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
            }
        )
    return messages


@st.composite
def _row(draw, row: int) -> dict:
    keys = draw(st.permutations(["messages", "tools", "parallel_tool_calls"]))
    values = {"messages": draw(_messages(row)), "tools": _TOOLS, "parallel_tool_calls": draw(st.booleans())}
    return {key: values[key] for key in keys}


def _v1(role: str, parts: list[tuple[str, str]], weighted: bool) -> dict:
    message: dict = {"role": role, "content": [{"type": kind, "value": value} for kind, value in parts]}
    if weighted:
        message["loss_weight"] = 1.0 if role == "assistant" else 0.0
    return message


def _v1_call(name: str) -> tuple[str, str]:
    return "tool_call", json.dumps({"name": name, "arguments": {"q": 1}})


@st.composite
def _v1_row(draw) -> dict:
    """LLaMA-Factory v1: calls are content parts, results tool messages answering by position."""
    weighted = draw(st.booleans())
    messages = [_v1("system", [("text", "You use tools.")], weighted)]
    for _turn in range(draw(st.integers(1, 3))):
        messages.append(_v1("user", [("text", draw(_TEXT))], weighted))
        for _step in range(draw(st.integers(0, 2))):
            calls = draw(st.integers(0, 3))
            parts = [("reasoning", draw(_TEXT))] + [_v1_call(f"tool{k}") for k in range(calls)]
            messages.append(_v1("assistant", parts, weighted))
            # No result, one for the whole turn, or one a call (some missing, some surplus).
            for _result in range(draw(st.integers(0, calls + 1))):
                messages.append(_v1("tool", [("text", draw(_TEXT))], weighted))
        if draw(st.booleans()):
            messages.append(_v1("assistant", [("text", draw(_TEXT))], weighted))
    if draw(st.booleans()):
        messages.append(_v1("assistant", [_v1_call("target")], weighted))
    return {"messages": messages, "tools": json.dumps(_TOOLS)}


_SHAREGPT_TAGS = st.sampled_from(["human", "gpt", "function_call", "observation", "system"])


@st.composite
def _sharegpt_row(draw) -> dict:
    """ShareGPT turns in any order: alternating or not, calls answered, cut off or in a list."""
    turns = [{"from": "human", "value": draw(_TEXT)}]
    for _turn in range(draw(st.integers(0, 8))):
        tag = draw(_SHAREGPT_TAGS)
        if tag == "function_call":
            calls = [{"name": f"tool{k}", "arguments": {}} for k in range(draw(st.integers(1, 3)))]
            value = json.dumps(calls[0] if len(calls) == 1 and draw(st.booleans()) else calls)
        else:
            value = draw(_TEXT)
        turns.append({"from": tag, "value": value})
    return {"conversations": turns, "tools": json.dumps(_TOOLS)}


@st.composite
def histories(draw) -> list:
    kinds = st.sampled_from(["chat", "v1", "sharegpt"])
    rows = []
    for row in range(draw(st.integers(1, 4))):
        kind = draw(kinds)
        rows.append(draw(_row(row)) if kind == "chat" else draw(_v1_row()) if kind == "v1" else draw(_sharegpt_row()))
    return rows
