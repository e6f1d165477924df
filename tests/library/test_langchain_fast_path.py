"""LangChain histories repair the same whether ``clean_run`` proves their quiet stretches or the engine reads every message.

``LangChainAdapter.clean_run`` reads the fields of LangChain messages straight
from each instance's ``__dict__`` and tells a message's kind by its class, so
it must stop wherever that shortcut could read a message otherwise than
``classify`` does. Three ways must agree, finding for finding and object for
object: ``HistoryDoctor.entry`` for each message (the general path), the
library with ``clean_run``, and the library with it switched off.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    ToolMessageChunk,
)

from apx_doctor import DEFAULT_MARKER, api, engine, repair_messages
from apx_doctor.doctor import HistoryDoctor, RepairOptions
from apx_doctor.objects import LangChainAdapter

from strategies.turns import call_turn


class ShadowedCalls(AIMessage):
    """An AI message whose ``tool_calls`` a property gives: its ``__dict__`` is not what the engine reads."""


# Set after pydantic built the class, so the field stays in ``__dict__`` and the property shadows it.
ShadowedCalls.tool_calls = property(lambda self: [{"id": "shadow", "name": "f", "args": {}, "type": "tool_call"}])  # type: ignore[assignment,method-assign]


_POOL = ["a", "b", "c"]
_TEXT = st.sampled_from(["ok", "", "x[bold]y", "é 中 🙂", "late output", "a" * 300])
_RESULT_CONTENT = st.one_of(
    _TEXT,
    st.sampled_from(
        [
            DEFAULT_MARKER,
            "no result",
            "aborted",
            [{"type": "text", "text": DEFAULT_MARKER}],
            [{"type": "text", "text": "ok"}],
            ["plain", {"type": "text", "text": "more"}],
        ]
    ),
)


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "name": "read", "args": {}, "type": "tool_call"}


def _odd() -> st.SearchStrategy[Any]:
    """Messages the proof must leave to the engine, or read exactly as it does."""
    return st.sampled_from(
        [
            FunctionMessage(name="f", content="legacy"),
            ChatMessage(role="user", content="as a chat message"),
            ChatMessage(role="tool", content="?"),
            {"role": "user", "content": "a dict among objects"},
            {"role": "tool", "tool_call_id": "a", "content": "a dict result"},
            AIMessage("", invalid_tool_calls=[{"id": "a", "name": "f", "args": "{", "error": None, "type": "invalid_tool_call"}]),
            AIMessage.model_construct(content="", tool_calls=None, invalid_tool_calls=[]),
            AIMessage.model_construct(content="", tool_calls=[{"name": "no id"}], invalid_tool_calls=[]),
            AIMessage.model_construct(content="", tool_calls=["not a dict"], invalid_tool_calls=[]),
            AIMessage.model_construct(content="", tool_calls=[{"id": 7, "name": "f"}], invalid_tool_calls=[]),
            ShadowedCalls(""),
            ToolMessage.model_construct(content="ok"),  # no ``tool_call_id``
            ToolMessage.model_construct(tool_call_id="a"),  # no ``content``
            None,
            "user",
        ]
    )


@st.composite
def _history(draw: st.DrawFn) -> list[Any]:
    fresh = iter(range(10_000))
    messages: list[Any] = []
    called: list[str] = []
    for _ in range(draw(st.integers(0, 16))):
        kind = draw(st.sampled_from(["human", "sound", "sound", "sound", "broken", "result", "again", "odd", "system", "final"]))
        if kind == "human":
            messages.append(HumanMessage(draw(_TEXT)))
        elif kind == "system":
            messages.append(SystemMessage(draw(_TEXT)))
        elif kind == "final":
            messages.append(draw(st.sampled_from([AIMessage, AIMessageChunk]))(draw(_TEXT)))
        elif kind == "odd":
            messages.append(draw(_odd()))
        elif kind == "result":
            call_id = draw(st.sampled_from([*_POOL, "ghost"]))
            messages.append(ToolMessage(draw(_RESULT_CONTENT), tool_call_id=call_id))
        elif kind == "again" and called:
            messages.append(ToolMessage(draw(_TEXT), tool_call_id=draw(st.sampled_from(called))))
        elif kind in ("sound", "broken"):
            ids, order = call_turn(draw, fresh, _POOL, sound=kind == "sound")
            called += ids
            ai = draw(st.sampled_from([AIMessage, AIMessageChunk]))
            messages.append(ai("", tool_calls=[_call(i) for i in ids]))
            for call_id in order:
                content = draw(_TEXT) if kind == "sound" and draw(st.booleans()) else draw(_RESULT_CONTENT)
                result = draw(st.sampled_from([ToolMessage, ToolMessage, ToolMessageChunk]))
                messages.append(result(content, tool_call_id=call_id))
    return messages


def _general_path(messages: list[Any], marker: str, **options: bool) -> Any:
    """``HistoryDoctor.entry`` for every message, as the streaming pass reads a file."""
    doctor = HistoryDoctor(LangChainAdapter(marker=marker), RepairOptions(**options))
    out: list[Any] = []
    inserted: list[Any] = []
    try:
        for number, message in enumerate(messages, 1):
            api._place(out, inserted, doctor.entry(number, message), message)
        verdict = doctor.end(len(messages) + 1)
    except api._ADAPTER_TROUBLE:
        return "trouble"  # the library names the message in a ValueError instead
    if doctor.engine.starts_over:
        return _general_path(messages, marker, history_from_start=True, **options)
    if verdict is not None:
        api._insert(out, inserted, verdict.insert)
    return api._result(doctor, out, inserted)


def _library(messages: list[Any], marker: str, *, proving: bool, **options: bool) -> Any:
    with mock.patch.object(LangChainAdapter, "clean_run", LangChainAdapter.clean_run if proving else None):
        try:
            return api._run(LangChainAdapter, messages, marker, RepairOptions(**options))
        except ValueError as exc:
            return ("trouble", str(exc))


def _same(result: Any, reference: Any, messages: list[Any]) -> None:
    if reference == "trouble":
        assert isinstance(result, tuple) and result[0] == "trouble"
        return
    assert result.findings == reference.findings
    assert result.edits == reference.edits
    assert result.inserted == reference.inserted
    assert len(result.messages) == len(reference.messages)
    originals = {id(m) for m in messages}
    for got, want in zip(result.messages, reference.messages, strict=True):
        if id(want) in originals:
            assert got is want
        else:
            assert got == want


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=_history(),
    drop_orphans=st.booleans(),
    marker=st.sampled_from([DEFAULT_MARKER, "no result", "aborted"]),
    memory=st.sampled_from([1, 2, 3, engine.SETTLED_MEMORY]),
)
def test_langchain_histories_repair_the_same_with_their_quiet_stretches_proven(
    messages: list[Any], drop_orphans: bool, marker: str, memory: int
) -> None:
    with mock.patch.object(engine, "SETTLED_MEMORY", memory):
        reference = _general_path(messages, marker, drop_orphans=drop_orphans)
        proven = _library(messages, marker, proving=True, drop_orphans=drop_orphans)
        _same(proven, reference, messages)
        read_whole = _library(messages, marker, proving=False, drop_orphans=drop_orphans)
        _same(read_whole, reference, messages)
        if isinstance(proven, tuple):
            assert proven == read_whole  # the error names the same message


def test_a_proven_stretch_stops_at_a_message_it_cannot_read_from_its_dict() -> None:
    """Each odd message stops the proof there; the stretch before it still counts as proven."""
    sound = [HumanMessage("go"), AIMessage("", tool_calls=[_call("x")]), ToolMessage("ok", tool_call_id="x")]
    adapter = LangChainAdapter()
    assert adapter.clean_run(sound, 0) == (3, ["x"])
    stoppers = [
        AIMessage.model_construct(content="", tool_calls=[{"name": "no id"}], invalid_tool_calls=[]),
        ShadowedCalls(""),
        ToolMessage.model_construct(content="ok"),
        ChatMessage(role="user", content="?"),
        {"role": "user", "content": "?"},
    ]
    for stopper in stoppers:
        assert adapter.clean_run([*sound, stopper, *sound], 0) == (3, ["x"]), stopper
    # A result the proof cannot read stops it at the call it would answer.
    unreadable = ToolMessage.model_construct(content="ok")
    assert adapter.clean_run([*sound, AIMessage("", tool_calls=[_call("y")]), unreadable], 0) == (3, ["x"])
    # A shadowed ``tool_calls`` is read as the property says, by the engine.
    (finding,) = repair_messages([HumanMessage("go"), ShadowedCalls(""), HumanMessage("?")]).findings
    assert (finding.code, finding.call_id) == ("APX001", "shadow")
