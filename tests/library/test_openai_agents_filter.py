"""The OpenAI Agents SDK input filter on a real ``Runner`` run, with a fake model that records its input."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner, Usage
from agents.items import ModelResponse
from agents.models.interface import Model
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from apx_doctor import DEFAULT_MARKER
from apx_doctor.integrations.openai_agents import close_interrupted_calls, input_filter


class RecordingModel(Model):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.seen.append(input)
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - not streamed here
        raise NotImplementedError


HISTORY: list[Any] = [
    {"role": "user", "content": "check the deploy dashboard"},
    {"type": "function_call", "call_id": "call_a", "name": "read_dashboard", "arguments": "{}"},
    {"type": "function_call", "call_id": "call_b", "name": "notify", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_b", "output": "sent"},
    {"role": "user", "content": "what did it find?"},
]


def _run(items: list[Any], filter: Any) -> RecordingModel:
    model = RecordingModel()
    agent = Agent(name="ops", model=model, model_settings=ModelSettings())
    config = RunConfig(call_model_input_filter=filter, tracing_disabled=True)
    asyncio.run(Runner.run(agent, items, run_config=config))
    return model


def test_the_model_receives_the_not_run_output_before_the_next_user_message(caplog: Any) -> None:
    items = [dict(i) for i in HISTORY]
    with caplog.at_level(logging.WARNING, logger="apx_doctor.integrations.openai_agents"):
        model = _run(items, close_interrupted_calls)
    (sent,) = model.seen
    assert sent[:4] == HISTORY[:4]
    assert sent[4] == {"type": "function_call_output", "call_id": "call_a", "output": DEFAULT_MARKER}
    assert sent[5] == HISTORY[4]
    assert items == HISTORY  # the caller's items are untouched
    assert [(r.apx_code, r.apx_call_id) for r in caplog.records] == [("APX001", "call_a")]  # type: ignore[attr-defined]


def test_without_the_filter_the_cut_call_reaches_the_model_unanswered() -> None:
    # The reason for the filter: the SDK sends the history as it is.
    (sent,) = _run([dict(i) for i in HISTORY], None).seen
    assert not [i for i in sent if i.get("type") == "function_call_output" and i.get("call_id") == "call_a"]


def test_a_stray_output_is_reported_and_dropped_on_request(caplog: Any) -> None:
    items = [*HISTORY, {"type": "function_call_output", "call_id": "ghost", "output": "?"}]
    with caplog.at_level(logging.WARNING, logger="apx_doctor.integrations.openai_agents"):
        (kept,) = _run([dict(i) for i in items], close_interrupted_calls).seen
    assert "APX002" in [r.apx_code for r in caplog.records]  # type: ignore[attr-defined]
    assert {"type": "function_call_output", "call_id": "ghost", "output": "?"} in kept
    (dropped,) = _run([dict(i) for i in items], input_filter(drop_orphans=True)).seen
    assert all(i.get("call_id") != "ghost" for i in dropped)
