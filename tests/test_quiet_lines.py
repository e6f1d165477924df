"""A check's quiet stretches say exactly what reading every line whole says.

Past the lines auto-detection reads, a chat check of a file types a few fields
of each line while no call is pending (``apx_doctor.quiet``), and reads a line
whole only where those fields do not prove it gives the engine nothing to do.
Every file here is checked twice: as a check runs it (a file object, so the
quiet loop), and with the quiet loop turned off (each line parsed and
classified). Findings, line counts and the errors that stop a run must be the
same. Chunks and UTF-8 pieces are made small, so that their edges fall
everywhere, between lines and inside characters.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from quiet_support import broken, golden_cases, odd_line_findings, run_check, same_both_ways

from apx_doctor import quiet
from apx_doctor.formats._chat_quiet import ChatQuietLines
from apx_doctor.formats.base import DEFAULT_MARKER, PLACEHOLDER_TEXTS
from apx_doctor.formats.chat import ChatAdapter

import strategies


def _check(data: bytes, **options):
    return run_check(data, "chat", **options)


def _same_both_ways(data: bytes, **options) -> list:
    return same_both_ways(data, "chat", **options)


def _line(value: object) -> bytes:
    return orjson.dumps(value) + b"\n"


def _call(*ids: str) -> bytes:
    calls = [{"id": i, "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}} for i in ids]
    return _line({"role": "assistant", "content": None, "tool_calls": calls})


def _result(call_id: str, content: object = "ok") -> bytes:
    return _line({"role": "tool", "tool_call_id": call_id, "content": content})


# A quiet history of 40 clean steps, so that what follows is read by the quiet loop.
_HEAD = _line({"role": "system", "content": "s"}) + _line({"role": "user", "content": "u"})
_HEAD += b"".join(_call(f"h{i}") + _result(f"h{i}") for i in range(40))
_CUT = _line({"role": "user", "content": "end"}) + _call("z") + b'{"role":"user","content":"cut"}'

# Odd and bad lines, each with what the general path reports on it: msgspec
# accepts some of them where orjson does not (invalid UTF-8 or deep nesting in
# a value it skips), or they are entries the quiet loop must not take.
ODD_LINES = {
    "invalid UTF-8 in a skipped value": (b'{"role":"user","x":"\xff\xfe"}\n', "APX101"),
    "invalid UTF-8 in a key": (b'{"role":"user","\xff":1}\n', "APX101"),
    "an overlong encoding": (b'{"role":"user","x":"\xc0\xaf"}\n', "APX101"),
    "an encoded surrogate": (b'{"role":"user","x":"\xed\xa0\x80"}\n', "APX101"),
    "a cut character": (b'{"role":"user","x":"\xe6\x97"}\n', "APX101"),
    "NaN": (b'{"role":"user","x":NaN}\n', "APX101"),
    "trailing bytes": (b'{"role":"user"} x\n', "APX101"),
    "two values": (b'{"role":"user"} {"role":"user"}\n', "APX101"),
    "a lone surrogate escape": (b'{"role":"user","x":"\\ud800"}\n', None),
    "a control character in a string": (b'{"role":"user","x":"a\x01b"}\n', "APX101"),
    "a big integer": (b'{"role":"user","x":123456789012345678901234567890}\n', None),
    "2**64": (b'{"role":"user","x":18446744073709551616}\n', None),
    "1e400": (b'{"role":"user","x":1e400}\n', None),
    "a key given twice, the last a result": (b'{"role":"user","role":"tool","tool_call_id":"c1","content":"r"}\n', None),
    "a key given twice, the last a boundary": (b'{"role":"tool","role":"user","content":"x"}\n', None),
    "nested deeper than orjson reads": (b'{"role":"user","x":' + b"[" * 1100 + b"]" * 1100 + b"}\n", "APX101"),
    "nested deep, but not too deep": (b'{"role":"user","x":' + b"[" * 1000 + b"]" * 1000 + b"}\n", None),
    "a blank line": (b"\n", "APX105"),
    "spaces": (b"  \r\n", "APX105"),
    "an array": (b"[1,2]\n", "APX104"),
    "an unknown role": (b'{"role":"critic","content":"x"}\n', "APX104"),
    "no role": (b'{"content":"x"}\n', "APX104"),
    "a role that is no string": (b'{"role":["user"],"content":"x"}\n', "APX104"),
    "the marker": (
        b'{"role":"tool","tool_call_id":"c1","content":"not run: the turn was interrupted"}\n',
        {"quiet": "APX002", "mid-step": None},
    ),
    "the marker, escaped": (
        b'{"role":"tool","tool_call_id":"c1","content":"not run\\u003a the turn was interrupted"}\n',
        {"quiet": "APX002", "mid-step": None},
    ),
    "the marker as a text part": (
        b'{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"not run: the turn was interrupted"}]}\n',
        None,
    ),
    "a placeholder": (b'{"role":"tool","tool_call_id":"c1","content":"aborted"}\n', {"quiet": "APX002", "mid-step": "APX006"}),
    "a byte-order mark": (b'\xef\xbb\xbf{"role":"user"}\n', "APX101"),
    "a call id given twice": (b'{"role":"assistant","tool_calls":[{"id":"d","function":{"name":"a"}},{"id":"d"}]}\n', "APX005"),
    "a call without an id": (b'{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"a"}}]}\n', None),
    "a call id that is no string": (b'{"role":"assistant","tool_calls":[{"id":7}]}\n', None),
    "tool_calls that is no list": (b'{"role":"assistant","tool_calls":{"id":"x"}}\n', None),
    "a result id that is no string": (b'{"role":"tool","tool_call_id":1,"content":"x"}\n', None),
    "a result without an id": (b'{"role":"tool","content":"x"}\n', None),
    "a stray result": (b'{"role":"tool","tool_call_id":"ghost","content":"x"}\n', "APX002"),
    "a late result of the head": (b'{"role":"tool","tool_call_id":"h3","content":"x"}\n', "APX003"),
    "a legacy function result": (b'{"role":"function","name":"f","content":"x"}\n', None),
    "a line without a line ending inside": (b'{"role":"user","content":"a\\nb"}\r\n', None),
}


def _placed(odd: bytes, where: str) -> bytes:
    if where == "quiet":
        return _HEAD + odd + _CUT
    # Inside a step: calls c1 and c2, the result for c2, the odd line, the result for c1.
    return _HEAD + _call("c1", "c2") + _result("c2") + odd + _result("c1") + _CUT


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("where", ["quiet", "mid-step"])
@pytest.mark.parametrize("name", list(ODD_LINES))
def test_an_odd_line_past_the_head_is_reported_as_reading_it_whole_does(name: str, where: str, repair: bool) -> None:
    odd, code = ODD_LINES[name]
    data = _placed(odd, where)
    said = _same_both_ways(data, head=64, repair=repair)
    at = _HEAD.count(b"\n") + (1 if where == "quiet" else 3)
    findings = odd_line_findings(said, at, code, where, repair)
    if findings is None:
        return


@pytest.mark.parametrize("case", golden_cases("chat"), ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [16, 256, 1 << 16])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_golden_chat_cases_say_the_same_through_the_quiet_loop(case: Path, chunk: int, repair: bool) -> None:
    for drop in (False, True):
        _same_both_ways((case / "input.jsonl").read_bytes(), chunk=chunk, repair=repair, drop=drop)


_ODD = st.sampled_from([odd for odd, _code in ODD_LINES.values()])


@st.composite
def _with_odd_lines(draw) -> bytes:
    """A drawn chat history, now and then with odd lines, long results and bytes broken."""
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    lines = [orjson.dumps(line) + newline for line in draw(strategies.by_format()["chat"].histories())]
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(_ODD))
    if lines and draw(st.booleans()):
        # A long result, longer than any marker: taken without being read.
        lines.append(_result("call_0_0_0", "é" * draw(st.integers(100, 400))))
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


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=200) | st.text(max_size=60).map(str.encode), piece=st.sampled_from([4, 5, 16, 1 << 14]))
@example(data="ab€cd€".encode(), piece=4)  # a character cut at each piece's end
def test_the_utf8_check_agrees_with_the_decoder(data: bytes, piece: int) -> None:
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    saved, quiet.UTF8_PIECE = quiet.UTF8_PIECE, piece
    try:
        assert quiet._utf8(data) is valid
    finally:
        quiet.UTF8_PIECE = saved


class _Content(msgspec.Struct):
    content: msgspec.Raw


_CONTENTS = st.one_of(
    st.sampled_from([DEFAULT_MARKER, "custom marker", *PLACEHOLDER_TEXTS, "", "ok", "é" * 200]),
    st.text(max_size=40),
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "output_text", "image"]), "text": st.sampled_from([DEFAULT_MARKER, "aborted", "x"])}
        ),
        max_size=2,
    ),
    st.none(),
    st.integers(-(2**63), 2**64 - 1),  # orjson refuses a longer one: that line is read whole
)


def _every_char_escaped(text: str) -> str:
    """``text`` as a JSON string with each character a ``\\u`` escape (a surrogate pair beyond the BMP)."""
    units = text.encode("utf-16-be")
    return '"' + "".join(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)) + '"'


_MARKERS = [DEFAULT_MARKER, "custom marker", 'a "quoted" \\ marker', "two\nlines", "a\ttab / slash", "é€😀"]


@settings(max_examples=1000, deadline=None)
@given(
    content=_CONTENTS | st.sampled_from(_MARKERS),
    escaped=st.sampled_from(["no", "ascii", "all"]),
    marker=st.sampled_from(_MARKERS),
)
def test_a_result_is_plain_exactly_when_it_is_neither_the_marker_nor_a_placeholder(content, escaped: str, marker: str) -> None:
    if escaped == "all" and type(content) is str:
        text = _every_char_escaped(content)
    else:
        text = json.dumps(content, ensure_ascii=escaped == "ascii")
    raw = msgspec.json.decode(f'{{"content": {text}}}', type=_Content).content
    result = ChatAdapter(marker=marker).result_for("c", content)
    assert ChatQuietLines(ChatAdapter(marker=marker)).plain(raw) is not (result.not_run or result.placeholder)


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_quiet_stretch_is_not_classified(repair: bool, monkeypatch) -> None:
    classified = []
    classify = ChatAdapter.classify
    monkeypatch.setattr(ChatAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    steps = b"".join(_call(f"q{i}", f"r{i}") + _result(f"r{i}") + _result(f"q{i}") for i in range(1000))
    data = _HEAD + steps + _CUT
    findings, _edits, _unparsed, lines, out = _check(data, typed=True, head=64, chunk=1 << 16, repair=repair)
    assert lines == data.count(b"\n") + 1
    assert [(f["code"], f.get("call_id")) for f in findings] == [("APX001", "z")]
    # The engine sees the 64 head lines, the cut call and the line that cuts it
    # (the self-check reuses what the doctor classified, and reads the record).
    assert len(classified) == 64 + 2 + repair
    if repair:
        cut = data.rindex(b"\n") + 1
        assert out == data[:cut] + _result("z", DEFAULT_MARKER) + data[cut:]


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_stretch_the_format_cannot_type_is_read_whole_then_typing_resumes(repair: bool, monkeypatch) -> None:
    """Chunks where most lines go the general way are read whole for a while, with the same report and bytes."""
    classified = []
    classify = ChatAdapter.classify
    monkeypatch.setattr(ChatAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    # 300 stray results (each read whole: the engine reports it), then 1,000 clean steps.
    strays = b"".join(_result(f"ghost{i}") for i in range(300))
    steps = b"".join(_call(f"q{i}") + _result(f"q{i}") for i in range(1000))
    data = _HEAD + strays + steps + _CUT
    chunk = 1 << 12
    said = _same_both_ways(data, head=64, chunk=chunk, repair=repair)
    assert [f["code"] for f in said[0]] == ["APX002"] * 300 + ["APX001"]
    if repair:
        cut = data.rindex(b"\n") + 1
        assert said[4] == data[:cut] + _result("z", DEFAULT_MARKER) + data[cut:]
        return
    classified.clear()
    monkeypatch.setattr(quiet, "RESTING", 3)
    _check(data, typed=True, head=64, chunk=chunk)
    # The strays and the cut, then three chunks of clean steps read whole while
    # typing rested (the last, cut where a chunk ends, in part); once typing
    # resumed, the clean steps were taken unclassified.
    per_chunk = 2 * chunk / len(_call("q0") + _result("q0"))
    assert 302 + 2 * per_chunk < len(classified) - 64 < 302 + 4 * per_chunk


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_chunks_that_rest_after_lines_taken_are_numbered_on(repair: bool, monkeypatch) -> None:
    """Strays among clean steps: typing rests after chunks that end in lines taken, and every line keeps its number."""
    monkeypatch.setattr(quiet, "RESTING", 1)
    body = b"".join(_result(f"ghost{i}a") + _result(f"ghost{i}b") + _call(f"s{i}") + _result(f"s{i}") for i in range(400))
    data = _HEAD + body + _CUT
    for chunk in (1 << 12, 3001, 5000):
        said = _same_both_ways(data, head=64, chunk=chunk, repair=repair)
        at = {f["line"] for f in said[0] if f["code"] == "APX002"}
        first = _HEAD.count(b"\n") + 1
        assert at == {first + 4 * i + k for i in range(400) for k in (0, 1)}


def test_a_marker_with_a_lone_surrogate_matches_no_line() -> None:
    # From the library (the CLI refuses it): no valid line holds such text, so no result is the marker.
    data = _HEAD + _call("a") + _result("a", "x") + _call("b") + _result("b", "aborted") + _CUT
    findings = _same_both_ways(data, head=1, marker="x\udcff")[0]
    assert [f["code"] for f in findings] == ["APX006", "APX001"]  # the placeholder, the cut call
