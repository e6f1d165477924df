"""An Anthropic check's quiet stretches say exactly what reading every message whole says.

Past the lines auto-detection reads, a check of an Anthropic file types a few
fields of each message while no call is pending
(``apx_doctor.formats._anthropic_quiet``), and reads a line whole only where
those fields do not prove it gives the engine nothing to do. Every file here
is checked (or fixed) twice, through the quiet loop and line by line
(``quiet_support.same_both_ways``): findings, edits, line counts, output bytes
and the errors that stop a run must be the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiet_support import broken, odd_line_findings, run_check, same_both_ways

from apx_doctor.formats._anthropic_quiet import AnthropicQuietLines
from apx_doctor.formats.anthropic import AnthropicAdapter
from apx_doctor.formats.base import DEFAULT_MARKER, PLACEHOLDER_TEXTS
from apx_doctor.quiet import DEVIATES, ENDS, HELD, OPENS, QUIET, Step

import strategies

CASES = Path(__file__).parent / "cases" / "anthropic"


def _same_both_ways(data: bytes, **options) -> list:
    return same_both_ways(data, "anthropic", **options)


def _line(value: object) -> bytes:
    return orjson.dumps(value) + b"\n"


def _use(call_id: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": "ls"}}


def _call(*ids: str, text: str = "let me look") -> bytes:
    return _line({"role": "assistant", "content": [{"type": "text", "text": text}, *map(_use, ids)]})


def _block(call_id: str, content: object = "ok") -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def _result(call_id: str, content: object = "ok") -> bytes:
    return _line({"role": "user", "content": [_block(call_id, content)]})


def _reply(text: str) -> bytes:
    return _line({"role": "assistant", "content": [{"type": "text", "text": text}]})


# A quiet history of 40 clean steps, so that what follows is read by the quiet loop.
_HEAD = _line({"role": "system", "content": "s"}) + _line({"role": "user", "content": "u"})
_HEAD += b"".join(_call(f"h{i}") + _result(f"h{i}") + _reply(f"done {i}") for i in range(40))
_CUT = _line({"role": "user", "content": "end"}) + _call("z") + b'{"role":"user","content":"cut"}'

_MARKER = DEFAULT_MARKER.encode()


def _user_blocks(*blocks: bytes) -> bytes:
    return b'{"role":"user","content":[' + b",".join(blocks) + b"]}\n"


_R1 = b'{"type":"tool_result","tool_use_id":"c1","content":"r"}'
_R2 = b'{"type":"tool_result","tool_use_id":"c2","content":"r"}'
_TEXT = b'{"type":"text","text":"and now"}'

# Odd and bad lines, each with what the general path reports on it (at its
# line, where it is placed in a quiet stretch, and mid-step): msgspec accepts
# some of them where orjson does not (invalid UTF-8 or deep nesting in a value
# it skips), or they are messages the quiet loop must not take.
ODD_LINES: dict[str, tuple[bytes, object]] = {
    "invalid UTF-8 in a skipped value": (b'{"role":"user","content":"x","x":"\xff\xfe"}\n', "APX101"),
    "invalid UTF-8 in a text block": (b'{"role":"user","content":[{"type":"text","text":"\xff"}]}\n', "APX101"),
    "invalid UTF-8 in a result": (_user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":"r\xc3"}'), "APX101"),
    "invalid UTF-8 in a key": (b'{"role":"user","\xff":1,"content":"x"}\n', "APX101"),
    "an overlong encoding": (b'{"role":"user","content":"x","x":"\xc0\xaf"}\n', "APX101"),
    "an encoded surrogate": (b'{"role":"user","content":"x","x":"\xed\xa0\x80"}\n', "APX101"),
    "NaN": (b'{"role":"user","content":"x","x":NaN}\n', "APX101"),
    "NaN in a tool input": (b'{"role":"assistant","content":[{"type":"tool_use","id":"n","input":{"a":NaN}}]}\n', "APX101"),
    "trailing bytes": (b'{"role":"user","content":"x"} x\n', "APX101"),
    "two values": (b'{"role":"user","content":"x"} {"role":"user","content":"y"}\n', "APX101"),
    "a lone surrogate escape": (b'{"role":"user","content":"x","x":"\\ud800"}\n', None),
    "a control character in a string": (b'{"role":"user","content":"a\x01b"}\n', "APX101"),
    "a big integer": (b'{"role":"user","content":"x","x":123456789012345678901234567890}\n', None),
    "1e400": (b'{"role":"user","content":"x","x":1e400}\n', None),
    "role given twice, the last a result": (
        b'{"role":"assistant","role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"r"}]}\n',
        {"quiet": "APX002", "mid-step": None},
    ),
    "content given twice, the last results": (
        b'{"role":"user","content":"x","content":[{"type":"tool_result","tool_use_id":"c1","content":"r"}]}\n',
        {"quiet": "APX002", "mid-step": None},
    ),
    "content given twice, the last a prompt": (
        b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"r"}],"content":"x"}\n',
        None,
    ),
    "content given twice, the last with an escaped key": (
        b'{"role":"user","content":"x","cont\\u0065nt":[{"type":"tool_result","tool_use_id":"c1","content":"r"}]}\n',
        {"quiet": "APX002", "mid-step": None},
    ),
    "a block type given twice": (
        _user_blocks(b'{"type":"text","type":"tool_result","tool_use_id":"c1","content":"r"}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result id given twice": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c2","tool_use_id":"c1","content":"r"}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result content given twice, the last the marker": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":"r","content":"' + _MARKER + b'"}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "nested deeper than orjson reads": (
        b'{"role":"user","content":"x","x":' + b"[" * 1100 + b"]" * 1100 + b"}\n",
        "APX101",
    ),
    "nested deeper than orjson reads, in a result": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":' + b"[" * 1100 + b"]" * 1100 + b"}"),
        "APX101",
    ),
    "nested deep, beside a long result": (
        _user_blocks(
            b'{"type":"tool_result","tool_use_id":"c1","content":"' + b"x" * 5000 + b'","x":' + b"[" * 1100 + b"]" * 1100 + b"}"
        ),
        "APX101",
    ),
    "nested deep, but not too deep": (b'{"role":"user","content":"x","x":' + b"[" * 1000 + b"]" * 1000 + b"}\n", None),
    "a blank line": (b"\n", "APX105"),
    "spaces": (b"  \r\n", "APX105"),
    "an array": (b"[1,2]\n", "APX104"),
    "an unknown role": (b'{"role":"critic","content":"x"}\n', "APX104"),
    "no role": (b'{"content":"x"}\n', "APX104"),
    "a role that is no string": (b'{"role":["user"],"content":"x"}\n', "APX104"),
    "no content": (b'{"role":"user"}\n', "APX104"),
    "content null": (b'{"role":"assistant","content":null}\n', "APX104"),
    "content an object": (b'{"role":"user","content":{"type":"text","text":"x"}}\n', "APX104"),
    "a block that is no object": (b'{"role":"user","content":["x"]}\n', None),
    "a block without a type": (b'{"role":"user","content":[{"text":"x"}]}\n', None),
    "a block type that is no string": (b'{"role":"user","content":[{"type":7}]}\n', None),
    "an empty user message": (b'{"role":"user","content":[]}\n', None),
    "an empty assistant message": (b'{"role":"assistant","content":[]}\n', None),
    "a system message": (b'{"role":"system","content":"be brief"}\n', None),
    "a system message of blocks": (b'{"role":"system","content":[{"type":"text","text":"be brief"}]}\n', None),
    "a prompt": (b'{"role":"user","content":"more"}\n', None),
    "a reply": (b'{"role":"assistant","content":"more"}\n', None),
    "a recorded response": (b'{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}]}\n', None),
    "the marker": (_result("c1", DEFAULT_MARKER), {"quiet": "APX002", "mid-step": None}),
    "the marker, escaped": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":"not run\\u003a the turn was interrupted"}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "the marker as a text block of the result": (
        _result("c1", [{"type": "text", "text": DEFAULT_MARKER}]),
        {"quiet": "APX002", "mid-step": None},
    ),
    "the marker as a text block of the message": (
        _line({"role": "user", "content": [{"type": "text", "text": DEFAULT_MARKER}]}),
        None,
    ),
    "a placeholder": (_result("c1", "aborted"), {"quiet": "APX002", "mid-step": "APX006"}),
    "a placeholder as a text block": (
        _result("c1", [{"type": "text", "text": "aborted"}]),
        {"quiet": "APX002", "mid-step": "APX006"},
    ),
    "a placeholder with an escape": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":"\\u0061borted"}'),
        {"quiet": "APX002", "mid-step": "APX006"},
    ),
    "a result that is an error": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":"boom","is_error":true}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result of text blocks": (
        _result("c1", [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result of an image": (
        _result("c1", [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result with no content": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1"}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result content null": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":null}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result content a number": (
        _user_blocks(b'{"type":"tool_result","tool_use_id":"c1","content":7}'),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a result id that is no string": (_user_blocks(b'{"type":"tool_result","tool_use_id":1,"content":"x"}'), None),
    "a result without an id": (_user_blocks(b'{"type":"tool_result","content":"x"}'), None),
    "a stray result": (_result("ghost"), "APX002"),
    "a late result of the head": (_result("h3"), "APX003"),
    "the result answered just before": (_result("c2"), {"quiet": "APX002", "mid-step": "APX003"}),
    "two results, one a duplicate": (_user_blocks(_R1, _R2), {"quiet": "APX002", "mid-step": "APX003"}),
    "one result twice": (_user_blocks(_R1, _R1), {"quiet": "APX002", "mid-step": "APX003"}),
    "a result, then text": (_user_blocks(_R1, _TEXT), {"quiet": "APX002", "mid-step": None}),
    "text, then a result": (_user_blocks(_TEXT, _R1), "APX007"),
    "a result, text, a result": (_user_blocks(_R1, _TEXT, _R2), "APX007"),
    "a long result": (_result("c1", "é" * 500), {"quiet": "APX002", "mid-step": None}),
    "a long result of blocks": (_result("c1", [{"type": "text", "text": "é" * 500}]), {"quiet": "APX002", "mid-step": None}),
    "the marker as a text block of a long result": (
        _result("c1", [{"type": "text", "text": DEFAULT_MARKER, "citations": ["é" * 500]}]),
        {"quiet": "APX002", "mid-step": None},
    ),
    "a placeholder as a text block of a long result": (
        _result("c1", [{"type": "text", "text": "aborted", "cache_control": {"type": "ephemeral", "x": "é" * 500}}]),
        {"quiet": "APX002", "mid-step": "APX006", "continued": "APX006"},
    ),
    "a call id given twice": (_line({"role": "assistant", "content": [_use("d"), _use("d")]}), "APX005"),
    "a call id of a waiting call": (_line({"role": "assistant", "content": [_use("c1")]}), {"continued": "APX005"}),
    "a call id of a waiting call, after a new one": (
        _line({"role": "assistant", "content": [_use("c3"), _use("c2")]}),
        {"continued": "APX005"},
    ),
    "two new calls": (_line({"role": "assistant", "content": [_use("c3"), _use("c4")]}), None),
    "a call without an id": (b'{"role":"assistant","content":[{"type":"tool_use","name":"a","input":{}}]}\n', None),
    "a call id null": (b'{"role":"assistant","content":[{"type":"tool_use","id":null,"name":"a"}]}\n', None),
    "a call id that is no string": (b'{"role":"assistant","content":[{"type":"tool_use","id":7,"name":"a"}]}\n', None),
    "a server tool": (
        _line(
            {
                "role": "assistant",
                "content": [
                    {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
                    {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []},
                ],
            }
        ),
        None,
    ),
    "a result in an assistant message": (_line({"role": "assistant", "content": [_block("c1")]}), None),
    "an escaped line end inside": (b'{"role":"user","content":"a\\nb"}\r\n', None),
    "a byte-order mark": (b'\xef\xbb\xbf{"role":"user","content":"x"}\n', "APX101"),
}


# Where an odd line is placed, and its line number.
_AT = {"quiet": 1, "mid-step": 3, "continued": 2}


def _placed(odd: bytes, where: str) -> bytes:
    if where == "quiet":
        return _HEAD + odd + _CUT
    if where == "continued":
        # Right after calls c1 and c2 (an assistant message continues the reply), then their results.
        return _HEAD + _call("c1", "c2") + odd + _result("c2") + _result("c1") + _CUT
    # Inside a step: calls c1 and c2, the result for c2, the odd line, the result for c1.
    return _HEAD + _call("c1", "c2") + _result("c2") + odd + _result("c1") + _CUT


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("where", list(_AT))
@pytest.mark.parametrize("name", list(ODD_LINES))
def test_an_odd_line_past_the_head_is_reported_as_reading_it_whole_does(name: str, where: str, repair: bool) -> None:
    odd, code = ODD_LINES[name]
    data = _placed(odd, where)
    said = _same_both_ways(data, head=64, repair=repair)
    at = _HEAD.count(b"\n") + _AT[where]
    findings = odd_line_findings(said, at, code, where, repair)
    if findings is None:
        return


@pytest.mark.parametrize("case", sorted(p.parent for p in CASES.glob("*/input.jsonl")), ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [16, 256, 1 << 16])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_golden_anthropic_cases_say_the_same_through_the_quiet_loop(case: Path, chunk: int, repair: bool) -> None:
    options = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
    assert options.get("input_format", "anthropic") == "anthropic"
    data = (case / "input.jsonl").read_bytes()
    for drop in (False, True):
        _same_both_ways(data, chunk=chunk, repair=repair, drop=drop)
        # And after a quiet head, so that each case is read from a quiet engine.
        _same_both_ways(_HEAD + data, head=64, chunk=chunk, repair=repair, drop=drop)


_ODD = st.sampled_from([odd for odd, _code in ODD_LINES.values()])


@st.composite
def _with_odd_lines(draw) -> bytes:
    """A drawn Anthropic history, now and then with odd lines, long results and bytes broken."""
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    lines = [orjson.dumps(line) + newline for line in draw(strategies.by_format()["anthropic"].histories())]
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(0, len(lines))), draw(_ODD))
    if lines and draw(st.booleans()):
        # A long result, longer than any marker: taken without being read.
        lines.append(_result("toolu_0_0_0", "é" * draw(st.integers(100, 400))))
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


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), marker=st.sampled_from([DEFAULT_MARKER, "custom marker", 'a "quoted" \\ marker']), repair=st.booleans())
def test_drawn_histories_with_a_custom_marker_say_the_same(data, marker: str, repair: bool) -> None:
    history = data.draw(strategies.by_format()["anthropic"].histories())
    # Results that are the custom marker, or the default one (plain text under another marker).
    history.insert(data.draw(st.integers(0, len(history))), {"role": "user", "content": [_block("toolu_0_0_0", marker)]})
    raw = _HEAD + b"".join(_line(line) for line in history)
    _same_both_ways(raw, head=64, marker=marker, repair=repair)


# A stretch of steps of every kind the quiet loop takes: one call, parallel
# calls answered out of order in one message or over two, results followed by
# the user's next words, a reply continued in a second assistant message.
_STEPS = b"".join(
    _call(f"a{i}")
    + _result(f"a{i}")
    + _call(f"p{i}", f"q{i}")
    + _user_blocks(*(orjson.dumps(_block(c)) for c in (f"q{i}", f"p{i}")))
    + _call(f"s{i}", f"t{i}")
    + _result(f"t{i}")
    + _result(f"s{i}", "é" * 300)
    + _call(f"u{i}")
    + _line({"role": "assistant", "content": [_use(f"v{i}")]})
    + _line({"role": "user", "content": [_block(f"v{i}"), _block(f"u{i}"), {"type": "text", "text": "next"}]})
    + _reply(f"reply {i}")
    + _line({"role": "user", "content": f"prompt {i}"})
    for i in range(300)
)


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_a_quiet_stretch_is_not_classified(repair: bool, monkeypatch) -> None:
    classified = []
    classify = AnthropicAdapter.classify
    monkeypatch.setattr(AnthropicAdapter, "classify", lambda self, obj: classified.append(obj) or classify(self, obj))
    data = _HEAD + _STEPS + _CUT
    findings, _edits, _unparsed, lines, out = run_check(data, "anthropic", typed=True, head=64, chunk=1 << 16, repair=repair)
    assert lines == data.count(b"\n") + 1
    assert [(f["code"], f.get("call_id")) for f in findings] == [("APX001", "z")]
    # The engine sees the 64 head lines, the cut call and the line that cuts it
    # (and in a repair the self-check, which classifies for itself, sees them
    # again, and the record).
    assert len(classified) == (64 + 2) * (1 + repair) + repair
    if repair:
        cut = data.rindex(b"\n") + 1
        assert out == data[:cut] + _result("z", DEFAULT_MARKER) + data[cut:]


def test_the_adapters_last_role_is_kept_for_every_line_read_whole(monkeypatch) -> None:
    """The adapter's one state (the previous role) is, at each line it reads, what reading every line would make it."""
    seen: dict[bool, dict[bytes, object]] = {True: {}, False: {}}
    typed = [True]
    classify = AnthropicAdapter.classify

    def spy(self, obj):
        seen[typed[0]].setdefault(orjson.dumps(obj), self._last_role)
        return classify(self, obj)

    monkeypatch.setattr(AnthropicAdapter, "classify", spy)
    # Steps read whole again (held, then a deviation) right after a quiet stretch whose last line is each role.
    data = _HEAD
    for n in range(4):
        tail = [_reply(f"r{n}"), _line({"role": "system", "content": f"s{n}"}), _line({"role": "user", "content": f"u{n}"}), b""][
            n
        ]
        for kind in range(3):
            k = f"{n}-{kind}"
            # A reply before the step: the role the adapter holds when the step ends must be the result's.
            data += _reply(f"pre {k}") + _call(f"k{k}") + _result(f"k{k}") + tail
            if kind == 0:  # a reply continued with a call id already waiting (APX005)
                data += _call(f"x{k}") + _line({"role": "assistant", "content": [{"type": "text", "text": k}, _use(f"x{k}")]})
            elif kind == 1:  # a stray result
                data += _call(f"y{k}") + _result(f"ghost{k}")
            else:  # a reply continued, then a placeholder
                data += _call(f"w{k}") + _line({"role": "assistant", "content": k}) + _result(f"w{k}", "aborted")
            data += _line({"role": "user", "content": f"next {k}"})
    for typed[0] in (True, False):
        run_check(data, "anthropic", typed=typed[0], head=64)
    assert seen[True] and len(seen[True]) < len(seen[False])
    for line, role in seen[True].items():
        assert role == seen[False][line], line


def _take_all(lines: list[dict], marker: str = DEFAULT_MARKER) -> list[int]:
    quiet_lines = AnthropicQuietLines(AnthropicAdapter(marker=marker))
    step = Step()
    return [quiet_lines.take(quiet_lines.decode(orjson.dumps(line)), step) for line in lines]


def test_take_follows_a_step() -> None:
    lines = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": [_use("a"), _use("b")]},
        {"role": "assistant", "content": [_use("c")]},
        {"role": "user", "content": [_block("b")]},
        {"role": "user", "content": [_block("a"), _block("c"), {"type": "text", "text": "t"}]},
        {"role": "assistant", "content": "done"},
    ]
    assert _take_all(lines) == [QUIET, OPENS, HELD, HELD, ENDS, QUIET]


@pytest.mark.parametrize(
    "content",
    [
        DEFAULT_MARKER,
        *PLACEHOLDER_TEXTS,
        [{"type": "text", "text": DEFAULT_MARKER}],
        [{"type": "output_text", "text": "aborted"}],
    ],
)
def test_take_leaves_the_marker_and_placeholders_to_the_engine(content: object) -> None:
    lines = [{"role": "assistant", "content": [_use("a")]}, {"role": "user", "content": [_block("a", content)]}]
    assert _take_all(lines) == [OPENS, DEVIATES]


def test_take_leaves_a_custom_marker_to_the_engine_and_takes_the_default_one_as_text() -> None:
    lines = [{"role": "assistant", "content": [_use("a")]}, {"role": "user", "content": [_block("a", "stop")]}]
    assert _take_all(lines, marker="stop") == [OPENS, DEVIATES]
    lines[1] = {"role": "user", "content": [_block("a", DEFAULT_MARKER)]}
    assert _take_all(lines, marker="stop") == [OPENS, ENDS]
