"""A user's script: every public name of apx_doctor, type-checked by ``mypy --strict`` (tests/library/test_typing.py)."""

from __future__ import annotations

from typing import Any

from agents import RunConfig
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory

import apx_doctor
from apx_doctor import (
    DEFAULT_MARKER,
    Edit,
    Finding,
    Format,
    Inserted,
    RepairResult,
    Target,
    UnrecognisedHistoryError,
    check_messages,
    repair_messages,
)
from apx_doctor.integrations.langchain import InterruptedToolCallsMiddleware
from apx_doctor.integrations.openai_agents import close_interrupted_calls as agents_filter
from apx_doctor.integrations.openai_agents import input_filter
from apx_doctor.integrations.pydantic_ai import close_interrupted_calls, history_processor

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "check the dashboard"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    },
    {"role": "user", "content": "what did it find?"},
]


def report(fmt: Format = "auto", target: Target | None = "openai-chat") -> int:
    try:
        findings: list[Finding] = check_messages(HISTORY, format=fmt, marker=DEFAULT_MARKER, target=target)
    except UnrecognisedHistoryError as exc:
        print(exc)
        return 2
    for finding in findings:
        line: int | None = finding.line
        index: int | None = finding.index
        print(finding.code, finding.call_id, line, index, finding.severity)
    result: RepairResult = repair_messages(
        HISTORY, format="chat", drop_orphans=True, keep_open_tail=False, target="auto", drop_empty_blocks=False
    )
    inserted: list[Inserted] = result.inserted
    removed: list[Edit] = result.removed
    positions: list[int] = [i.index for i in inserted]
    changed: bool = result.changed
    print(positions, len(removed), changed, apx_doctor.__version__)
    return 1 if findings else 0


def hooks() -> None:
    agent = create_agent(
        FakeListChatModel(responses=["done"]), tools=[], middleware=[InterruptedToolCallsMiddleware(drop_orphans=True)]
    )
    Agent("test", capabilities=[ProcessHistory(close_interrupted_calls)])
    Agent("test", capabilities=[ProcessHistory(history_processor(marker="no result"))])
    RunConfig(call_model_input_filter=agents_filter)
    RunConfig(call_model_input_filter=input_filter(marker="no result", drop_orphans=True))
    print(agent)


if __name__ == "__main__":
    raise SystemExit(report())
