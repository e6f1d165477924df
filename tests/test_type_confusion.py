"""Transcripts are untrusted: any JSON type may stand anywhere, and no adapter trips on it.

For every format the registry knows, lines from its golden cases and its
hypothesis strategy are damaged by putting a value of another JSON type at a
random path (including the keys the adapters read, added where they are
missing). Then:

- the stream pass, with and without a sink, raises nothing: the safety net in
  ``stream.run`` (an ``InputError`` that stops the file) never fires on input,
  and a fix still writes every line it does not list as replaced or removed;
- every detector, asked directly (without the registry's own net), raises
  nothing, and ``detect_format`` raises only its two documented refusals;
- ``check_messages`` and ``repair_messages`` raise nothing on the same lines
  as messages, and a repair keeps every message it does not list.
"""

from __future__ import annotations

import copy
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apx_doctor import jsonl, stream
from apx_doctor.api import UnrecognisedHistoryError, check_messages, repair_messages
from apx_doctor.doctor import RepairOptions
from apx_doctor.errors import InputError
from apx_doctor.formats import AmbiguousFormatError, UnknownFormatError, adapters, detect_format, format_names

import strategies

CASES = Path(__file__).resolve().parent / "cases"

# Keys some adapter reads: added where missing, so a wrong type meets every lookup.
READ_KEYS = (
    "role", "type", "payload", "message", "content", "tool_calls", "tool_call_id", "id", "call_id",
    "tool_use_id", "uuid", "parentUuid", "logicalParentUuid", "messages", "function", "custom", "name",
    "arguments", "input", "output", "action", "text", "source", "isSidechain", "agentId", "sessionId",
    "subtype", "isMeta", "requestId", "timestamp", "execution", "caller", "toolset_name",
)  # fmt: skip
# Strings the adapters compare against: a string put where a dict or list was
# should often look meaningful, not only random.
MEANINGFUL = (
    "user", "assistant", "tool", "system", "developer", "function", "message", "text", "tool_use",
    "tool_result", "server_tool_use", "function_call", "function_call_output", "custom_tool_call",
    "local_shell_call", "local_shell_call_output", "tool_search_call", "tool_search_output", "client",
    "compaction", "response_item", "compacted", "event_msg", "compact_boundary", "summary", "call_1",
    "not run: the turn was interrupted", "aborted", "<environment_context>", "",
)  # fmt: skip
# Integers that orjson reads exactly: longer ones make a rewritten line a
# (deliberate) refusal to write, which is not what this test is about.
_LONG_INTEGER = re.compile(rb"[0-9]{19,}")

_KINDS = ("null", "bool", "int", "float", "string", "list", "dict")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "dict"


_STRINGS = st.one_of(st.sampled_from(MEANINGFUL), st.text(max_size=8))
_SCALARS = {
    "null": st.none(),
    "bool": st.booleans(),
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "string": _STRINGS,
}
_ANY = st.recursive(
    st.one_of(*_SCALARS.values()),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(READ_KEYS) | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_VALUES = {
    **_SCALARS,
    "list": st.lists(_ANY, max_size=3),
    "dict": st.dictionaries(st.sampled_from(READ_KEYS) | st.text(max_size=4), _ANY, max_size=3),
}


def _other_than(value: Any) -> st.SearchStrategy[Any]:
    kind = _kind(value)
    return st.sampled_from([k for k in _KINDS if k != kind]).flatmap(_VALUES.__getitem__)


_MISSING = object()


def _slots(value: Any, path: tuple = ()) -> tuple[list[tuple[tuple, Any]], list[tuple]]:
    """Where a value can be put in ``value``: (path, the value there now) for what is
    there, and the paths of the read keys a dict lacks."""
    present: list[tuple[tuple, Any]] = [(path, value)]
    missing: list[tuple] = []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        more, lacking = _slots(child, (*path, key))
        present += more
        missing += lacking
    if isinstance(value, dict):
        missing += [(*path, key) for key in READ_KEYS if key not in value]
    return present, missing


def _put(line: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = line
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return line


@cache
def _golden(fmt: str) -> tuple[tuple[Any, ...], ...]:
    """The parsed lines of each golden case of ``fmt`` (lines that are no JSON left out)."""
    found = []
    for path in sorted((CASES / fmt).glob("*/input.jsonl")):
        raws = path.read_bytes().removeprefix(jsonl.BOM).splitlines(keepends=True)
        lines = [jsonl.parse(raw) for raw in raws if not _LONG_INTEGER.search(raw)]
        found.append(tuple(x for x in lines if not isinstance(x, jsonl.Unparsed)))
    return tuple(x for x in found if x)


def _sources(fmt: str) -> st.SearchStrategy[list[Any]]:
    choices = []
    if _golden(fmt):
        choices.append(st.sampled_from(_golden(fmt)).map(list))
    module = strategies.by_format().get(fmt)
    if module is not None:
        choices.append(module.histories())
    if not choices:
        pytest.skip(f"no golden case or strategy for format {fmt!r}")
    # Now and then another format's lines: --input-format may name the wrong one.
    others = [lines for name in FORMATS if name != fmt for lines in _golden(name)]
    if others:
        choices.append(st.sampled_from(others).map(list))
    return st.one_of(choices)


@st.composite
def damaged(draw, fmt: str) -> list[Any]:
    """Lines of ``fmt`` with one to four values replaced by values of other types."""
    # A copy: strategies share objects (module constants), and this edits in place.
    lines = copy.deepcopy(draw(_sources(fmt)))
    if not lines:
        return lines
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        present, missing = _slots(lines[index])
        # Mostly a value that is there: the missing keys of every dict outnumber them.
        if missing and draw(st.integers(0, 3)) == 0:
            path, current = draw(st.sampled_from(missing)), _MISSING
        else:
            path, current = draw(st.sampled_from(present))
        # A missing key gets any type (a string too: cheap, and it meets the same reads).
        value = draw(st.sampled_from(_KINDS).flatmap(_VALUES.__getitem__) if current is _MISSING else _other_than(current))
        lines[index] = _put(lines[index], path, copy.deepcopy(value))
    return lines


def _is_subsequence(needles: list, haystack: list, same=lambda a, b: a == b) -> bool:
    it = iter(haystack)
    return all(any(same(n, h) for h in it) for n in needles)


def _untouched(items: list, edits: list) -> list:
    touched = {e.line for e in edits if e.action in ("replace", "remove")}
    return [item for n, item in enumerate(items, 1) if n not in touched]


FORMATS = format_names()
# Fast by default; APX_TYPE_CONFUSION_EXAMPLES=2000 runs it hard.
EXAMPLES = int(os.environ.get("APX_TYPE_CONFUSION_EXAMPLES", "200"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data(), drop=st.booleans())
def test_stream_reads_any_type_anywhere(fmt: str, data: st.DataObject, drop: bool) -> None:
    lines = data.draw(damaged(fmt))
    raws = [jsonl.dumps(line) + b"\n" for line in lines]
    config = stream.StreamConfig(input_format=fmt, repair=RepairOptions(drop_orphans=drop))

    try:
        stream.run(raws, config)
    except InputError as refusal:
        # Damage can make the lines another format's for sure: then the named
        # format refuses to pass them as clean, and says which one they look like.
        assert f"the file holds no {fmt} entries; it looks like " in str(refusal)
        return
    sink = stream.MemorySink()
    result = stream.run(raws, config, sink)

    written = b"".join(sink.parts).splitlines(keepends=True)
    assert _is_subsequence(_untouched(raws, result.edits), written)


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_detectors_read_any_type_anywhere(fmt: str, data: st.DataObject) -> None:
    samples = data.draw(damaged(fmt))
    for adapter in adapters():
        adapter.detect(samples)  # no exception, without the registry's net
    try:
        detect_format(samples)
    except (AmbiguousFormatError, UnknownFormatError):
        pass  # the detector's documented refusals


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data(), drop=st.booleans())
def test_library_reads_any_type_anywhere(fmt: str, data: st.DataObject, drop: bool) -> None:
    messages = data.draw(damaged(fmt))

    try:
        check_messages(messages, format=fmt)
    except UnrecognisedHistoryError as refusal:
        # Damage made the list another format's for sure: the named one refuses, naming it.
        assert f"the list holds no {fmt} messages; it looks like " in str(refusal)
        return
    result = repair_messages(messages, format=fmt, drop_orphans=drop)

    assert _is_subsequence(_untouched(messages, result.edits), result.messages, lambda a, b: a is b)


@pytest.mark.parametrize("entry_point", [check_messages, repair_messages])
def test_library_backstop_names_the_message(entry_point, monkeypatch: pytest.MonkeyPatch) -> None:
    """Should an adapter still trip, a runtime gets a ValueError naming the message, not a TypeError."""
    from apx_doctor.formats.chat import ChatAdapter

    classify = ChatAdapter.classify

    def tripping(self, obj):
        if obj.get("content") == "trip":
            raise TypeError("unhashable type: 'dict'")
        return classify(self, obj)

    monkeypatch.setattr(ChatAdapter, "classify", tripping)
    # A result the engine must see (it answers nothing): the library skips
    # classifying stretches the chat adapter proves clean.
    messages = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "trip"}]
    with pytest.raises(ValueError, match=r"^the message at index 1: the chat reader cannot handle it \(TypeError") as caught:
        entry_point(messages)
    assert isinstance(caught.value.__cause__, TypeError)


# --- what a wrong-typed line still says ------------------------------------------
# Per format: a user prompt, an assistant call and a tool result, with the id and
# the result's content given.


def _chat(call_id: Any, content: Any) -> list[dict]:
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def _anthropic(call_id: Any, content: Any) -> list[dict]:
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}]},
    ]


def _responses(call_id: Any, content: Any) -> list[dict]:
    return [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": content},
    ]


def _codex(call_id: Any, content: Any) -> list[dict]:
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    return [
        {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item", "payload": p}
        for p in [prompt, *_responses(call_id, content)[1:]]
    ]


def _claude_code(call_id: Any, content: Any) -> list[dict]:
    head = {"sessionId": "s", "isSidechain": False}
    return [
        {"type": "user", "uuid": "u1", "parentUuid": None, **head, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", **head,
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "f", "input": {}}]}},
        {"type": "user", "uuid": "r1", "parentUuid": "a1", **head,
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}]}},
    ]  # fmt: skip


def _prompt(fmt: str) -> dict:
    """A second user prompt, which closes what is still pending."""
    first = TRANSCRIPTS[fmt]("c1", "x")[0]
    return copy.deepcopy(first) | ({"uuid": "u2", "parentUuid": "r1"} if fmt == "claude-code" else {})


TRANSCRIPTS = {"chat": _chat, "anthropic": _anthropic, "responses": _responses, "codex": _codex, "claude-code": _claude_code}


def _codes(fmt: str, lines: list[dict]) -> list[tuple]:
    findings = check_messages(lines, format=fmt)
    result = stream.run([jsonl.dumps(x) + b"\n" for x in lines], stream.StreamConfig(input_format=fmt))
    assert [(f.code, f.line, f.call_id) for f in result.findings] == [(f.code, f.line, f.call_id) for f in findings]
    return [(f.code, f.line, f.call_id) for f in findings]


@pytest.mark.parametrize("fmt", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("odd_id", [{"id": "c1"}, ["c1"], 1, None, True])
def test_a_result_whose_id_is_no_string_answers_nothing(fmt: str, odd_id: Any) -> None:
    call, result = TRANSCRIPTS[fmt]("c1", "done")[:2], TRANSCRIPTS[fmt](odd_id, "done")[2]
    assert _codes(fmt, [*call, result, _prompt(fmt)]) == [("APX001", 2, "c1"), ("APX002", 3, None)]


@pytest.mark.parametrize("fmt", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("odd_id", [{"id": "c1"}, ["c1"], 7, True])
def test_a_call_whose_id_is_no_string_is_no_call(fmt: str, odd_id: Any) -> None:
    lines = TRANSCRIPTS[fmt](odd_id, "done")
    # Its result answers nothing either: neither an APX001 nor a repair.
    assert _codes(fmt, [*lines[:2], _prompt(fmt)]) == []
    assert not repair_messages([*lines[:2], _prompt(fmt)], format=fmt).changed


@pytest.mark.parametrize("fmt", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("content", [{"text": "done"}, [1, [2]], 3.5, True, None, [{"type": {"x": 1}}]])
def test_a_result_with_odd_content_still_answers_its_call(fmt: str, content: Any) -> None:
    assert _codes(fmt, [*TRANSCRIPTS[fmt]("c1", content), _prompt(fmt)]) == []


def test_a_dataset_row_with_odd_types_is_checked_message_by_message() -> None:
    messages = [*_chat("c1", "done")[:2], {"role": {"x": 1}, "content": "?"}, {"role": "tool", "tool_call_id": ["c1"]}]
    row = {"messages": [*messages, {"role": "user", "content": "next"}]}
    findings = check_messages([row], format="datasets")
    assert [(f.code, f.line, f.index, f.call_id) for f in findings] == [
        ("APX001", 1, 1, "c1"),
        ("APX104", 1, 2, None),
        ("APX002", 1, 3, None),
    ]
