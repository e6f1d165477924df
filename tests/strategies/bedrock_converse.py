"""Random Bedrock Converse histories: parallel toolUse blocks, results dropped, reordered, with a
status or without, joined by the user's next words or alone, assistant messages in a row, server
tools, reasoning and cache points, orphans, duplicates, placeholders and calls without an id.

``histories(alternating=True)`` draws only what the API accepts once the doctor has repaired it
(with --drop-orphans): roles alternate wherever the doctor does not insert, every call has an id,
and a stray result never stands alone in its message."""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "bedrock-converse"
# The records of one assistant message go into one user message (roles must alternate), so a
# fix inserts one line per interrupted turn, or none where it rewrites the next user message.
ONE_RECORD_PER_CALL = False

MARKER = "not run: the turn was interrupted"
_NAMES = st.sampled_from(["get_weather", "read_file", "bash", "x[bold]y"])
_TEXT = st.text(max_size=12)
_RESULT_TEXT = st.one_of(_TEXT, st.sampled_from(["aborted", MARKER]))


def _text(text: str) -> dict:
    return {"text": text}


def _use(call_id: str | None, name: str) -> dict:
    use: dict = {"name": name, "input": {"q": call_id}}
    if call_id is not None:
        use = {"toolUseId": call_id, **use}
    return {"toolUse": use}


@st.composite
def _result(draw, call_id: str) -> dict:
    result: dict = {"toolUseId": call_id, "content": [_text(draw(_RESULT_TEXT))]}
    if draw(st.integers(0, 2)) == 0:
        result["content"] = [{"json": {"value": draw(_TEXT)}}]
    status = draw(st.sampled_from([None, None, "success", "error"]))
    if status is not None:
        result["status"] = status
    return {"toolResult": result}


@st.composite
def _assistant(draw, ids: list[str], step: str, alternating: bool) -> dict:
    blocks: list[dict] = []
    if draw(st.integers(0, 3)) == 0:
        blocks.append({"reasoningContent": {"reasoningText": {"text": draw(_TEXT), "signature": "sig"}}})
    if draw(st.booleans()):
        blocks.append(_text(draw(_TEXT)))
    if draw(st.integers(0, 4)) == 0:
        # A system tool: used and answered by the server inside the assistant message.
        server = f"tooluse_srv_{step}"
        blocks.append({"toolUse": {"toolUseId": server, "name": "nova_code_interpreter", "input": {}, "type": "server_tool_use"}})
        blocks.append({"toolResult": {"toolUseId": server, "content": [{"json": {}}], "type": "nova_code_interpreter_result"}})
    blocks += [_use(i, draw(_NAMES)) for i in ids]
    if not alternating and draw(st.integers(0, 9)) == 0:
        blocks.append(_use(None, draw(_NAMES)))  # no toolUseId: nothing can answer it
    if not blocks:
        blocks.append(_text(draw(_TEXT)))
    return {"role": "assistant", "content": blocks}


@st.composite
def _user(draw, ids: list[str], alternating: bool) -> dict | None:
    """The user message after an assistant message: some of its results, maybe the user's words."""
    answered = list(draw(st.permutations(ids)))[: draw(st.integers(0, len(ids)))]
    blocks = [draw(_result(i)) for i in answered]
    speaks = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0 and (blocks or speaks or not alternating):
        # An orphan or a duplicate: never alone in its message when the history must stay valid.
        stray = draw(st.sampled_from(["tooluse_ghost", *ids]))
        blocks.insert(draw(st.integers(0, len(blocks))), draw(_result(stray)))
    if speaks or not blocks:
        blocks.append(_text(draw(_TEXT)))
        if draw(st.integers(0, 4)) == 0:
            blocks.append({"cachePoint": {"type": "default"}})
    return {"role": "user", "content": blocks}


@st.composite
def histories(draw, alternating: bool = False) -> list:
    lines: list = []
    if not alternating and draw(st.integers(0, 5)) == 0:
        # Results before the first real user entry pass through untouched.
        lines.append({"role": "user", "content": [draw(_result("tooluse_before"))]})
    lines.append({"role": "user", "content": [_text(draw(_TEXT))]})
    for step in range(draw(st.integers(0, 6))):
        ids = [f"tooluse_{step}_{i}" for i in range(draw(st.integers(0, 3)))]
        lines.append(draw(_assistant(ids, str(step), alternating)))
        if draw(st.integers(0, 4)) == 0 and (ids or not alternating):
            # Cut off: the next assistant message (or the end) follows right away.
            continue
        lines.append(draw(_user(ids, alternating)))
        if not alternating and draw(st.integers(0, 7)) == 0:
            lines.append({"role": "user", "content": [_text(draw(_TEXT))]})  # two in a row
    return lines
