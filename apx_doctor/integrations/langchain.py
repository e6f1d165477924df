"""A LangChain v1 agent middleware that closes interrupted tool calls with the not-run record.

    from langchain.agents import create_agent
    from apx_doctor.integrations.langchain import InterruptedToolCallsMiddleware

    agent = create_agent(model, tools, middleware=[InterruptedToolCallsMiddleware()])

It takes the place of deepagents' ``PatchToolCallsMiddleware`` (the same hook,
``before_agent``, the same state update), with the doctor's rules: each call
left without a result gets one ``ToolMessage`` saying ``not run: the turn was
interrupted``, after the results that did arrive and right before the next
non-tool message (not right after the call), and late, duplicate and orphan
results are reported through ``logging`` (logger
``apx_doctor.integrations.langchain``); with ``drop_orphans=True`` they are
also removed, since model APIs refuse a tool result that answers no call.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import RemoveMessage
from langgraph.runtime import Runtime

from ..api import repair_messages
from ..formats.base import DEFAULT_MARKER
from . import report

try:  # LangChain 1.x releases that trace middleware hooks: keep the history out of the spans.
    from langchain.agents.middleware import TracePolicy, omit_payload

    _TRACE_POLICY: Any = TracePolicy(process_inputs=omit_payload)
except ImportError:  # pragma: no cover - older LangChain 1.x
    _TRACE_POLICY = None

# langgraph's sentinel: a RemoveMessage with this id clears the list before the rest is added.
REMOVE_ALL_MESSAGES = "__remove_all__"

__all__ = ["InterruptedToolCallsMiddleware"]

logger = logging.getLogger(__name__)


class InterruptedToolCallsMiddleware(AgentMiddleware):
    """Before the agent runs, answer every interrupted tool call of the history with the not-run record."""

    trace_policy = _TRACE_POLICY

    def __init__(self, *, marker: str = DEFAULT_MARKER, drop_orphans: bool = False) -> None:
        super().__init__()
        self.marker = marker
        self.drop_orphans = drop_orphans

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The repaired history as a state update (None: nothing to change)."""
        messages = state["messages"]
        if not messages:
            return None
        result = repair_messages(messages, marker=self.marker, drop_orphans=self.drop_orphans)
        if result.findings:
            report(logger, result.findings)
        if not result.changed:
            return None
        # The repair's list is its own: the sentinel goes in front of it in place. A copy would
        # touch every message object once more, on a list far larger than the caches.
        update = result.messages
        update.insert(0, RemoveMessage(id=REMOVE_ALL_MESSAGES))
        return {"messages": update}

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)
