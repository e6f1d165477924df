"""The LangChain middleware on a real ``create_agent`` graph, with a fake chat model that records what it is sent."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from apx_doctor import DEFAULT_MARKER
from apx_doctor.integrations.langchain import InterruptedToolCallsMiddleware


class RecordingModel(BaseChatModel):
    """Answers "done" to anything, and keeps every message list it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingModel:
        return self


def _call(call_id: str, name: str = "read_dashboard") -> dict:
    return {"id": call_id, "name": name, "args": {"url": "https://deploy.example.internal"}, "type": "tool_call"}


def _history() -> list[BaseMessage]:
    return [
        HumanMessage("check the deploy dashboard"),
        AIMessage("", tool_calls=[_call("call_a"), _call("call_b", "notify")]),
        ToolMessage("sent", tool_call_id="call_b"),
        HumanMessage("what did it find?"),
    ]


def _sent(model: RecordingModel) -> list[BaseMessage]:
    (messages,) = model.seen
    return [m for m in messages if not isinstance(m, SystemMessage)]


def test_the_model_receives_the_not_run_record_at_its_place() -> None:
    model = RecordingModel()
    agent = create_agent(model, tools=[], middleware=[InterruptedToolCallsMiddleware()])
    history = _history()
    before = [m.model_dump(exclude={"id"}) for m in history]
    state = agent.invoke({"messages": history})
    sent = _sent(model)
    # After the result that did arrive, right before the next human message.
    assert [type(m).__name__ for m in sent] == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "HumanMessage"]
    record = sent[3]
    assert isinstance(record, ToolMessage)
    assert (record.tool_call_id, record.content, record.name) == ("call_a", DEFAULT_MARKER, "read_dashboard")
    # The record stays in the agent's state, and the caller's messages were not changed
    # (langgraph gives each message an id as it takes it in; nothing else).
    assert any(isinstance(m, ToolMessage) and m.content == DEFAULT_MARKER for m in state["messages"])
    assert [m.model_dump(exclude={"id"}) for m in history] == before


def test_a_sound_history_reaches_the_model_unchanged() -> None:
    model = RecordingModel()
    agent = create_agent(model, tools=[], middleware=[InterruptedToolCallsMiddleware()])
    history = [*_history()[:3], ToolMessage("dashboard: green", tool_call_id="call_a"), HumanMessage("thanks")]
    agent.invoke({"messages": history})
    assert [m.content for m in _sent(model)] == [m.content for m in history]


def test_the_async_agent_repairs_too() -> None:
    model = RecordingModel()
    agent = create_agent(model, tools=[], middleware=[InterruptedToolCallsMiddleware()])
    asyncio.run(agent.ainvoke({"messages": _history()}))
    assert [m.content for m in _sent(model) if isinstance(m, ToolMessage)] == ["sent", DEFAULT_MARKER]


def test_late_and_orphan_results_are_logged_and_kept_unless_dropped(caplog: Any) -> None:
    history = [
        *_history(),
        ToolMessage("finally", tool_call_id="call_a"),  # late: its call was closed
        ToolMessage("?", tool_call_id="ghost"),  # orphan
        HumanMessage("and now?"),
    ]
    with caplog.at_level(logging.WARNING, logger="apx_doctor.integrations.langchain"):
        model = RecordingModel()
        create_agent(model, tools=[], middleware=[InterruptedToolCallsMiddleware()]).invoke({"messages": history})
    logged = [r.apx_code for r in caplog.records]  # type: ignore[attr-defined]
    assert logged == ["APX001", "APX004", "APX002"]
    assert any("call_a" in r.getMessage() and "not-run record" in r.getMessage() for r in caplog.records)
    assert [m.content for m in _sent(model) if isinstance(m, ToolMessage)] == ["sent", DEFAULT_MARKER, "finally", "?"]

    dropping = RecordingModel()
    middleware = InterruptedToolCallsMiddleware(drop_orphans=True)
    create_agent(dropping, tools=[], middleware=[middleware]).invoke({"messages": history})
    assert [m.content for m in _sent(dropping) if isinstance(m, ToolMessage)] == ["sent", DEFAULT_MARKER]


def test_it_stands_where_deepagents_patch_middleware_stands() -> None:
    # The same hook and the same kind of state update: a drop-in replacement.
    from deepagents.middleware.patch_tool_calls import PatchToolCallsMiddleware

    ours = InterruptedToolCallsMiddleware().before_agent({"messages": _history()}, None)  # type: ignore[arg-type]
    theirs = PatchToolCallsMiddleware().before_agent({"messages": _history()}, None)  # type: ignore[arg-type]
    assert ours is not None and theirs is not None
    assert type(ours["messages"][0]) is type(theirs["messages"][0])  # RemoveMessage of all, then the list
    assert ours["messages"][0].id == theirs["messages"][0].id
    # deepagents answers right after the call, before the result that did arrive; ours after it.
    assert [getattr(m, "tool_call_id", None) for m in ours["messages"][1:]] == [None, None, "call_b", "call_a", None]
    assert [getattr(m, "tool_call_id", None) for m in theirs["messages"][1:]] == [None, None, "call_a", "call_b", None]
