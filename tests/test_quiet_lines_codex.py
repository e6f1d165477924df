"""A codex check's quiet stretches say exactly what reading every line whole says.

Past the lines auto-detection reads, a codex check types a few fields of each
rollout line while no call is pending (``apx_doctor.formats._codex_quiet``),
and reads a line whole only where those fields do not prove it gives the
engine nothing to do. Every file here is checked (and fixed) twice: through
the quiet loop, and with it turned off. Findings, edits, line counts, the
errors that stop a run and the repaired bytes (whose inserted records carry
the latest timestamp and an ordinal the adapter keeps) must be the same.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiet_support import broken, golden_cases, odd_line_findings, run_check, same_both_ways

from apx_doctor.formats._codex_quiet import CodexQuietLines
from apx_doctor.formats.base import DEFAULT_MARKER
from apx_doctor.formats.codex import CodexAdapter
from apx_doctor.quiet import DEVIATES, Step

import strategies

_clock = iter(range(10**6))


def _stamp() -> str:
    second = next(_clock)
    return f"2025-12-05T11:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def _record(kind: str, payload: object, **extra: object) -> bytes:
    return orjson.dumps({"timestamp": _stamp(), **extra, "type": kind, "payload": payload}) + b"\n"


def _item(payload: dict, **extra: object) -> bytes:
    return _record("response_item", payload, **extra)


def _user(text: str = "go") -> bytes:
    return _item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def _call(call_id: str, kind: str = "function_call") -> bytes:
    return _item({"type": kind, "name": "shell", "arguments": '{"cmd":"ls"}', "call_id": call_id})


def _output(call_id: str, output: object = "ok", kind: str = "function_call_output") -> bytes:
    return _item({"type": kind, "call_id": call_id, "output": output})


def _noise() -> bytes:
    return _record("event_msg", {"type": "token_count", "info": None})


# A quiet history: 40 clean steps (some of two calls, answered out of order,
# with events between), and one call closed as interrupted (for a late output).
_HEAD = _record("session_meta", {"id": "s", "cwd": "/w"}) + _user()
for _i in range(40):
    if _i % 3:
        _HEAD += _call(f"h{_i}") + _noise() + _output(f"h{_i}")
    else:
        _HEAD += _call(f"h{_i}") + _call(f"g{_i}") + _output(f"g{_i}") + _noise() + _output(f"h{_i}")
_HEAD += _call("lost") + _user("next")
_CUT = _user("end") + _call("z") + b'{"timestamp":"2025-12-05T10:00:00.000Z","type":"event_msg","payload":{"type":"x"}}\n'
_CUT += _user("cut").rstrip(b"\n")


def _numbered(data: bytes) -> bytes:
    """``data`` with an ordinal on every record line (rollouts of Codex 0.171)."""
    lines = data.splitlines(keepends=True)
    out = []
    for n, line in enumerate(lines):
        if line.startswith(b'{"timestamp"') and b'"ordinal"' not in line:
            line = b'{"ordinal":' + str(n).encode() + b"," + line[1:]
        out.append(line)
    return b"".join(out)


_T = '"timestamp":"2025-12-05T11:59:00.000Z"'
_EVENT = "{" + _T + ',"type":"event_msg","payload":{"type":"x",%s}}\n'


def _ev(field: str) -> bytes:
    return (_EVENT % field).encode("utf-8", "surrogatepass") if isinstance(field, str) else field


def _raw(text: str) -> bytes:
    return text.encode() + b"\n"


# Odd and bad lines, each with what the general path reports on it (None:
# nothing of its own), placed in a quiet stretch and inside a step.
ODD_LINES: dict[str, tuple[bytes, object]] = {
    "invalid UTF-8 in a skipped value": (b'{"type":"event_msg","payload":{"x":"\xff\xfe"}}\n', "APX101"),
    "invalid UTF-8 in a key": (b'{"type":"event_msg","payload":{"\xff":1}}\n', "APX101"),
    "invalid UTF-8 in a long output": (
        b'{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"'
        + b"x" * 3000
        + b'\xff"}}\n',
        "APX101",
    ),
    "an overlong encoding": (b'{"type":"event_msg","payload":{"x":"\xc0\xaf"}}\n', "APX101"),
    "an encoded surrogate": (b'{"type":"event_msg","payload":{"x":"\xed\xa0\x80"}}\n', "APX101"),
    "NaN": (_ev('"x":NaN'), "APX101"),
    "trailing bytes": (b'{"type":"event_msg","payload":{}} x\n', "APX101"),
    "two values on one line": (b'{"type":"event_msg","payload":{}} {"type":"event_msg","payload":{}}\n', "APX101"),
    "a lone surrogate escape": (_ev('"x":"\\ud800"'), None),
    "a lone surrogate escape in an output": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"\\ud800"}}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a control character in a string": (b'{"type":"event_msg","payload":{"x":"a\x01b"}}\n', "APX101"),
    "a big integer": (_ev('"x":123456789012345678901234567890'), None),
    "1e400": (_ev('"x":1e400'), None),
    "nested deeper than orjson reads": (_ev('"x":' + "[" * 1100 + "]" * 1100), "APX101"),
    "nested deep, but not too deep": (_ev('"x":' + "[" * 1000 + "]" * 1000), None),
    "nested too deep beside a long output": (
        _raw(
            '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"'
            + "y" * 5000
            + '","x":'
            + "[" * 1100
            + "]" * 1100
            + "}}"
        ),
        "APX101",
    ),
    "a blank line": (b"\n", "APX105"),
    "a line that is an array": (b"[1,2]\n", "APX104"),
    "a record type that is no string": (b'{"type":1,"payload":{}}\n', "APX104"),
    "a payload that is no object": (b'{"type":"event_msg","payload":[1]}\n', "APX104"),
    "a payload that is null": (b'{"type":"event_msg","payload":null}\n', "APX104"),
    "no payload": (b'{"type":"event_msg"}\n', "APX104"),
    "a byte-order mark": (b'\xef\xbb\xbf{"type":"event_msg","payload":{}}\n', "APX101"),
    "a record type Codex may add": (_raw('{"type":"future_record","payload":{"x":1}}'), None),
    "an item type Codex may add": (_raw('{"type":"response_item","payload":{"type":"brand_new","call_id":"c1"}}'), None),
    "a web search item": (_raw('{"type":"response_item","payload":{"type":"web_search_call","status":"completed"}}'), None),
    "a reasoning item": (_raw('{"type":"response_item","payload":{"type":"reasoning","summary":[]}}'), None),
    "an assistant message": (_raw('{"type":"response_item","payload":{"type":"message","role":"assistant","content":[]}}'), None),
    "a developer message": (_raw('{"type":"response_item","payload":{"type":"message","role":"developer","content":"x"}}'), None),
    "a message with no role": (_raw('{"type":"response_item","payload":{"type":"message","content":"x"}}'), None),
    "a message whose role is no string": (_raw('{"type":"response_item","payload":{"type":"message","role":["user"]}}'), None),
    "an item type that is no string": (_raw('{"type":"response_item","payload":{"type":7,"call_id":"c1"}}'), None),
    "a user message": (_raw('{"type":"response_item","payload":{"type":"message","role":"user","content":"more"}}'), None),
    "an injected user message": (
        _raw(
            '{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x"}]}}'
        ),
        None,
    ),
    "a prompt event": (_raw('{"type":"event_msg","payload":{"type":"user_message","message":"hi"}}'), None),
    "a turn_aborted event": (_raw('{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}'), None),
    "turn context": (_raw('{"type":"turn_context","payload":{"cwd":"/w"}}'), None),
    "session meta": (_raw('{"type":"session_meta","payload":{"id":"s2"}}'), None),
    "compacted": (_raw('{"type":"compacted","payload":{"message":"summary"}}'), None),
    "a key given twice, the last an output": (
        _raw('{"type":"event_msg","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"r"}}'),
        None,
    ),
    "a key given twice, the last an event": (
        _raw('{"type":"response_item","type":"event_msg","payload":{"type":"function_call_output","call_id":"c1","output":"r"}}'),
        None,
    ),
    "a payload given twice": (
        _raw(
            '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"r"},"payload":{"type":"reasoning"}}'
        ),
        None,
    ),
    "an item type given twice, the last a user message": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","type":"message","role":"user","call_id":"c1"}}'),
        None,
    ),
    "a call id given twice": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","call_id":"ghost","output":"r"}}'),
        "APX002",
    ),
    "a call without an id": (_raw('{"type":"response_item","payload":{"type":"function_call","name":"a"}}'), None),
    "a call id that is null": (_raw('{"type":"response_item","payload":{"type":"function_call","call_id":null}}'), None),
    "a call id that is no string": (_raw('{"type":"response_item","payload":{"type":"function_call","call_id":7}}'), None),
    "a call id already waiting": (_raw('{"type":"response_item","payload":{"type":"function_call","call_id":"c1"}}'), None),
    "a call id answered before": (_raw('{"type":"response_item","payload":{"type":"function_call","call_id":"h3"}}'), None),
    "a custom tool call": (
        _raw('{"type":"response_item","payload":{"type":"custom_tool_call","call_id":"k","input":"x"}}'),
        None,
    ),
    "a local shell call": (
        _raw('{"type":"response_item","payload":{"type":"local_shell_call","call_id":"k","action":{}}}'),
        None,
    ),
    "a local shell call with only an id": (_raw('{"type":"response_item","payload":{"type":"local_shell_call","id":"k"}}'), None),
    "a client tool search call": (_raw('{"type":"response_item","payload":{"type":"tool_search_call","call_id":"k"}}'), None),
    "a tool search output": (
        _raw('{"type":"response_item","payload":{"type":"tool_search_output","call_id":"c1","output":[]}}'),
        None,
    ),
    "a custom tool call output": (
        _raw('{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":"done"}}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "an output id that is no string": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":1,"output":"x"}}'),
        "APX002",
    ),
    "an output without an id": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","output":"x"}}'),
        "APX002",
    ),
    "an orphan output": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"ghost","output":"x"}}'),
        "APX002",
    ),
    "a duplicate output": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"h3","output":"x"}}'),
        "APX003",
    ),
    "a late output": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"lost","output":"x"}}'),
        "APX004",
    ),
    "the marker as an output": (
        _raw(
            '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"' + DEFAULT_MARKER + '"}}'
        ),
        {"quiet": "APX002", "mid-step": None},
    ),
    "the marker, escaped": (
        _raw(
            '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"not run\\u003a the turn was interrupted"}}'
        ),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a placeholder output": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"aborted"}}'),
        {"quiet": "APX002", "mid-step": "APX006"},
    ),
    "an output with escapes that tell": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a\\nb"}}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "an output dict": (
        _raw(
            '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":{"content":"ok","success":true}}}'
        ),
        {"quiet": "APX002", "mid-step": None},
    ),
    "an output dict holding a placeholder": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":{"content":"aborted"}}}'),
        {"quiet": "APX002", "mid-step": "APX006"},
    ),
    "an output list": (
        _raw(
            '{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"aborted"}]}}'
        ),
        {"quiet": "APX002", "mid-step": "APX006"},
    ),
    "an output that is null": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":null}}'),
        None,
    ),
    "an output that is absent": (_raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1"}}'), None),
    "an output that is a number": (
        _raw('{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":3}}'),
        None,
    ),
    "a timestamp that is no string": (_raw('{"timestamp":1700000000,"type":"event_msg","payload":{}}'), None),
    "a timestamp that is null": (_raw('{"timestamp":null,"type":"event_msg","payload":{}}'), None),
    "a timestamp that is not ISO": (_raw('{"timestamp":"yesterday","type":"event_msg","payload":{}}'), None),
    "a timestamp with no zone": (_raw('{"timestamp":"2031-01-01T00:00:00","type":"event_msg","payload":{}}'), None),
    "the latest timestamp": (_raw('{"timestamp":"2030-01-01T00:00:00.000Z","type":"event_msg","payload":{}}'), None),
    "the latest timestamp, in another zone": (
        _raw('{"timestamp":"2030-01-01T02:00:00+02:00","type":"event_msg","payload":{}}'),
        None,
    ),
    "the latest timestamp on a call": (
        _raw('{"timestamp":"2030-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"function_call","call_id":"k"}}'),
        None,
    ),
    "an ordinal": (_raw('{"ordinal":5000,"type":"event_msg","payload":{}}'), None),
    "an ordinal that is null": (_raw('{"ordinal":null,"type":"event_msg","payload":{}}'), None),
    "an ordinal that is a string": (_raw('{"ordinal":"7","type":"event_msg","payload":{}}'), None),
    "an ordinal that is a float": (_raw('{"ordinal":7.0,"type":"event_msg","payload":{}}'), None),
    "an ordinal that is true": (_raw('{"ordinal":true,"type":"event_msg","payload":{}}'), None),
    "an ordinal of 2**63": (_raw('{"ordinal":9223372036854775808,"type":"event_msg","payload":{}}'), None),
    "an ordinal of 2**64": (_raw('{"ordinal":18446744073709551616,"type":"event_msg","payload":{}}'), None),
    "a line ending in CRLF": (b'{"type":"event_msg","payload":{"x":"a\\nb"}}\r\n', None),
}


def _placed(odd: bytes, where: str, numbered: bool) -> bytes:
    if where == "quiet":
        data = _HEAD + odd + _CUT
    else:
        # Inside a step: calls c1 and c2, an event, the output for c2, the odd line, the output for c1.
        data = _HEAD + _call("c1") + _noise() + _call("c2") + _output("c2") + odd + _output("c1") + _CUT
    return _numbered(data) if numbered else data


@pytest.mark.parametrize("numbered", [False, True], ids=["plain", "numbered"])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("where", ["quiet", "mid-step"])
@pytest.mark.parametrize("name", list(ODD_LINES))
def test_an_odd_line_past_the_head_is_reported_as_reading_it_whole_does(
    name: str, where: str, repair: bool, numbered: bool
) -> None:
    odd, code = ODD_LINES[name]
    data = _placed(odd, where, numbered)
    said = same_both_ways(data, "codex", head=8, repair=repair)
    at = _HEAD.count(b"\n") + (1 if where == "quiet" else 5)
    findings = odd_line_findings(said, at, code, where, repair)
    if findings is None:
        return
    if repair and not said[2]:
        # The record inserted for z, which carries the latest timestamp and an ordinal.
        record = orjson.loads(said[4].splitlines()[-2])
        assert record["payload"] == {"type": "function_call_output", "call_id": "z", "output": DEFAULT_MARKER}
        assert ("ordinal" in record) is numbered


def test_the_inserted_record_takes_the_latest_timestamp_of_a_quiet_line() -> None:
    odd = ODD_LINES["the latest timestamp"][0]
    out = same_both_ways(_placed(odd, "quiet", False), "codex", head=8, repair=True)[4]
    assert orjson.loads(out.splitlines()[-2])["timestamp"] == "2030-01-01T00:00:00.000Z"


@pytest.mark.parametrize("case", golden_cases("codex"), ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [16, 256, 1 << 16])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_golden_codex_cases_say_the_same_through_the_quiet_loop(case: Path, chunk: int, repair: bool) -> None:
    for drop in (False, True):
        same_both_ways((case / "input.jsonl").read_bytes(), "codex", chunk=chunk, repair=repair, drop=drop)


_ODD = st.sampled_from([odd for odd, _code in ODD_LINES.values()])


@st.composite
def _with_odd_lines(draw) -> bytes:
    """A drawn rollout, now and then numbered, with odd lines, long outputs and bytes broken."""
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    records = draw(strategies.by_format()["codex"].histories())
    if draw(st.booleans()):
        start = draw(st.sampled_from([0, 7, 2**63 - 3]))
        records = [{"ordinal": start + n, **record} for n, record in enumerate(records)]
    lines = [orjson.dumps(record) + newline for record in records]
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(_ODD))
    if lines and draw(st.booleans()):
        # A long output, longer than any marker: taken without being read.
        at = draw(st.integers(0, len(lines)))
        lines.insert(
            at,
            orjson.dumps(
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call_output",
                        "call_id": "call_0_0_0",
                        "output": "é" * draw(st.integers(100, 400)),
                    },
                }
            )
            + newline,
        )
    return broken(draw, lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_with_odd_lines(),
    head=st.sampled_from([1, 2, 5]),
    chunk=st.sampled_from([1, 40, 300, 1 << 16]),
    repair=st.booleans(),
    drop=st.booleans(),
)
def test_drawn_rollouts_say_the_same_through_the_quiet_loop(data: bytes, head: int, chunk: int, repair: bool, drop: bool) -> None:
    same_both_ways(data, "codex", head=head, chunk=chunk, piece=8, repair=repair, drop=drop)


def _state(adapter: CodexAdapter) -> tuple:
    adapter._weigh_stamps()
    return adapter._prior, adapter._ordinal, adapter._latest_text, adapter._latest_moment


@settings(max_examples=200, deadline=None)
@given(records=strategies.by_format()["codex"].histories(), odd=st.lists(_ODD, max_size=4), numbered=st.booleans())
def test_a_line_taken_leaves_the_adapter_as_classify_does(records: list, odd: list, numbered: bool) -> None:
    """The timestamps and ordinals a taken line leaves are those ``classify`` leaves (the not-run record reads them)."""
    if numbered:
        records = [{"ordinal": n, **record} for n, record in enumerate(records)]
    lines = [orjson.dumps(record) for record in records] + odd
    typed, whole = CodexAdapter(), CodexAdapter()
    quiet_lines = CodexQuietLines(typed)
    step = Step()
    for raw in lines:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # no record: the general way reads it, and ``classify`` never sees it
        try:
            said = quiet_lines.take(quiet_lines.decode(raw), step)
        except msgspec.MsgspecError:
            said = DEVIATES
        if said == DEVIATES:
            # The general way reads the line, with the adapter the quiet loop shares.
            typed.classify(value)
            step = Step()
        whole.classify(value)
        assert typed._stamps == whole._stamps and (typed._prior, typed._ordinal) == (whole._prior, whole._ordinal)
    assert _state(typed) == _state(whole)


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_quiet_stretch_is_not_classified(repair: bool, monkeypatch) -> None:
    classified = []
    classify = CodexAdapter.classify
    monkeypatch.setattr(CodexAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    steps = b"".join(_call(f"q{i}") + _noise() + _call(f"r{i}") + _output(f"r{i}") + _output(f"q{i}") for i in range(1000))
    data = _HEAD + steps + _CUT
    findings, _edits, _unparsed, lines, out = run_check(data, "codex", typed=True, head=2, chunk=1 << 16, repair=repair)
    assert lines == data.count(b"\n") + 1
    assert [(f["code"], f.get("call_id")) for f in findings] == [("APX001", "lost"), ("APX001", "z")]
    # The doctor reads the 2 head lines, the call cut by the user line after
    # it, and the cut call, the event after it and the line that cuts it; a
    # repair's self-check reads each of them again (the codex adapter keeps
    # state, so nothing is shared), and the records inserted.
    assert len(classified) == (2 + 2 + 3 if not repair else 2 * (2 + 2 + 3) + 2)
    if repair:
        # Every line as it came in, and a record for each call cut.
        records = [line for line in out.splitlines(keepends=True) if DEFAULT_MARKER.encode() in line]
        assert len(records) == 2 and b"".join(line for line in out.splitlines(keepends=True) if line not in records) == data
