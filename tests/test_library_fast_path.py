"""``repair_messages`` skips what an adapter proves clean, and says exactly what the plain engine path says.

The chat adapter's ``clean_run`` lets the library feed the engine only the
messages that may need it. Two oracles check the result, for every format the
library accepts: ``HistoryDoctor.entry`` for each message (the general path,
which the streaming pass also takes), and the library's own plain loop (the
chat adapter with ``clean_run`` switched off). Messages, inserted records,
removals, findings and edits must be equal, and every kept message must be the
very object the caller passed in.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apx_doctor import DEFAULT_MARKER, api, engine, repair_messages
from apx_doctor.doctor import HistoryDoctor, RepairOptions
from apx_doctor.formats import adapter_class
from apx_doctor.formats.chat import ChatAdapter

import strategies
from strategies.turns import call_turn


def _plain_doctor(messages: list, fmt: str, marker: str, **options: bool) -> Any:
    """The general path: ``HistoryDoctor.entry`` for every message, nothing inlined or skipped."""
    doctor = HistoryDoctor(adapter_class(fmt)(marker=marker), RepairOptions(**options))
    out: list = []
    inserted: list = []
    try:
        for number, message in enumerate(messages, 1):
            verdict = doctor.entry(number, message)
            if verdict is None:
                out.append(message)
                continue
            api._insert(out, inserted, verdict.insert)
            if verdict.replace is None:
                out.append(message)
            elif verdict.replace is not api.DROP:
                out.append(verdict.replace)
        verdict = doctor.end(len(messages) + 1)
    except api._ADAPTER_TROUBLE:
        return "trouble"
    if doctor.engine.starts_over:
        # No real user entry, but calls: the rule checks the whole list again from its start.
        return _plain_doctor(messages, fmt, marker, history_from_start=True, **options)
    if verdict is not None:
        api._insert(out, inserted, verdict.insert)
    return api._result(doctor, out, inserted)


def _library(messages: Any, fmt: str, marker: str, *, skip: bool, **options: bool) -> Any:
    with mock.patch.object(ChatAdapter, "clean_run", ChatAdapter.clean_run if skip else None):
        try:
            return repair_messages(messages, format=fmt, marker=marker, **options)
        except ValueError as exc:
            return ("trouble", str(exc))


def _same(result: Any, reference: Any, messages: list) -> None:
    if reference == "trouble":
        assert isinstance(result, tuple) and result[0] == "trouble"
        return
    assert not isinstance(result, tuple), result
    assert result.findings == reference.findings
    assert result.edits == reference.edits
    assert result.removed == reference.removed
    assert result.inserted == reference.inserted
    assert result.messages == reference.messages
    # Kept messages are the caller's objects; inserted records stand where they say.
    originals = {id(m) for m in messages}
    for got, want in zip(result.messages, reference.messages, strict=True):
        if id(want) in originals:
            assert got is want
    for i in result.inserted:
        assert result.messages[i.index] is i.record


def _all_ways(messages: list, fmt: str, marker: str = DEFAULT_MARKER, **options: bool) -> None:
    reference = _plain_doctor(messages, fmt, marker, **options)
    skipping = _library(messages, fmt, marker, skip=True, **options)
    _same(skipping, reference, messages)
    _same(_library(messages, fmt, marker, skip=False, **options), reference, messages)
    if isinstance(skipping, tuple):
        # The error names the same message as the plain loop's.
        assert skipping == _library(messages, fmt, marker, skip=False, **options)


# Chat messages of every kind the chat adapter meets, sound and broken. Call
# ids come from a small pool, so reused ids, duplicates, late results and
# orphans happen by themselves, and from a counter, so long clean runs do too.
_POOL = ["a", "b", "c"]
_TEXT = st.sampled_from(["ok", "", "x[bold]y", "é 中 🙂", "late output"])
_CONTENT = st.one_of(
    _TEXT,
    st.sampled_from(
        [
            DEFAULT_MARKER,
            "no result",
            "aborted",
            "[Tool result missing due to internal error]",
            None,
            7,
            {"text": "ok"},
            [{"type": "text", "text": DEFAULT_MARKER}],
            [{"type": "text", "text": "aborted"}],
            [{"type": "text", "text": "ok"}],
            [{"type": "text", "text": "ok"}, {"type": "text", "text": "more"}],
            [{"type": "image_url", "image_url": {"url": "x"}}],
            [{"type": "text", "text": 5}],
        ]
    ),
)
_RECORDS = st.sampled_from([DEFAULT_MARKER, "no result", "aborted"])
_ODD = st.sampled_from(
    [
        None,
        3,
        "user",
        ["role", "tool"],
        {},
        {"content": "no role"},
        {"role": None},
        {"role": ["tool"]},
        {"role": {"x": 1}},
        {"role": "robot", "content": "?"},
        {"role": "function", "name": "f", "content": "legacy"},
        {"role": "developer", "content": "dev"},
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": "hi", "tool_calls": None},
        {"role": "assistant", "content": "hi", "tool_calls": []},
        {"role": "assistant", "tool_calls": {"id": "a"}},
        {"role": "assistant", "tool_calls": "a"},
        {"role": "assistant", "tool_calls": [None, {"id": "a", "type": "function", "function": {"name": "f"}}]},
        {"role": "assistant", "tool_calls": [{"id": 1}, {"id": ["a"]}, {"function": {"name": "f"}}]},
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "custom", "custom": {"name": "g", "input": "x"}}]},
        {"role": "assistant", "tool_calls": [{"id": "a", "function": "not a dict"}]},
        {"role": "user", "content": "not a result", "tool_call_id": "a"},
        {"role": "function", "content": "not a result", "tool_call_id": "0"},
        {"role": "tool", "content": "no id"},
        {"role": "tool", "tool_call_id": None, "content": "ok"},
        {"role": "tool", "tool_call_id": ["a"], "content": "ok"},
        {"role": "tool", "tool_call_id": {"a": 1}, "content": "ok"},
        {"role": "tool", "tool_call_id": 1, "content": "ok"},
    ]
)


class _Mapping(dict):
    """A dict subclass: no entry of the chat format, however it looks."""


_KINDS = ["user", "sound", "sound", "broken", "result", "again", "odd", "final", "subclass"]


def _call(call_id: str, name: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


@st.composite
def _chat_history(draw) -> list:
    fresh = iter(range(10_000))
    lines: list = []
    called: list[str] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(_KINDS))
        if kind == "user":
            lines.append({"role": "user", "content": draw(_TEXT)})
        elif kind == "final":
            lines.append({"role": "assistant", "content": draw(_TEXT)})
        elif kind == "subclass":
            role = draw(st.sampled_from(["user", "tool", "assistant"]))
            lines.append(_Mapping(role=role, content="x", tool_call_id="a"))
        elif kind == "odd":
            lines.append(draw(_ODD))
        elif kind == "result":
            call_id = draw(st.sampled_from([*_POOL, "ghost", "0", "1"]))
            lines.append({"role": "tool", "tool_call_id": call_id, "content": draw(_CONTENT)})
        elif kind == "again" and called:
            # A second result for a call made earlier: a duplicate, late or orphan result.
            lines.append({"role": "tool", "tool_call_id": draw(st.sampled_from(called)), "content": draw(_TEXT)})
        elif kind in ("sound", "broken"):
            ids, order = call_turn(draw, fresh, _POOL, sound=kind == "sound")
            called += ids
            calls = [_call(i, draw(st.sampled_from(["read", "write"]))) for i in ids]
            lines.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call_id in order:
                # A sound turn's results may still be not-run records or placeholders.
                content = draw(_TEXT | _RECORDS) if kind == "sound" else draw(_CONTENT)
                lines.append({"role": "tool", "tool_call_id": call_id, "content": content})
    return lines


_OPTIONS = {
    "drop_orphans": st.booleans(),
    "keep_open_tail": st.booleans(),
    "marker": st.sampled_from([DEFAULT_MARKER, "no result", "aborted"]),
    "memory": st.sampled_from([1, 2, 3, engine.SETTLED_MEMORY]),
}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_chat_history(), **_OPTIONS)
def test_chat_histories_repair_the_same_with_clean_runs_skipped(
    messages: list, drop_orphans: bool, keep_open_tail: bool, marker: str, memory: int
) -> None:
    # A small settled memory makes its generations turn over inside clean runs
    # too, so duplicates, late results and orphans all depend on it.
    with mock.patch.object(engine, "SETTLED_MEMORY", memory):
        _all_ways(messages, "chat", marker, drop_orphans=drop_orphans, keep_open_tail=keep_open_tail)


@pytest.mark.parametrize("fmt", ["auto", *strategies.by_format()])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), drop_orphans=st.booleans(), keep_open_tail=st.booleans())
def test_every_format_repairs_the_same_as_the_plain_engine_path(
    fmt: str, data: st.DataObject, drop_orphans: bool, keep_open_tail: bool
) -> None:
    drawn = strategies.by_format()["chat" if fmt == "auto" else fmt]
    messages = data.draw(drawn.histories())
    if fmt == "auto":
        from apx_doctor.formats import detect_format

        fmt_for_reference = (detect_format(list(messages[:64])) or ChatAdapter).name
    else:
        fmt_for_reference = fmt
    options = {"drop_orphans": drop_orphans, "keep_open_tail": keep_open_tail}
    if hasattr(adapter_class(fmt_for_reference), "answer_in_place"):
        # Gemini CLI answers a call in its own record: the library repairs the
        # messages as ``repair_document`` repairs a session file's.
        _same_as_document(messages, fmt_for_reference, options)
        return
    reference = _plain_doctor(messages, fmt_for_reference, DEFAULT_MARKER, **options)
    for skip in (True, False):
        _same(_library(messages, fmt, DEFAULT_MARKER, skip=skip, **options), reference, messages)


def _same_as_document(messages: list, fmt: str, options: dict) -> None:
    from apx_doctor.documents import repair_document

    document = repair_document({"messages": list(messages)}, format=fmt, **options)
    result = repair_messages(messages, format=fmt, **options)
    assert result.findings == document.findings
    assert result.messages == document.value["messages"]
    assert result.changed == document.changed
    for got, original in zip(result.messages, messages, strict=True):
        if got == original:
            assert got is original
    for i in result.inserted:
        assert result.messages[i.index] is i.record
        (answered,) = [r for r in i.record["toolCalls"] if r["id"] == i.call_id]
        assert answered["status"] == "cancelled"
    # The repaired messages need nothing more: a second repair changes nothing.
    again = repair_messages(result.messages, format=fmt, **options)
    assert not again.changed and again.messages == result.messages
    assert not [f for f in again.findings if f.code == "APX001" and f.fixable]


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=12),
    after=st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), max_size=12),
    memory=st.integers(1, 4),
)
def test_answered_leaves_the_settled_memory_as_settling_one_by_one(before: list, after: list, memory: int) -> None:
    def engines() -> tuple:
        made = []
        for _ in range(2):
            e = engine.PairingEngine()
            e.feed(1, engine.Entry(opens_history=True, boundary=True))
            for call_id in before:
                e._threads[None].settle(call_id, engine._INTERRUPTED)
            made.append(e)
        return made

    with mock.patch.object(engine, "SETTLED_MEMORY", memory):
        bulk, one_by_one = engines()
        bulk.answered(after)
        for call_id in after:
            one_by_one._threads[None].settle(call_id, engine._ANSWERED)
    for e in (bulk, one_by_one):
        state = e._threads[None]
        assert len(state.settled) <= max(memory, 1)
    b, o = bulk._threads[None], one_by_one._threads[None]
    assert (b.settled, b.settled_before) == (o.settled, o.settled_before)
    assert list(b.settled) == list(o.settled)


def test_clean_run_takes_sound_turns_and_stops_where_the_engine_must_decide() -> None:
    sound = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("x", "read"), _call("y", "read")]},
        {"role": "tool", "tool_call_id": "y", "content": "2"},
        {"role": "tool", "tool_call_id": "x", "content": "1"},
        {"role": "assistant", "content": "done"},
        {"role": "system", "content": "note"},
    ]
    adapter = ChatAdapter()
    assert adapter.clean_run(sound, 0) == (len(sound), ["y", "x"])
    cut = {"role": "assistant", "content": None, "tool_calls": [_call("z", "write")]}
    dangling = [*sound, cut, {"role": "user", "content": "?"}]
    assert adapter.clean_run(dangling, 0) == (len(sound), ["y", "x"])
    for stop in (
        {"role": "tool", "tool_call_id": "x", "content": "again"},
        {"role": "tool", "tool_call_id": "z", "content": DEFAULT_MARKER},
        {"role": "robot"},
        ["not", "a", "message"],
    ):
        assert adapter.clean_run([*sound, stop, *sound], 0)[0] == len(sound)
    placeholder = [sound[1], {**sound[2], "content": "aborted"}, sound[3]]
    assert adapter.clean_run(placeholder, 0) == (0, [])
    # One call, and right after it something that only looks like its result.
    one = {"role": "assistant", "content": None, "tool_calls": [_call("z", "write")]}
    for lookalike in (
        {"role": "user", "content": "not a result", "tool_call_id": "z"},
        _Mapping(role="tool", tool_call_id="z", content="1"),
        {"role": "tool", "tool_call_id": "z", "content": [{"type": "text", "text": "aborted"}]},
    ):
        messages = [sound[0], one, lookalike, sound[0]]
        assert adapter.clean_run(messages, 1) == (1, [])
        _all_ways(messages, "chat")


def test_a_repair_with_dangling_calls_far_apart_matches_the_plain_path() -> None:
    # Long clean runs between the places that change, as in a real history.
    messages: list = [{"role": "system", "content": "s"}]
    for n in range(3000):
        messages.append({"role": "user", "content": f"q{n}"})
        calls = [_call(f"c{n}_{k}", "read") for k in range(1 + n % 3)]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        answered = calls[1:] if n % 97 == 5 else calls
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "r"} for c in reversed(answered)]
        if n % 211 == 7:
            messages.append({"role": "tool", "tool_call_id": f"c{n - 1}_0", "content": "again"})
    result = repair_messages(messages)
    assert {f.code for f in result.findings} == {"APX001", "APX003"}
    _all_ways(messages, "chat")
    _all_ways(tuple(messages), "chat", drop_orphans=True)


def test_a_turn_the_engine_must_decide_leaves_its_answered_calls_to_the_engine() -> None:
    # Calls a, b, c are answered and d is not: the turn is not clean, so the
    # engine settles a, b and c itself. Settled twice, they would turn the
    # memory's generations over once more and forget x.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("x", "read")]},
        {"role": "tool", "tool_call_id": "x", "content": "1"},
        {"role": "assistant", "content": None, "tool_calls": [_call(i, "read") for i in "abcd"]},
        *({"role": "tool", "tool_call_id": i, "content": "2"} for i in "abc"),
        {"role": "user", "content": "and?"},
        {"role": "tool", "tool_call_id": "x", "content": "again"},
    ]
    with mock.patch.object(engine, "SETTLED_MEMORY", 3):
        assert [f.code for f in repair_messages(messages).findings] == ["APX001", "APX003"]
        _all_ways(messages, "chat")
