"""Random Gemini API histories: parallel functionCall parts with and without ids (the same name
more than once), responses dropped, reordered, by id or by position and name, joined by the user's
next words or alone, contents without a role or under the older SDKs' "function" role, model
contents in a row, thoughts, signatures and server code execution, orphans, duplicates,
placeholders and calls without a name.

``histories(alternating=True)`` draws only what the API accepts once the doctor has repaired it
(with --drop-orphans): roles alternate wherever the doctor does not insert, every call has a name,
and a stray response never stands alone in its content."""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "gemini-api"
# The records of one model turn go into one user Content (one function response turn answers
# the whole call turn), so a fix inserts one line per interrupted turn, or none where it
# rewrites the next user Content.
ONE_RECORD_PER_CALL = False

MARKER = "not run: the turn was interrupted"
# Few names, so that calls without ids share them and pair by position.
_NAMES = st.sampled_from(["get_weather", "read_file", "x[bold]y"])
_TEXT = st.text(max_size=12)
_OUTPUT = st.one_of(_TEXT, st.sampled_from(["aborted", MARKER]))


def _text(text: str) -> dict:
    return {"text": text}


@st.composite
def _call(draw, call_id: str | None, alternating: bool) -> dict:
    call: dict = {"name": draw(_NAMES), "args": {"q": call_id}}
    if not alternating and draw(st.integers(0, 12)) == 0:
        del call["name"]  # nothing can answer a call that names no function
    if call_id is not None:
        call = {"id": call_id, **call}
    part = {"functionCall": call}
    if draw(st.integers(0, 3)) == 0:
        part["thoughtSignature"] = "c2ln"
    return part


@st.composite
def _response(draw, call: dict, keep_id: bool) -> dict:
    response: dict = {"name": call.get("name", ""), "response": {}}
    key = draw(st.sampled_from(["output", "output", "error", "return_value"]))
    response["response"][key] = draw(_OUTPUT)
    if keep_id and "id" in call:
        response = {"id": call["id"], **response}
    return {"functionResponse": response}


@st.composite
def _model(draw, calls: list[dict], step: int) -> dict:
    parts: list[dict] = []
    if draw(st.integers(0, 3)) == 0:
        parts.append({"text": draw(_TEXT), "thought": True})
    if draw(st.booleans()):
        parts.append(_text(draw(_TEXT)))
    if draw(st.integers(0, 5)) == 0:
        # Code the server runs and answers inside the model content.
        parts.append({"executableCode": {"language": "PYTHON", "code": f"print({step})"}})
        parts.append({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": str(step)}})
    parts += calls
    if not parts:
        parts.append(_text(draw(_TEXT)))
    return {"role": "model", "parts": parts}


@st.composite
def _user(draw, calls: list[dict], alternating: bool) -> dict:
    """The user content after a model content: some of its responses, maybe the user's words."""
    made = [part["functionCall"] for part in calls]
    answered = list(draw(st.permutations(made)))[: draw(st.integers(0, len(made)))]
    # Mostly the call's id is echoed; without it, the response pairs by position and name.
    parts = [draw(_response(c, draw(st.integers(0, 3)) > 0)) for c in answered]
    speaks = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0 and (parts or speaks or not alternating):
        # An orphan or a duplicate: never alone in its content when the history must stay valid.
        ghost = {"id": "call_ghost", "name": "get_weather"}
        stray = draw(_response(draw(st.sampled_from([ghost, *made])), True))
        parts.insert(draw(st.integers(0, len(parts))), stray)
    if speaks or not parts:
        parts.append(_text(draw(_TEXT)))
    role = draw(st.sampled_from(["user", "user", None]))
    if not speaks and parts and draw(st.integers(0, 5)) == 0:
        role = "function"  # the older SDKs' role for a content of responses
    content: dict = {"parts": parts}
    if role is not None:
        content["role"] = role
    return content


@st.composite
def histories(draw, alternating: bool = False) -> list:
    lines: list = []
    if not alternating and draw(st.integers(0, 5)) == 0:
        # Responses before the first real user entry pass through untouched.
        early = {"functionResponse": {"id": "call_before", "name": "get_weather", "response": {"output": "x"}}}
        lines.append({"role": "user", "parts": [early]})
    first = {"parts": [_text(draw(_TEXT))]}
    if draw(st.integers(0, 3)) > 0:
        first["role"] = "user"
    lines.append(first)
    for step in range(draw(st.integers(0, 6))):
        count = draw(st.integers(0, 3))
        calls = [draw(_call(f"call_{step}_{i}" if draw(st.booleans()) else None, alternating)) for i in range(count)]
        lines.append(draw(_model(calls, step)))
        if draw(st.integers(0, 4)) == 0 and (calls or not alternating):
            # Cut off: the next model content (or the end) follows right away.
            continue
        lines.append(draw(_user(calls, alternating)))
        if not alternating and draw(st.integers(0, 7)) == 0:
            lines.append({"role": "user", "parts": [_text(draw(_TEXT))]})  # two in a row
    return lines
