"""A Responses check's quiet stretches say exactly what reading every item whole says.

Past the lines auto-detection reads, a check of a Responses file types a few
fields of each item while no call is pending (``apx_doctor.quiet``,
``formats._responses_quiet``). Every file here is checked (and fixed) twice:
through the quiet loop, and with it turned off (each line parsed and
classified); findings, edits, line counts, output bytes and the errors that
stop a run must be the same (``quiet_support.same_both_ways``).
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiet_support import broken, odd_line_findings, run_check, same_both_ways

from apx_doctor.formats._responses_quiet import ResponsesQuietLines
from apx_doctor.formats.base import DEFAULT_MARKER, PLACEHOLDER_TEXTS
from apx_doctor.formats.responses import ResponsesAdapter

import strategies

CASES = Path(__file__).parent / "cases" / "responses"
MARKER = DEFAULT_MARKER.encode()


def _same_both_ways(data: bytes, **options) -> list:
    return same_both_ways(data, "responses", **options)


def _line(value: object) -> bytes:
    return orjson.dumps(value) + b"\n"


def _call(call_id: str, kind: str = "function_call") -> bytes:
    return _line({"type": kind, "call_id": call_id, "name": "bash", "arguments": '{"cmd":"ls"}'})


def _output(call_id: str, output: object = "ok", kind: str = "function_call_output") -> bytes:
    return _line({"type": kind, "call_id": call_id, "output": output})


_USER = _line({"role": "user", "content": "u"})
_REASONING = _line({"type": "reasoning", "id": "rs_1", "summary": []})
_SAID = _line({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hm"}]})

# A history with one call closed as interrupted (for a late output), then 40
# clean steps, so that what follows is read by the quiet loop.
_HEAD = _line({"role": "system", "content": "s"}) + _USER + _call("lost") + _USER
_HEAD += b"".join(_call(f"h{i}") + _output(f"h{i}") for i in range(40))
_CUT = _line({"type": "message", "role": "user", "content": "end"}) + _call("z") + b'{"role":"user","content":"cut"}'


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# Odd and bad lines, each with what the general path reports on it (on its own
# line; a dict: by where it stands). msgspec accepts some of them where orjson
# does not (invalid UTF-8 or deep nesting in a value it skips), or they are
# entries the quiet loop must not take.
ODD_LINES: dict[str, tuple[bytes, object]] = {
    "invalid UTF-8 in a skipped value": (b'{"type":"reasoning","x":"\xff\xfe"}\n', "APX101"),
    "invalid UTF-8 in an output": (b'{"type":"function_call_output","call_id":"c1","output":"\xff"}\n', "APX101"),
    "invalid UTF-8 in a key": (b'{"role":"user","\xff":1}\n', "APX101"),
    "an overlong encoding": (b'{"role":"user","x":"\xc0\xaf"}\n', "APX101"),
    "an encoded surrogate": (b'{"type":"reasoning","x":"\xed\xa0\x80"}\n', "APX101"),
    "a cut character": (b'{"role":"assistant","x":"\xe6\x97"}\n', "APX101"),
    "NaN": (b'{"type":"reasoning","x":NaN}\n', "APX101"),
    "NaN in an output": (b'{"type":"function_call_output","call_id":"c1","output":[NaN]}\n', "APX101"),
    "trailing bytes": (b'{"type":"reasoning"} x\n', "APX101"),
    "two values": (b'{"type":"reasoning"} {"type":"reasoning"}\n', "APX101"),
    "two outputs on one line": (
        b'{"type":"function_call_output","call_id":"c1","output":"a"}{"type":"function_call_output","call_id":"c1","output":"b"}\n',
        "APX101",
    ),
    "a lone surrogate escape": (b'{"type":"reasoning","x":"\\ud800"}\n', None),
    "a lone surrogate in an output": (b'{"type":"function_call_output","call_id":"c1","output":"\\udc00"}\n', None),
    "a control character in a string": (b'{"role":"user","x":"a\x01b"}\n', "APX101"),
    "a big integer": (b'{"type":"reasoning","x":123456789012345678901234567890}\n', None),
    "a big integer as the output": (
        b'{"type":"function_call_output","call_id":"c1","output":123456789012345678901234567890}\n',
        None,
    ),
    "1e400": (b'{"type":"reasoning","x":1e400}\n', None),
    "a type given twice, the last an output": (
        b'{"type":"reasoning","type":"function_call_output","call_id":"c1","output":"r"}\n',
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "a type given twice, the last a boundary": (
        b'{"type":"function_call_output","type":"message","role":"user","call_id":"c1"}\n',
        None,
    ),
    "a call id given twice, the last answering": (
        b'{"type":"function_call_output","call_id":"ghost","call_id":"c1","output":"r"}\n',
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "a call id given twice, the last stray": (
        b'{"type":"function_call_output","call_id":"c1","call_id":"ghost","output":"r"}\n',
        "APX002",
    ),
    "an output given twice, the last a placeholder": (
        b'{"type":"function_call_output","call_id":"c1","output":"ok","output":"aborted"}\n',
        {"quiet": "APX002", "mid-step": "APX006", "between calls": "APX006"},
    ),
    "an output given twice, the last plain": (
        b'{"type":"function_call_output","call_id":"c1","output":"aborted","output":"ok"}\n',
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "a role given twice": (b'{"type":"message","role":"assistant","role":"user","content":"x"}\n', None),
    "nested deeper than orjson reads": (b'{"type":"reasoning","x":' + _deep(1100) + b"}\n", "APX101"),
    "an output nested deeper than orjson reads": (
        b'{"type":"function_call_output","call_id":"c1","output":' + _deep(1100) + b"}\n",
        "APX101",
    ),
    "nested too deep beside a long output": (
        b'{"type":"function_call_output","call_id":"c1","output":"' + b"x" * 3000 + b'","x":' + _deep(1100) + b"}\n",
        "APX101",
    ),
    "nested deep, but not too deep": (b'{"type":"reasoning","x":' + _deep(1000) + b"}\n", None),
    "a blank line": (b"\n", "APX105"),
    "spaces": (b"  \r\n", "APX105"),
    "an array": (b"[1,2]\n", "APX104"),
    "a string": (b'"function_call_output"\n', "APX104"),
    "an unknown role": (b'{"role":"critic","content":"x"}\n', "APX104"),
    "a chat tool line": (b'{"role":"tool","tool_call_id":"c1","content":"x"}\n', "APX104"),
    "a message without a role": (b'{"type":"message","content":"x"}\n', "APX104"),
    "no type, no role": (b'{"content":"x"}\n', "APX104"),
    "an item reference without its type": (b'{"id":"msg_1"}\n', None),
    "a role that is no string": (b'{"role":["user"],"content":"x"}\n', "APX104"),
    "a type that is no string": (b'{"type":["message"],"role":"user","content":"x"}\n', "APX104"),
    "a null type, a user role": (b'{"type":null,"role":"user","content":"x"}\n', None),
    "an id that is no string": (b'{"type":"reasoning","id":5}\n', None),
    "the marker": (
        b'{"type":"function_call_output","call_id":"c1","output":"' + MARKER + b'"}\n',
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "the marker, escaped": (
        b'{"type":"function_call_output","call_id":"c1","output":"not run\\u003a the turn was interrupted"}\n',
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "the marker as an input_text part": (
        _output("c1", [{"type": "input_text", "text": DEFAULT_MARKER}]),
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "the marker as an output_text part": (
        _output("c1", [{"type": "output_text", "text": DEFAULT_MARKER}]),
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "the marker in a long part": (
        _output("c1", [{"type": "input_text", "text": DEFAULT_MARKER, "annotations": ["x" * 600]}]),
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "the marker beside another part": (
        _output("c1", [{"type": "input_text", "text": DEFAULT_MARKER}, {"type": "input_text", "text": "x"}]),
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "the marker in a part of another type": (
        _output("c1", [{"type": "input_image", "text": DEFAULT_MARKER}]),
        {"quiet": "APX002", "mid-step": None, "between calls": None},
    ),
    "a placeholder": (_output("c1", "aborted"), {"quiet": "APX002", "mid-step": "APX006", "between calls": "APX006"}),
    "a placeholder as a part": (
        _output("c1", [{"type": "input_text", "text": "[Tool result missing due to internal error]"}]),
        {"quiet": "APX002", "mid-step": "APX006", "between calls": "APX006"},
    ),
    "a placeholder, escaped": (
        b'{"type":"function_call_output","call_id":"c1","output":"\\u0061borted"}\n',
        {"quiet": "APX002", "mid-step": "APX006", "between calls": "APX006"},
    ),
    "an output without output": (b'{"type":"function_call_output","call_id":"c1"}\n', {"quiet": "APX002", "mid-step": None}),
    "an output that is an object": (_output("c1", {"text": DEFAULT_MARKER}), {"quiet": "APX002", "mid-step": None}),
    "an output that is a number": (_output("c1", 3), {"quiet": "APX002", "mid-step": None}),
    "an output without a call id": (b'{"type":"function_call_output","output":"x"}\n', "APX002"),
    "an output whose call id is no string": (b'{"type":"function_call_output","call_id":1,"output":"x"}\n', "APX002"),
    "a custom tool output": (_output("c1", "ok", "custom_tool_call_output"), {"quiet": "APX002", "mid-step": None}),
    "a computer call output": (_output("c1", [{"type": "computer_screenshot"}], "computer_call_output"), {"quiet": "APX002"}),
    "a local shell output linked by id": (
        _line({"type": "local_shell_call_output", "id": "c1", "output": "x"}),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a local shell output, call id null": (
        _line({"type": "local_shell_call_output", "call_id": None, "id": "c1", "output": "x"}),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a local shell output linked by call id": (
        _line({"type": "local_shell_call_output", "call_id": "c1", "id": "ghost", "output": "x"}),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a call id already waiting": (_call("c1"), {"quiet": "APX001", "mid-step": "APX005", "between calls": "APX005"}),
    "a call id answered in the step": (_call("c2"), {"quiet": "APX001", "mid-step": "APX001"}),
    "a call id that is no string": (b'{"type":"function_call","call_id":7,"name":"f"}\n', None),
    "a call without a call id": (b'{"type":"function_call","name":"f","arguments":"{}"}\n', None),
    "a call left unanswered": (_call("c3", "custom_tool_call"), "APX001"),
    "a shell call left unanswered": (_line({"type": "shell_call", "call_id": "c3", "action": {}}), "APX001"),
    "a client tool search": (_line({"type": "tool_search_call", "execution": "client", "call_id": "c3"}), "APX001"),
    "a server tool search": (_line({"type": "tool_search_call", "execution": "server", "call_id": "c3"}), None),
    "a client tool search output": (
        _line({"type": "tool_search_output", "execution": "client", "call_id": "c1", "output": []}),
        {"quiet": "APX002", "mid-step": None},
    ),
    "an orphan output": (_output("ghost", "x"), "APX002"),
    "a duplicate of the head": (_output("h3", "x"), "APX003"),
    # (h39 is past the lines detection reads: its step was taken, and told to the engine in bulk.)
    "a duplicate of a step taken": (_output("h39", "x"), "APX003"),
    "a duplicate in the step": (_output("c2", "x"), {"quiet": "APX002", "mid-step": "APX003"}),
    "a late output": (_output("lost", "x"), "APX004"),
    "a user message": (_USER, None),
    "a developer message": (_line({"type": "message", "role": "developer", "content": "d"}), None),
    "a compaction": (_line({"type": "compaction", "encrypted_content": "e"}), None),
    "an assistant message": (_SAID, None),
    "reasoning": (_REASONING, None),
    "a server item": (_line({"type": "web_search_call", "id": "ws", "status": "completed"}), None),
    "an item type the adapter does not know": (_line({"type": "some_future_item", "call_id": "c1", "output": "aborted"}), None),
    "a byte-order mark": (b'\xef\xbb\xbf{"role":"user"}\n', "APX101"),
    "an escaped line break, CRLF": (b'{"role":"assistant","content":"a\\nb"}\r\n', None),
}

# Where an odd line is put: in a quiet stretch, or inside a step of calls c1 and
# c2 (after the output for c2, or between the calls).
PLACES = ("quiet", "mid-step", "between calls")


def _placed(odd: bytes, where: str) -> bytes:
    if where == "quiet":
        return _HEAD + odd + _CUT
    if where == "mid-step":
        return _HEAD + _call("c1") + _REASONING + _call("c2") + _output("c2") + odd + _SAID + _output("c1") + _CUT
    return _HEAD + _call("c1") + odd + _call("c2") + _output("c2") + _output("c1") + _CUT


def _odd_at(where: str) -> int:
    return _HEAD.count(b"\n") + {"quiet": 1, "mid-step": 5, "between calls": 2}[where]


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("name", list(ODD_LINES))
def test_an_odd_item_past_the_head_is_reported_as_reading_it_whole_does(name: str, where: str, repair: bool) -> None:
    odd, code = ODD_LINES[name]
    said = _same_both_ways(_placed(odd, where), head=64, repair=repair)
    at = _odd_at(where)
    findings = odd_line_findings(said, at, code, where, repair)
    if findings is None:
        return
    # The head's interrupted call is found too, whatever came after it.
    assert findings[0]["code"] == "APX001" and findings[0]["call_id"] == "lost"


@pytest.mark.parametrize("where", ["mid-step", "between calls"])
def test_a_clean_step_around_the_odd_place_is_clean(where: str) -> None:
    # The places themselves are quiet: what an odd line reports there is its own.
    findings = _same_both_ways(_placed(_REASONING, where), head=64)[0]
    assert [(f["code"], f["call_id"]) for f in findings] == [("APX001", "lost"), ("APX001", "z")]


@pytest.mark.parametrize("case", sorted(p.parent for p in CASES.glob("*/input.jsonl")), ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [16, 256, 1 << 16])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_golden_responses_cases_say_the_same_through_the_quiet_loop(case: Path, chunk: int, repair: bool) -> None:
    options = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
    assert options.get("input_format", "responses") == "responses"
    data = (case / "input.jsonl").read_bytes()
    for drop in (False, True):
        said = _same_both_ways(data, chunk=chunk, repair=repair, drop=drop)
        assert said[3] == data.count(b"\n") + (not data.endswith(b"\n"))


def test_there_are_golden_responses_cases() -> None:
    assert len(list(CASES.glob("*/input.jsonl"))) >= 10


_ODD = st.sampled_from([odd for odd, _code in ODD_LINES.values()])


@st.composite
def _with_odd_lines(draw) -> bytes:
    """A drawn Responses history, now and then with odd lines, long outputs and bytes broken."""
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    lines = [orjson.dumps(line) + newline for line in draw(strategies.by_format()["responses"].histories())]
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(_ODD))
    if lines and draw(st.booleans()):
        # A long output, longer than any marker: taken without being read.
        lines.insert(draw(st.integers(0, len(lines))), _output("call_0_0_0", "é" * draw(st.integers(100, 400))))
    return broken(draw, lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_with_odd_lines(),
    head=st.sampled_from([1, 2, 5]),
    chunk=st.sampled_from([1, 40, 300, 1 << 16]),
    repair=st.booleans(),
    drop=st.booleans(),
)
def test_drawn_histories_say_the_same_through_the_quiet_loop(
    data: bytes, head: int, chunk: int, repair: bool, drop: bool
) -> None:
    _same_both_ways(data, head=head, chunk=chunk, piece=8, repair=repair, drop=drop)


class _Output(msgspec.Struct):
    output: msgspec.Raw


_OUTPUTS = st.one_of(
    st.sampled_from([DEFAULT_MARKER, "custom marker", *PLACEHOLDER_TEXTS, "", "ok", "é" * 200, "two\nlines", "a \\n b", "\\"]),
    st.text(max_size=40),
    st.lists(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["text", "input_text", "output_text", "input_image"]),
                "text": st.sampled_from([DEFAULT_MARKER, "aborted", "x"]),
            }
        ),
        max_size=2,
    ),
    st.none(),
    st.integers(-(2**63), 2**64 - 1),  # orjson refuses a longer one: that line is read whole
)


@settings(max_examples=500, deadline=None)
@given(
    output=_OUTPUTS,
    escaped=st.booleans(),
    marker=st.sampled_from([DEFAULT_MARKER, "custom marker", 'a "quoted" \\ marker', "two\nlines", "a \\n b"]),
)
def test_an_output_is_plain_exactly_when_it_is_neither_the_marker_nor_a_placeholder(output, escaped: bool, marker: str) -> None:
    text = json.dumps(output, ensure_ascii=escaped)
    raw = msgspec.json.decode(f'{{"output": {text}}}', type=_Output).output
    result = ResponsesAdapter(marker=marker).result_for("c", output)
    assert ResponsesQuietLines(ResponsesAdapter(marker=marker)).plain(raw) is not (result.not_run or result.placeholder)


def _busy_step(i: int) -> bytes:
    """A step as a response makes it: reasoning, calls, a message and server items between, outputs out of order."""
    return (
        _REASONING
        + _call(f"q{i}")
        + _SAID
        + _call(f"r{i}", "custom_tool_call")
        + _line({"type": "web_search_call", "id": "ws", "status": "completed"})
        + _output(f"r{i}", [{"type": "input_text", "text": "done"}], "custom_tool_call_output")
        + _REASONING
        + _output(f"q{i}", "x" * (i % 300))
        + _call(f"s{i}")
        + _output(f"s{i}")
        + _SAID
        + (_USER if i % 7 == 0 else b"")
    )


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_quiet_stretch_is_not_classified(repair: bool, monkeypatch) -> None:
    classified = []
    classify = ResponsesAdapter.classify
    monkeypatch.setattr(ResponsesAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    data = _HEAD + b"".join(_busy_step(i) for i in range(1000)) + _output("q5", "late") + _CUT
    findings, _edits, _unparsed, lines, out = run_check(data, "responses", typed=True, head=64, chunk=1 << 16, repair=repair)
    assert lines == data.count(b"\n") + 1
    stray = data[: data.index(b"late")].count(b"\n") + 1
    assert [(f["code"], f["line"], f.get("call_id")) for f in findings] == [
        ("APX001", 3, "lost"),
        ("APX003", stray, "q5"),  # a late duplicate is still told from an orphan
        ("APX001", lines - 1, "z"),
    ]
    # The engine sees the 64 head lines, the duplicate, the cut call and the line that
    # cuts it; a fix's self-check classifies again what it is fed (the adapter is not
    # pure), and reads the two records.
    assert len(classified) == (64 + 3) * (1 + repair) + 2 * repair
    if repair:
        lost, cut = data.index(_call("lost")) + len(_call("lost")), data.rindex(b"\n") + 1
        assert out == data[:lost] + _output("lost", DEFAULT_MARKER) + data[lost:cut] + _output("z", DEFAULT_MARKER) + data[cut:]


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("marker", ["two\nlines", "back\\nslash", "not run\n", "lone \udcff surrogate"])
def test_a_custom_marker_with_an_escape_is_still_told(marker: str, where: str, repair: bool) -> None:
    # An escaped line feed proves an output plain only where the marker holds none.
    # (json escapes a lone surrogate, which orjson will not write.)
    odd = json.dumps({"type": "function_call_output", "call_id": "c1", "output": marker}).encode() + b"\n"
    said = _same_both_ways(_placed(odd, where), head=64, repair=repair, marker=marker)
    if where == "quiet":
        assert ("APX002", _odd_at(where)) in {(f["code"], f["line"]) for f in said[0]}
    else:  # the marker closes c1 as interrupted: its later output is late
        late = _odd_at(where) + (2 if where == "mid-step" else 3)
        assert ("APX004", late) in {(f["code"], f["line"]) for f in said[0]}
