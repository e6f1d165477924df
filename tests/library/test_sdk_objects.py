"""SDK objects in, the same kind out: the same findings as the dict form, the caller's objects kept, records of the family."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.types import Message, MessageParam, TextBlock, ToolUseBlock, Usage
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam
from openai.types.chat.chat_completion_message_function_tool_call import ChatCompletionMessageFunctionToolCall, Function
from openai.types.responses import ResponseFunctionToolCall, ResponseInputItemParam
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_core import to_jsonable_python

from apx_doctor import DEFAULT_MARKER, check_messages, repair_messages


def _drain(value: Any) -> Any:
    """Walk a validated value: pydantic validates the SDKs' Iterable fields lazily, on iteration."""
    if isinstance(value, dict):
        return {k: _drain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [_drain(v) for v in value]
    return value


# Module-level adapters: a lazily validated iterable needs its adapter alive.
ANTHROPIC = TypeAdapter(list[MessageParam])
CHAT = TypeAdapter(list[ChatCompletionMessageParam])
RESPONSES = TypeAdapter(list[ResponseInputItemParam])


def _as_sent(messages: list) -> Any:
    """What an SDK client sends for a list holding its models: each model as its JSON fields."""
    return to_jsonable_python(messages, exclude_none=True)


def _where(findings: list) -> list:
    return [(f.code, f.line, f.index, f.call_id, f.tool) for f in findings]


def _chat_call(call_id: str) -> ChatCompletionMessageFunctionToolCall:
    return ChatCompletionMessageFunctionToolCall(
        id=call_id, type="function", function=Function(name="get_weather", arguments="{}")
    )


def _kept(result: Any, originals: list) -> None:
    """Every original is in the result as the same object, in order."""
    ids = [id(m) for m in originals]
    assert [id(m) for m in result.messages if id(m) in ids] == ids
    for i in result.inserted:
        assert result.messages[i.index] is i.record


# --- anthropic ----------------------------------------------------------------

USER = {"role": "user", "content": "weather in Paris and Rome?"}
LATER = {"role": "user", "content": "never mind"}
ANTHROPIC_DICTS = [
    USER,
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "20°C"}]},
    LATER,
]


def _blocks() -> list:
    return [
        TextBlock(type="text", text="checking"),
        ToolUseBlock(type="tool_use", id="toolu_1", name="get_weather", input={"city": "Paris"}),
        ToolUseBlock(type="tool_use", id="toolu_2", name="get_weather", input={"city": "Rome"}),
    ]


def _response_message() -> Message:
    return Message(
        id="msg_1", type="message", role="assistant", model="claude", content=_blocks(),
        stop_reason="tool_use", stop_sequence=None, usage=Usage(input_tokens=1, output_tokens=1),
    )  # fmt: skip


@pytest.mark.parametrize(
    "assistant",
    [lambda: {"role": "assistant", "content": _blocks()}, _response_message],
    ids=["blocks in a dict", "a Message"],
)
def test_anthropic_objects_give_the_dict_forms_findings_and_a_list_the_sdk_accepts(assistant: Any) -> None:
    history = [USER, assistant(), ANTHROPIC_DICTS[2], LATER]
    snapshot = copy.deepcopy(history)
    result = repair_messages(history)  # no format: told from the objects
    assert _where(result.findings) == _where(check_messages(ANTHROPIC_DICTS)) == [("APX001", 2, 1, "toolu_1", "get_weather")]
    _kept(result, history)
    (inserted,) = result.inserted
    assert inserted.index == 3
    assert inserted.record == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": DEFAULT_MARKER}],
    }
    assert _drain(ANTHROPIC.validate_python(_as_sent(result.messages)))
    assert history == snapshot  # nothing of the caller's was changed
    assert check_messages(result.messages) == []


def test_an_object_far_into_a_list_of_dicts_is_not_passed_over() -> None:
    # The first messages tell the format (dicts); SDK objects come only later.
    sound = [
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t0", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": "ok"}]},
    ]
    history = [*sound * 30, USER, {"role": "assistant", "content": _blocks()}, LATER]
    result = repair_messages(history)
    assert [f.call_id for f in result.findings if f.code == "APX001"] == ["toolu_1", "toolu_2"]
    _kept(result, history)
    chat_history = [USER, {"role": "assistant", "content": "ok"}] * 40
    chat_history += [USER, {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_9")]}, LATER]
    assert [f.call_id for f in check_messages(chat_history)] == ["call_9"]


# --- openai -------------------------------------------------------------------


def test_openai_chat_completion_messages() -> None:
    assistant = ChatCompletionMessage(role="assistant", content=None, tool_calls=[_chat_call("call_1"), _chat_call("call_2")])
    result_2 = {"role": "tool", "tool_call_id": "call_2", "content": "20°C"}
    history = [USER, assistant, result_2, LATER]
    dicts = [USER, assistant.model_dump(exclude_none=True), result_2, LATER]
    result = repair_messages(history)
    assert _where(result.findings) == _where(check_messages(dicts)) == [("APX001", 2, 1, "call_1", "get_weather")]
    _kept(result, history)
    assert [i.record for i in result.inserted] == [{"role": "tool", "tool_call_id": "call_1", "content": DEFAULT_MARKER}]
    assert _drain(CHAT.validate_python(_as_sent(result.messages)))
    # Tool calls as objects inside a dict message are calls too.
    mixed = [USER, {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]}, LATER]
    assert [f.call_id for f in check_messages(mixed)] == ["call_1"]


def test_openai_responses_items() -> None:
    call = ResponseFunctionToolCall(
        type="function_call", call_id="call_1", name="get_weather", arguments="{}", id="fc_1", status="completed"
    )
    history: list[Any] = [{"role": "user", "content": "weather?"}, call, {"role": "user", "content": "never mind"}]
    dicts = [history[0], call.model_dump(exclude_none=True), history[2]]
    result = repair_messages(history)
    assert _where(result.findings) == _where(check_messages(dicts, format="responses"))
    assert [f.call_id for f in result.findings] == ["call_1"]
    assert result.messages[1] is call
    assert result.messages[2] == {"type": "function_call_output", "call_id": "call_1", "output": DEFAULT_MARKER}
    assert _drain(RESPONSES.validate_python(_as_sent(result.messages)))


# --- LangChain ----------------------------------------------------------------


def test_langchain_messages_read_as_their_chat_form_and_get_a_tool_message() -> None:
    calls = [{"id": "call_1", "name": "get_weather", "args": {}}, {"id": "call_2", "name": "get_weather", "args": {}}]
    history = [
        SystemMessage("be brief"),
        HumanMessage("weather?"),
        AIMessage("", tool_calls=calls),
        ToolMessage("20°C", tool_call_id="call_2"),
        HumanMessage("never mind"),
        ToolMessage("late", tool_call_id="call_1"),
    ]
    before = [m.model_dump() for m in history]
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}} for c in calls]},
        {"role": "tool", "tool_call_id": "call_2", "content": "20°C"},
        {"role": "user", "content": "never mind"},
        {"role": "tool", "tool_call_id": "call_1", "content": "late"},
    ]  # fmt: skip
    result = repair_messages(history)
    assert (
        _where(result.findings)
        == _where(check_messages(chat))
        == [
            ("APX001", 3, 2, "call_1", "get_weather"),
            ("APX004", 6, 5, "call_1", None),
        ]
    )
    _kept(result, history)
    (inserted,) = result.inserted
    record = result.messages[4]
    assert isinstance(record, ToolMessage) and inserted.record is record
    assert (record.tool_call_id, record.content, record.name) == ("call_1", DEFAULT_MARKER, "get_weather")
    assert [m.model_dump() for m in history] == before
    assert [type(m) for m in repair_messages(history, drop_orphans=True).messages][-1] is HumanMessage
    # An invalid tool call (arguments cut mid-stream) is a call that needs its answer too.
    broken = AIMessage(
        "", invalid_tool_calls=[{"id": "call_3", "name": "f", "args": "{", "error": None, "type": "invalid_tool_call"}]
    )
    assert [f.call_id for f in check_messages([HumanMessage("go"), broken, HumanMessage("?")])] == ["call_3"]


def test_langchain_messages_name_no_other_format() -> None:
    from apx_doctor import UnrecognisedHistoryError

    with pytest.raises(UnrecognisedHistoryError, match="read as chat"):
        check_messages([HumanMessage("hi")], format="anthropic")


# --- pydantic-ai --------------------------------------------------------------


def test_pydantic_ai_messages_match_their_anthropic_form_and_get_a_tool_return_part() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart("weather in Paris and Rome?")]),
        ModelResponse(parts=[
            TextPart("checking"),
            ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="toolu_1"),
            ToolCallPart("get_weather", {"city": "Rome"}, tool_call_id="toolu_2"),
        ]),
        ModelRequest(parts=[ToolReturnPart("get_weather", "20°C", tool_call_id="toolu_2")]),
        ModelRequest(parts=[UserPromptPart("never mind")]),
    ]  # fmt: skip
    before = [repr(m) for m in history]
    result = repair_messages(history)
    assert _where(result.findings) == _where(check_messages(ANTHROPIC_DICTS))
    _kept(result, history)
    (inserted,) = result.inserted
    record = result.messages[3]
    assert isinstance(record, ModelRequest) and inserted.record is record
    (part,) = record.parts
    assert isinstance(part, ToolReturnPart)
    assert (part.tool_call_id, part.tool_name, part.content, part.outcome) == (
        "toolu_1",
        "get_weather",
        DEFAULT_MARKER,
        "interrupted",
    )
    assert [repr(m) for m in history] == before
    again = repair_messages(result.messages)
    assert not again.changed and again.findings == []
