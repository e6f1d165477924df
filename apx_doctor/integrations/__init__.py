"""Hooks for the frameworks runtimes are built on; each needs its framework, an optional extra.

- ``apx_doctor.integrations.langchain.InterruptedToolCallsMiddleware``: a
  LangChain v1 ``AgentMiddleware`` (``pip install 'apx-doctor[langchain]'``);
- ``apx_doctor.integrations.pydantic_ai.close_interrupted_calls``: a
  pydantic-ai history processor (``pip install 'apx-doctor[pydantic-ai]'``);
- ``apx_doctor.integrations.openai_agents.close_interrupted_calls``: an OpenAI
  Agents SDK ``call_model_input_filter`` (``pip install 'apx-doctor[openai-agents]'``).

Each closes every interrupted tool call with the not-run record right before
the history reaches the model, and reports what it found through the standard
``logging`` module (one logger a hook, under ``apx_doctor.integrations``):
each closed call, and each late, duplicate or orphan result, as a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..model import Finding


def report(logger: logging.Logger, findings: Iterable[Finding], *, repaired: bool = True) -> None:
    """Log ``findings``: calls closed (or left open) and stray results as warnings, the rest as info."""
    if not logger.isEnabledFor(logging.WARNING):
        return
    for finding in findings:
        extra = {"apx_code": finding.code, "apx_call_id": finding.call_id, "apx_index": finding.index}
        if finding.code == "APX001":
            what = f"tool call {finding.call_id!r}" + (f" ({finding.tool})" if finding.tool else "")
            if repaired and finding.fixable is not False:
                logger.warning("%s had no result: closed with the not-run record", what, extra=extra)
            else:
                logger.warning("%s had no result, and was left open: %s", what, finding.message, extra=extra)
        elif str(finding.severity) == "info":  # logged only where INFO is enabled
            logger.info("%s at message %s: %s", finding.code, finding.index, finding.message, extra=extra)
        else:
            logger.warning("%s at message %s: %s", finding.code, finding.index, finding.message, extra=extra)
