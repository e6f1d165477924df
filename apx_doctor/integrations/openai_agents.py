"""An OpenAI Agents SDK model input filter that closes interrupted tool calls with the not-run record.

    from agents import Agent, RunConfig, Runner
    from apx_doctor.integrations.openai_agents import close_interrupted_calls

    result = await Runner.run(agent, items, run_config=RunConfig(call_model_input_filter=close_interrupted_calls))

The SDK calls the filter right before each model call with the Responses input
items it is about to send (from ``input=``, a session, or the run so far). Each
call item left without an output gets a ``function_call_output`` (or
``custom_tool_call_output``) saying ``not run: the turn was interrupted``,
right before the message that ends its turn; late, duplicate and orphan
outputs are reported through ``logging`` (logger
``apx_doctor.integrations.openai_agents``). Call types with no honest not-run
output (``shell_call``, ``computer_call``, ...) are reported and left as they
are, as ``apx-doctor fix`` leaves them.
"""

from __future__ import annotations

import logging
from typing import Any

from agents.run_config import CallModelData, ModelInputData

from ..api import repair_messages
from ..formats.base import DEFAULT_MARKER
from . import report

__all__ = ["close_interrupted_calls", "input_filter"]

logger = logging.getLogger(__name__)


def close_interrupted_calls(data: CallModelData[Any]) -> ModelInputData:
    """A ``RunConfig.call_model_input_filter``: the model input with every interrupted call answered."""
    return _close(data, DEFAULT_MARKER, False)


def input_filter(*, marker: str = DEFAULT_MARKER, drop_orphans: bool = False) -> Any:
    """``close_interrupted_calls`` with another marker text, or removing stray outputs too."""

    def close(data: CallModelData[Any]) -> ModelInputData:
        return _close(data, marker, drop_orphans)

    return close


def _close(data: CallModelData[Any], marker: str, drop_orphans: bool) -> ModelInputData:
    model_data = data.model_data
    if not model_data.input:
        return model_data
    result = repair_messages(model_data.input, format="responses", marker=marker, drop_orphans=drop_orphans)
    if result.findings:
        report(logger, result.findings)
    if not result.changed:
        return model_data
    return ModelInputData(input=result.messages, instructions=model_data.instructions)
