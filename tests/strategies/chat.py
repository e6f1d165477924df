"""Random chat transcripts: sound turns, dropped and reordered results, orphans, pass-over lines."""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "chat"

_NAMES = st.sampled_from(["browser_text", "read_file", "write_file", "bash", "search", "x[bold]y"])
_TEXT = st.text(max_size=20)


@st.composite
def _turn(draw, turn: int) -> list[dict]:
    lines: list[dict] = [{"role": "user", "content": draw(_TEXT)}]
    for step in range(draw(st.integers(0, 3))):
        ids = [f"call_{turn}_{step}_{i}" for i in range(draw(st.integers(0, 3)))]
        if draw(st.booleans()) and ids:
            ids.append(ids[0])  # a reused id now and then
        calls = [{"id": i, "type": "function", "function": {"name": draw(_NAMES), "arguments": "{}"}} for i in ids]
        message: dict = {"role": "assistant", "content": draw(st.one_of(st.none(), _TEXT))}
        if calls:
            message["tool_calls"] = calls
        lines.append(message)
        answered = draw(st.permutations(sorted(set(ids))))
        keep = draw(st.integers(0, len(answered)))
        for call_id in answered[:keep]:
            lines.append({"role": "tool", "tool_call_id": call_id, "content": draw(_TEXT)})
        if draw(st.integers(0, 5)) == 0:
            lines.append({"role": "tool", "tool_call_id": draw(st.sampled_from(["ghost", *ids])), "content": "?"})
    return lines


@st.composite
def histories(draw) -> list:
    lines: list = []
    if draw(st.booleans()):
        lines.append({"role": "system", "content": "sys"})
    for turn in range(draw(st.integers(0, 4))):
        lines.extend(draw(_turn(turn)))
    return lines
