"""A datasets check's quiet rows say exactly what reviewing every row whole says.

Past the lines auto-detection reads, a check of a dataset types a few fields
of each row (``formats._datasets_quiet``) and takes a row without reviewing
it only where they prove the review would find nothing and change nothing.
Every file here is checked (and fixed) twice: through the quiet loop, and with
it turned off (each row parsed and reviewed); findings, edits, line counts,
output bytes and the errors that stop a run must be the same
(``quiet_support.same_both_ways``). The proof itself is tested too: a row it
takes is read by the review as chat, and gets nothing from it.
"""

from __future__ import annotations

import copy

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiet_support import broken, golden_cases, run_check, same_both_ways

from apx_doctor.doctor import RepairOptions
from apx_doctor.formats import datasets
from apx_doctor.formats._datasets_quiet import DatasetsQuietLines
from apx_doctor.formats.base import DEFAULT_MARKER
from apx_doctor.formats.chat import ChatAdapter
from apx_doctor.formats.datasets import DatasetsAdapter
from apx_doctor.quiet import QUIET, Step

import strategies

_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def _same_both_ways(data: bytes, **options) -> list:
    return same_both_ways(data, "datasets", **options)


def _call(*ids: str, arguments: object = '{"cmd":"ls"}') -> dict:
    calls = [{"id": i, "type": "function", "function": {"name": "bash", "arguments": arguments}} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _result(call_id: str, content: object = "ok") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _messages(*extra: dict) -> list[dict]:
    """A clean conversation: a system prompt, a question, two answered steps, an answer; then ``extra``."""
    return [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        _call("a", "b"),
        _result("b"),
        _result("a"),
        _call("c"),
        _result("c", "é" * 300),
        {"role": "assistant", "content": "done"},
        *extra,
    ]


def _row(messages: list, **keys: object) -> bytes:
    return orjson.dumps({"messages": messages, "tools": _TOOLS, **keys}) + b"\n"


_CLEAN = _row(_messages())
_HEAD = _CLEAN * 3
_TAIL = _CLEAN * 3


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _raw_row(messages: bytes, tools: bytes = b"[]") -> bytes:
    return b'{"messages":' + messages + b',"tools":' + tools + b"}\n"


_CLEAN_MESSAGES = orjson.dumps(_messages())

# Odd rows, each with the code the review gives it (None: whatever it gives, asserted the same both ways).
ODD_ROWS = {
    "clean": (_CLEAN, None),
    "invalid UTF-8 in a result": (_CLEAN.replace("é".encode(), b"\xff\xfe", 1), "APX101"),
    "invalid UTF-8 in the tools": (_raw_row(_CLEAN_MESSAGES, b'["\xff"]'), "APX101"),
    "tools nested deeper than orjson reads": (_raw_row(_CLEAN_MESSAGES, _deep(1100)), "APX101"),
    "tools nested deep, but not too deep": (_raw_row(_CLEAN_MESSAGES, _deep(1000)), None),
    "tools long and deep": (_raw_row(_CLEAN_MESSAGES, b"[" + b'"x",' * 700 + _deep(1100) + b"]"), "APX101"),
    "arguments nested deeper than orjson reads": (
        _raw_row(_CLEAN_MESSAGES.replace(b'"{\\"cmd\\":\\"ls\\"}"', _deep(1100), 1)),
        "APX101",
    ),
    "arguments as an object": (_row(_messages(_call("d", arguments={"cmd": "ls"}), _result("d"))), None),
    "content nested deeper than orjson reads": (
        _raw_row(_CLEAN_MESSAGES.replace(b'"content":"u"', b'"content":' + _deep(1100), 1)),
        "APX101",
    ),
    "a result nested deeper than orjson reads": (
        _raw_row(_CLEAN_MESSAGES.replace(b'"content":"ok"', b'"content":' + _deep(1100), 1)),
        "APX101",
    ),
    "LLaMA-Factory v1 parts among chat calls": (
        _row(
            _messages(
                _call("v"),
                {"role": "tool", "tool_call_id": "v", "content": [{"type": "text", "value": "r"}]},
                {"role": "user", "content": "?"},
            )
        ),
        None,
    ),
    "NaN in the tools": (_raw_row(_CLEAN_MESSAGES, b"[NaN]"), "APX101"),
    "a big integer in the tools": (_raw_row(_CLEAN_MESSAGES, b"[123456789012345678901234567890]"), None),
    "a key given twice, the last with a dangling call": (
        _CLEAN[:-2] + b',"messages":' + orjson.dumps(_messages(_call("x"), {"role": "user", "content": "?"})) + b"}\n",
        "APX001",
    ),
    "a dangling call mid-row": (_row(_messages(_call("x"), {"role": "user", "content": "?"})), "APX001"),
    "a parallel call missing one result": (
        _row(_messages(_call("x", "y"), _result("y"), {"role": "user", "content": "?"})),
        "APX001",
    ),
    "the training target": (_row(_messages(_call("target"))), None),
    "a stray result": (_row(_messages(_result("ghost"))), "APX002"),
    "a second result": (_row(_messages(_call("d"), _result("d"), _result("d"))), "APX003"),
    "a call id given twice": (_row(_messages(_call("d", "d"), _result("d"))), "APX005"),
    "a placeholder result": (_row(_messages(_call("d"), _result("d", "aborted"))), "APX006"),
    "the marker as a result": (_row(_messages(_call("d"), _result("d", DEFAULT_MARKER))), None),
    "a null result": (_row(_messages(_call("d"), _result("d", None))), None),
    "a result without content": (_row(_messages(_call("d"), {"role": "tool", "tool_call_id": "d"})), None),
    "a result of text parts": (_row(_messages(_call("d"), _result("d", [{"type": "text", "text": "aborted"}]))), None),
    "an unknown role": (_row(_messages({"role": "critic", "content": "x"})), "APX104"),
    "a legacy function result within a step": (
        _row(_messages(_call("d"), {"role": "function", "name": "f", "content": "x"}, _result("d"))),
        None,
    ),
    "a call before the first user": (_row([_call("p"), _result("p"), *_messages()[1:]]), None),
    "a result before the first user": (_row([_result("p"), *_messages()[1:]]), None),
    "no user at all": (_row([{"role": "system", "content": "s"}, _call("p"), _result("p")]), None),
    "no call at all": (_row([{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]), None),
    "no messages": (_row([]), None),
    "a message without content before the first call": (_row([{"role": "user"}, *_messages()[1:]]), None),
    "the first call past what detection reads": (
        _row([{"role": "user", "content": "u"}] * 64 + [_call("x"), {"role": "user", "content": "?"}]),
        None,
    ),
    "the first call at the last message detection reads": (
        _row([{"role": "user", "content": "u"}] * 63 + [_call("x"), {"role": "user", "content": "?"}]),
        "APX001",
    ),
    "an unknown row key": (_row(_messages(_call("x"), {"role": "user", "content": "?"}), id="row-7"), "APX001"),
    "an unknown message key": (_row(_messages({"role": "assistant", "content": "x", "reasoning_content": "r"})), None),
    "an unknown call key": (
        _row(_messages({"role": "assistant", "tool_calls": [{"id": "d", "custom": {"name": "f"}}]}, _result("d"))),
        None,
    ),
    "a call id that is no string": (_row(_messages({"role": "assistant", "tool_calls": [{"id": 7}]})), None),
    "tool_calls null": (_row(_messages({"role": "assistant", "content": "x", "tool_calls": None})), None),
    "content parts": (_row(_messages({"role": "user", "content": [{"type": "text", "text": "hi"}]})), None),
    "Anthropic messages with a dangling call": (
        _row(
            [
                {"role": "user", "content": "u"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash", "input": {}}]},
                {"role": "user", "content": "next"},
            ]
        ),
        "APX001",
    ),
    "Responses items": (
        _row([{"role": "user", "content": "u"}, {"type": "function_call", "call_id": "r", "name": "f", "arguments": "{}"}]),
        None,
    ),
    "a conversations row": (
        orjson.dumps({"conversations": _messages(_call("x"), {"role": "user", "content": "?"})}) + b"\n",
        "APX001",
    ),
    "a line that is no row": (b'{"role":"user","content":"x"}\n', "APX104"),
    "a blank line": (b"\n", "APX105"),
    "CRLF": (_CLEAN[:-1] + b"\r\n", None),
}


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
@pytest.mark.parametrize("name", list(ODD_ROWS))
def test_an_odd_row_past_the_head_is_reported_as_reviewing_it_whole_does(name: str, repair: bool) -> None:
    odd, code = ODD_ROWS[name]
    said = _same_both_ways(_HEAD + odd + _TAIL, head=2, repair=repair)
    if said[0] == "stopped":
        assert repair and said[1] == "SelfCheckError"
        return
    at = _HEAD.count(b"\n") + 1
    codes = {f["code"] for f in said[0] if f["line"] == at}
    if code is not None:
        assert code in codes
    # The clean rows around it give nothing.
    assert {f["line"] for f in said[0]} <= {at}


@pytest.mark.parametrize("case", golden_cases("datasets"), ids=lambda c: c.name)
@pytest.mark.parametrize("chunk", [16, 256, 1 << 16])
@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_golden_datasets_cases_say_the_same_through_the_quiet_loop(case, chunk: int, repair: bool) -> None:
    for drop in (False, True):
        _same_both_ways((case / "input.jsonl").read_bytes(), chunk=chunk, repair=repair, drop=drop)


@pytest.mark.parametrize("repair", [False, True], ids=["check", "fix"])
def test_clean_rows_are_not_reviewed(repair: bool, monkeypatch) -> None:
    reviewed = []
    review = DatasetsAdapter.review_line
    monkeypatch.setattr(DatasetsAdapter, "review_line", lambda self, n, obj, o: reviewed.append(n) or review(self, n, obj, o))
    dangling = _row(_messages(_call("x"), {"role": "user", "content": "?"}))
    target = _row(_messages(_call("target")))  # the example's training target: left open, as the review leaves it
    data = _CLEAN * 199 + target + dangling + _CLEAN * 200
    findings, _edits, _unparsed, lines, out = run_check(data, "datasets", typed=True, head=2, chunk=1 << 16, repair=repair)
    assert lines == 401
    assert [(f["code"], f["line"], f.get("call_id")) for f in findings] == [("APX001", 201, "x")]
    # The head, and the row with something to repair (in a fix, each also read back by the self-check).
    assert reviewed == ([1, 1, 2, 2, 201, 201] if repair else [1, 2, 201])
    if repair:
        repaired = orjson.loads(out.splitlines()[200])["messages"]
        assert repaired[-2] == {"role": "tool", "tool_call_id": "x", "content": DEFAULT_MARKER}
        assert out.replace(out.splitlines(keepends=True)[200], b"") == data.replace(dangling, b"")


# --- the proof: a row taken is read as chat and needs nothing --------------------------------

_TAKE = DatasetsQuietLines(DatasetsAdapter())


def _taken(row: dict) -> bool:
    try:
        line = _TAKE.decode(orjson.dumps(row))
    except msgspec.MsgspecError:
        return False
    return _TAKE.take(line, Step()) == QUIET


_OTHER_MESSAGES = [
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
    {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
    {"type": "function_call", "call_id": "r", "name": "f", "arguments": "{}"},
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "b", "name": "f", "input": {}}}]},
    {"role": "user"},
    {"role": "assistant"},
    {"from": "human", "value": "x"},
    {"role": "tool", "content": "no id"},
    {"role": "assistant", "content": "x", "tool_calls": None},
    {"role": "assistant", "content": "x", "tool_calls": []},
    {"role": "developer", "content": "d"},
]


@st.composite
def _rows(draw) -> dict:
    """A drawn chat row, now and then with a message of another kind, one dropped, or calls moved late."""
    rows = [r for r in draw(strategies.by_format()["datasets"].histories()) if "messages" in r]
    row = copy.deepcopy(rows[0]) if rows else {"messages": _messages()}
    messages = row["messages"]
    for _ in range(draw(st.integers(0, 2))):
        change = draw(st.sampled_from(["insert", "drop", "late"]))
        if change == "insert":
            messages.insert(draw(st.integers(0, len(messages))), draw(st.sampled_from(_OTHER_MESSAGES)))
        elif change == "drop" and messages:
            del messages[draw(st.integers(0, len(messages) - 1))]
        elif change == "late":
            messages[0:0] = [{"role": "user", "content": "u"}] * draw(st.sampled_from([60, 62, 63, 64]))
    return row


_ANTHROPIC_FIRST = tuple(sorted(datasets._message_formats(), key=lambda a: a.name != "anthropic"))


@pytest.mark.parametrize("ranking", ["as registered", "anthropic first"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row=_rows())
def test_a_row_taken_is_read_as_chat_and_needs_nothing(ranking: str, row: dict) -> None:
    """Whatever format detection ranks first where none is certain (the proof must not depend on it)."""
    if not _taken(row):
        return
    with pytest.MonkeyPatch.context() as patch:
        if ranking == "anthropic first":
            patch.setattr(datasets, "_message_formats", lambda: _ANTHROPIC_FIRST)
        assert datasets._inner_adapter(row["messages"]) is ChatAdapter
        review = DatasetsAdapter().review_line(1, row, RepairOptions())
    assert (review.findings, review.edits, review.replacement) == ([], [], None)


def test_the_proof_takes_the_rows_it_should() -> None:
    # Not vacuous: clean chat rows are taken, and each odd row the review reports on is not.
    assert _taken({"messages": _messages(), "tools": _TOOLS})
    assert _taken({"messages": [{"role": "user", "content": "u"}] * 62 + [_call("x"), _result("x")]})
    for name, (odd, code) in ODD_ROWS.items():
        try:
            row = orjson.loads(odd)
        except orjson.JSONDecodeError:
            continue  # bytes orjson refuses: the chunk's UTF-8 check or the depth bound sends them the general way
        if code is not None and type(row) is dict:
            assert not _taken(row), name


@st.composite
def _files(draw) -> bytes:
    """Drawn rows and odd ones, with bytes broken now and then."""
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    lines = [orjson.dumps(row) + newline for row in draw(st.lists(_rows(), min_size=1, max_size=5))]
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from([odd for odd, _code in ODD_ROWS.values()])))
    return broken(draw, lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_files(),
    head=st.sampled_from([1, 2, 5]),
    chunk=st.sampled_from([1, 40, 300, 1 << 16]),
    repair=st.booleans(),
    drop=st.booleans(),
)
def test_drawn_datasets_say_the_same_through_the_quiet_loop(data: bytes, head: int, chunk: int, repair: bool, drop: bool) -> None:
    _same_both_ways(data, head=head, chunk=chunk, piece=8, repair=repair, drop=drop)
