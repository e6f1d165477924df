"""Random Gemini CLI logs (the JSONL session file): a header, prompts and replies whose tool
calls are answered, cut off or still waiting, messages recorded again as they change (the
last record of an id wins), $set updates, $rewindTo (to a known id or an unknown one), the
CLI's own notes, calls known only from a reply's content parts, and now and then a $set
that holds the messages themselves."""

from __future__ import annotations

from hypothesis import strategies as st

FORMAT = "gemini-cli"

_MARKER = "not run: the turn was interrupted"
_STATUSES = ["success", "error", "cancelled", "executing", "scheduled", "awaiting_approval", "validating"]
_TOOLS = st.sampled_from(["read_file", "run_shell_command", "glob", "write_file"])


def _stamp(n: int) -> str:
    return f"2026-04-29T21:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def _result(call_id: str, name: str, text: str) -> list:
    return [{"functionResponse": {"id": call_id, "name": name, "response": {"output": text}}}]


@st.composite
def _call(draw, call_id: str) -> dict:
    name = draw(_TOOLS)
    record = {"id": call_id, "name": name, "args": {"path": "a.txt"}}
    shape = draw(st.sampled_from(["result", "none", "null", "marker", "empty"]))
    if shape == "result":
        record["result"] = _result(call_id, name, draw(st.sampled_from(["ok", "", "aborted"])))
    elif shape == "null":
        record["result"] = None
    elif shape == "marker":
        record["result"] = _result(call_id, name, _MARKER)
    elif shape == "empty":
        record["result"] = []
    record["status"] = draw(st.sampled_from(_STATUSES))
    record["timestamp"] = _stamp(draw(st.integers(0, 3000)))
    return record


@st.composite
def histories(draw) -> list:
    lines: list[dict] = [
        {"sessionId": "s", "projectHash": "p" * 64, "startTime": _stamp(0), "lastUpdated": _stamp(0), "kind": "main"}
    ]
    ids: list[str] = []
    clock = 0
    for turn in range(draw(st.integers(0, 4))):
        clock += 1
        prompt = {"id": f"u{turn}", "timestamp": _stamp(clock), "type": "user", "content": [{"text": "go"}]}
        lines.append(prompt)
        ids.append(prompt["id"])
        for step in range(draw(st.integers(0, 3))):
            clock += 1
            reply_id = f"g{turn}_{step}"
            count = draw(st.integers(0, 3))
            # Now and then a call id of an earlier reply comes back.
            call_ids = [f"call_{turn}_{step}_{i}" for i in range(count)]
            if call_ids and draw(st.integers(0, 8)) == 0:
                call_ids[0] = "call_0_0_0"
            reply = {"id": reply_id, "timestamp": _stamp(clock), "type": "gemini", "content": "", "thoughts": []}
            reply["toolCalls"] = [draw(_call(c)) for c in call_ids]
            if draw(st.integers(0, 5)) == 0:
                part = {"functionCall": {"id": f"part_{turn}_{step}", "name": "glob", "args": {}}}
                reply["content"] = [{"text": "looking"}, part]
            lines.append(reply)
            ids.append(reply_id)
            for _ in range(draw(st.integers(0, 2))):
                # Recorded again as it changes (tokens, calls completing): the last one wins.
                again = dict(reply, tokens={"input": 1, "output": 2, "cached": 0, "total": 3})
                again["toolCalls"] = [draw(_call(c)) for c in call_ids]
                lines.append(again)
            if draw(st.integers(0, 4)) == 0:
                lines.append({"id": f"i{turn}_{step}", "timestamp": _stamp(clock), "type": "info", "content": "note"})
            if draw(st.integers(0, 3)) == 0:
                lines.append({"$set": {"lastUpdated": _stamp(clock)}})
        if ids and draw(st.integers(0, 5)) == 0:
            lines.append({"$rewindTo": draw(st.sampled_from([*ids, "unknown-id"]))})
    if draw(st.integers(0, 7)) == 0:
        records = [line for line in lines if isinstance(line.get("id"), str)]
        lines.append({"$set": {"messages": draw(st.lists(st.sampled_from(records), max_size=4)) if records else []}})
    return lines
