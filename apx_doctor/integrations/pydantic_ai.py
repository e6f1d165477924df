"""A pydantic-ai history processor that closes interrupted tool calls with the not-run record.

pydantic-ai 2.x takes it as a capability::

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from apx_doctor.integrations.pydantic_ai import close_interrupted_calls

    agent = Agent(model, capabilities=[ProcessHistory(close_interrupted_calls)])

(1.x: ``Agent(model, history_processors=[close_interrupted_calls])``.)

pydantic-ai 2.x closes dangling calls itself before processors run, with a
``ToolReturnPart`` of its own text marked in ``metadata``
(``SYNTHESIZED_TOOL_RETURN_METADATA_KEY``). The processor replaces each such
return with the not-run record (``content`` the marker, ``outcome``
``"interrupted"``, same call id, tool and place), closes any call still open
the same way, and reports each through ``logging`` (logger
``apx_doctor.integrations.pydantic_ai``), so the model sees the doctor's
record and nothing else. The messages it is given are never changed: a request
that needs a change is replaced by a copy.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, TypeGuard

from pydantic_ai import messages as _messages
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ToolReturnPart

from ..api import repair_messages
from ..formats.base import DEFAULT_MARKER
from ..model import Finding
from . import report

__all__ = ["close_interrupted_calls", "history_processor"]

logger = logging.getLogger(__name__)

# pydantic-ai 2.x marks the returns it synthesises for dangling calls with this key.
_SYNTHESIZED = getattr(_messages, "SYNTHESIZED_TOOL_RETURN_METADATA_KEY", "pydantic_ai_synthesized_tool_return")


def close_interrupted_calls(messages: list[ModelMessage]) -> list[ModelMessage]:
    """The history with every interrupted call answered by the not-run record (a history processor)."""
    return _close(messages, DEFAULT_MARKER)


def history_processor(*, marker: str = DEFAULT_MARKER) -> Any:
    """``close_interrupted_calls`` with another marker text."""

    def close(messages: list[ModelMessage]) -> list[ModelMessage]:
        return _close(messages, marker)

    return close


def _close(messages: list[ModelMessage], marker: str) -> list[ModelMessage]:
    replaced: list[Finding] = []
    out: list[ModelMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest) and any(_synthesized(p) for p in message.parts):
            parts: list[ModelRequestPart] = []
            for part in message.parts:
                if _synthesized(part):
                    parts.append(_not_run(part, marker))
                    replaced.append(_closed(index, part))
                else:
                    parts.append(part)
            message = dataclasses.replace(message, parts=parts)
        out.append(message)
    if replaced:
        report(logger, replaced)
    if not out:
        return out
    result = repair_messages(out, marker=marker)
    if result.findings:
        report(logger, result.findings)
    return result.messages


def _synthesized(part: Any) -> TypeGuard[ToolReturnPart]:
    metadata = getattr(part, "metadata", None)
    return isinstance(part, ToolReturnPart) and isinstance(metadata, dict) and metadata.get(_SYNTHESIZED) is True


def _not_run(part: ToolReturnPart, marker: str) -> ToolReturnPart:
    return ToolReturnPart(
        tool_name=part.tool_name,
        content=marker,
        tool_call_id=part.tool_call_id,
        tool_kind=part.tool_kind,
        timestamp=part.timestamp,
        outcome="interrupted",
    )


def _closed(index: int, part: ToolReturnPart) -> Finding:
    # The call's own message is not known here; the finding names the request answering it.
    return Finding(
        "APX001",
        index + 1,
        f"tool call {part.tool_call_id!r} ({part.tool_name}) has no result: the turn was interrupted",
        call_id=part.tool_call_id,
        tool=part.tool_name,
        index=index,
        fixable=True,
    )
