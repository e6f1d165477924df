"""The pydantic-ai history processor on a real ``Agent`` run, with ``FunctionModel`` recording what it is sent."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    INTERRUPTED_TOOL_RETURN_CONTENT,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from apx_doctor import DEFAULT_MARKER
from apx_doctor.integrations.pydantic_ai import close_interrupted_calls

STAMP = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _recording() -> tuple[FunctionModel, list[list[ModelMessage]]]:
    seen: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond), seen


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def _cut_turn() -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart("check the deploy dashboard")]),
        ModelResponse(
            parts=[
                ToolCallPart("read_dashboard", {"url": "x"}, tool_call_id="call_a"),
                ToolCallPart("notify", {}, tool_call_id="call_b"),
            ],
            timestamp=STAMP,
        ),
        ModelRequest(parts=[ToolReturnPart("notify", "sent", tool_call_id="call_b")]),
    ]


def test_pydantic_ais_own_synthesised_return_is_replaced_by_the_not_run_record(caplog: Any) -> None:
    # The cut call lies in an earlier response: pydantic-ai closes it with its own
    # text before processors run; the model must see the doctor's record instead.
    history = [*_cut_turn(), ModelRequest(parts=[UserPromptPart("never mind")]), ModelResponse(parts=[TextPart("ok")])]
    model, seen = _recording()
    agent = Agent(model, capabilities=[ProcessHistory(close_interrupted_calls)])
    with caplog.at_level(logging.WARNING, logger="apx_doctor.integrations.pydantic_ai"):
        agent.run_sync("what did it find?", message_history=history)
    (sent,) = seen
    # Both answers in the request after the response that made the calls (their order there is pydantic-ai's).
    returns = {r.tool_call_id: r for r in _returns(sent)}
    assert {k: r.content for k, r in returns.items()} == {"call_b": "sent", "call_a": DEFAULT_MARKER}
    assert returns["call_a"].outcome == "interrupted" and returns["call_a"].tool_name == "read_dashboard"
    assert not any(r.content == INTERRUPTED_TOOL_RETURN_CONTENT for r in _returns(sent))
    assert [(r.apx_code, r.apx_call_id) for r in caplog.records] == [("APX001", "call_a")]  # type: ignore[attr-defined]


def test_a_call_still_open_in_the_last_response_is_closed_by_the_processor() -> None:
    # Here pydantic-ai leaves the last response's calls to the processors.
    history = [*_cut_turn()[:2], ModelRequest(parts=[UserPromptPart("never mind")])]
    model, seen = _recording()
    Agent(model, capabilities=[ProcessHistory(close_interrupted_calls)]).run_sync("and?", message_history=history)
    returns = _returns(seen[0])
    assert sorted((r.tool_call_id, r.content) for r in returns) == [("call_a", DEFAULT_MARKER), ("call_b", DEFAULT_MARKER)]
    assert {r.timestamp for r in returns} == {STAMP}  # the call's own time: a second repair is the same


def test_the_processor_never_changes_the_messages_it_is_given() -> None:
    history = [*_cut_turn(), ModelRequest(parts=[UserPromptPart("never mind")])]
    before = [repr(m) for m in history]
    repaired = close_interrupted_calls(list(history))
    assert [repr(m) for m in history] == before
    assert repaired[:3] == history[:3]
    assert [(r.tool_call_id, r.content) for r in _returns(repaired)] == [("call_b", "sent"), ("call_a", DEFAULT_MARKER)]
    assert close_interrupted_calls(repaired) == repaired
