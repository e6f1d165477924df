"""The library tells a list's format itself and never answers "clean" about a list it did not understand."""

from __future__ import annotations

import pytest

from apx_doctor import UnrecognisedHistoryError, check_messages, repair_messages

ANTHROPIC = [
    {"role": "user", "content": "weather in Paris?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
    {"role": "user", "content": "never mind"},
]
GEMINI = [
    {"role": "user", "parts": [{"text": "weather in Paris?"}]},
    {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}}]},
]


def test_an_interrupted_anthropic_call_is_found_without_a_format() -> None:
    assert [(f.code, f.line, f.call_id) for f in check_messages(ANTHROPIC)] == [("APX001", 2, "toolu_1")]


def test_a_gemini_list_is_read_as_gemini_contents() -> None:
    assert [(f.code, f.call_id) for f in check_messages(GEMINI)] == [("APX001", "c1")]


@pytest.mark.parametrize(
    "messages",
    [
        [{"speaker": "user", "said": "hi"}, {"speaker": "bot", "said": "hello"}],  # keys no format defines
        ["hi", "hello"],  # no message objects at all
    ],
)
def test_a_list_no_format_fits_raises_the_exported_error(messages: list) -> None:
    with pytest.raises(UnrecognisedHistoryError, match="first item"):
        check_messages(messages)
    with pytest.raises(ValueError):  # a ValueError, for callers that catch those
        repair_messages(messages)


def test_a_named_format_that_fits_none_of_the_list_raises_naming_the_likely_one() -> None:
    with pytest.raises(UnrecognisedHistoryError, match="holds no chat messages; it looks like anthropic"):
        check_messages(ANTHROPIC, format="chat")


def test_an_empty_list_is_clean() -> None:
    assert check_messages([]) == []
    assert repair_messages([]).messages == []


def test_the_error_never_quotes_the_list() -> None:
    hostile = [{"\x1b]0;pwned\x07": "x", "role-ish": 1}]
    with pytest.raises(UnrecognisedHistoryError) as raised:
        check_messages(hostile)
    assert "\x1b" not in str(raised.value) and "role-ish" not in str(raised.value)
