"""Random Anthropic Messages histories: parallel tool_use blocks, results dropped, reordered or
split over merged user messages, results followed by text, continued assistant replies, server
tools, orphans, duplicates and placeholders."""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "anthropic"

_NAMES = st.sampled_from(["get_weather", "read_file", "bash", "x[bold]y"])
_TEXT = st.text(max_size=12)
_RESULT_TEXT = st.one_of(_TEXT, st.sampled_from(["aborted", "not run: the turn was interrupted"]))


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _result(call_id: str, content) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


@st.composite
def _assistant(draw, ids: list[str], turn: int, step: int) -> list[dict]:
    blocks: list[dict] = []
    if draw(st.booleans()):
        blocks.append(_text(draw(_TEXT)))
    if draw(st.integers(0, 3)) == 0:
        # A server tool: used and answered inside the assistant message itself.
        server_id = f"srvtoolu_{turn}_{step}"
        blocks.append({"type": "server_tool_use", "id": server_id, "name": "web_search", "input": {"query": "q"}})
        blocks.append({"type": "web_search_tool_result", "tool_use_id": server_id, "content": []})
    blocks += [{"type": "tool_use", "id": i, "name": draw(_NAMES), "input": {}} for i in ids]
    if not blocks:
        return [{"role": "assistant", "content": draw(_TEXT)}]
    cut = draw(st.integers(1, len(blocks))) if draw(st.integers(0, 3)) == 0 else len(blocks)
    # Now and then the reply is recorded as two consecutive assistant messages.
    messages = [{"role": "assistant", "content": blocks[:cut]}]
    if blocks[cut:]:
        messages.append({"role": "assistant", "content": blocks[cut:]})
    return messages


@st.composite
def _results(draw, ids: list[str]) -> list[dict]:
    answered = list(draw(st.permutations(ids)))[: draw(st.integers(0, len(ids)))]
    blocks = [_result(i, draw(_RESULT_TEXT)) for i in answered]
    if draw(st.integers(0, 4)) == 0:
        blocks.append(_result(draw(st.sampled_from(["toolu_ghost", *ids])), "?"))  # orphan or duplicate
    if not blocks:
        return []
    # One user message, or results split over consecutive user messages (merged by the API).
    cut = draw(st.integers(0, len(blocks)))
    parts = [p for p in (blocks[:cut], blocks[cut:]) if p]
    messages = [{"role": "user", "content": p} for p in parts]
    if draw(st.booleans()):
        messages[-1]["content"].append(_text(draw(_TEXT)))  # results, then the user's next words
    return messages


@st.composite
def _turn(draw, turn: int) -> list[dict]:
    lines: list[dict] = [{"role": "user", "content": draw(st.one_of(_TEXT, st.just([_text("hi")])))}]
    for step in range(draw(st.integers(0, 3))):
        ids = [f"toolu_{turn}_{step}_{i}" for i in range(draw(st.integers(0, 3)))]
        lines.extend(draw(_assistant(ids, turn, step)))
        lines.extend(draw(_results(ids)))
    return lines


@st.composite
def histories(draw) -> list:
    lines: list = []
    for turn in range(draw(st.integers(0, 4))):
        lines.extend(draw(_turn(turn)))
    return lines
