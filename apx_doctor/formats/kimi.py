"""Kimi Code wire files: ``sessions/<workdir>/<session>/agents/<agent>/wire.jsonl``.

A ``metadata`` header, then one flat ``{type, ..., time}`` record a line, time
in epoch milliseconds. The model's turns are streamed as loop events:

    {"type": "metadata", "protocol_version": "1.4", "created_at": 1781363635367}
    {"type": "turn.prompt", "input": [...], "origin": {"kind": "user"}, "time": ...}
    {"type": "context.append_message", "message": {"role": "user", "content": [...], "toolCalls": []}, "time": ...}
    {"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": STEP}, "time": ...}
    {"type": "context.append_loop_event", "event": {"type": "tool.call", "uuid": U, "stepUuid": STEP, "toolCallId": ID, "name": ..., "args": {...}}, "time": ...}
    {"type": "context.append_loop_event", "event": {"type": "tool.result", "parentUuid": U, "toolCallId": ID, "result": {"output": ..., "isError": true}}, "time": ...}
    {"type": "context.append_loop_event", "event": {"type": "step.end", "uuid": STEP, ...}, "time": ...}

Pairing follows kimi-code's own fold of these records when it restores a
session (``contextMemory/loopEventFold.ts``): a ``tool.call`` is answered by
the ``tool.result`` of its ``toolCallId``; the step's ``step.end``, or the
next ``step.begin`` where a step was left open, settles the step and closes
what is still pending (kimi-code then stands in an interrupted result of its
own, in memory only). A ``turn.prompt`` is written when its turn starts, once
the turn before it has ended, so it closes that turn's calls too. A message
appended while tools run (a steer, a notification) is deferred by kimi-code
until the results are in, so it closes nothing. ``context.clear``, ``context.apply_compaction`` and ``context.undo``
reset the fold and close pending calls too. Every other record (configuration,
``llm.request``, ``usage.record``, ``turn.cancel``, content parts, ...) is
passed over. The checked history starts at the first ``turn.prompt`` or user
message, whatever its origin: a sub-agent's wire starts with the prompt its
parent gave it.

Assistant and tool messages appended whole (``context.append_message`` with
another role) are passed over, as kimi-code's fold does not pair them either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import Detection, FormatAdapter, Insertion, detect_by_line

_OPEN = Entry(opens_history=True)
_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)

# Records after which kimi-code's fold starts afresh: what was pending is gone.
_RESETS = frozenset({"context.clear", "context.apply_compaction", "context.undo"})

# Durable record kinds kimi-code writes to a wire (agent-core-v2's wire
# inventory, with the v1 kinds old wires still hold). A line of one of these
# kinds fits the format; one of another kind says nothing either way.
_RECORD_TYPES = frozenset(
    {
        "metadata",
        "config.update",
        "context.append_loop_event",
        "context.append_message",
        "context.apply_compaction",
        "context.clear",
        "context.undo",
        "context.update_token_count",
        "cron.add",
        "cron.cursor",
        "cron.delete",
        "file_history.checkpoint",
        "file_history.tracked",
        "forked",
        "full_compaction.begin",
        "full_compaction.cancel",
        "full_compaction.complete",
        "goal.clear",
        "goal.create",
        "goal.update",
        "interaction.request",
        "interaction.resolved",
        "interruptionReminder.recorded",
        "llm.request",
        "llm.tools_snapshot",
        "mcp.tools_discovered",
        "micro_compaction.apply",
        "permission.record_approval_result",
        "permission.set_mode",
        "plan_mode.cancel",
        "plan_mode.enter",
        "plan_mode.exit",
        "plan.revision",
        "plugin.session_start",
        "profile.bind",
        "prompt.aborted",
        "prompt.accepted",
        "prompt.completed",
        "prompt.steered",
        "runtime.set_binding",
        "staleGuard.cleared",
        "staleGuard.recorded",
        "swarm_mode.enter",
        "swarm_mode.exit",
        "task.started",
        "task.terminated",
        "task.waitDelivered",
        "token_counting.measured",
        "token_counting.rebased",
        "token_counting.truncated",
        "token_counting.turn_recorded",
        "tools.register_user_tool",
        "tools.reset_active_tools",
        "tools.set_active_tools",
        "tools.unregister_user_tool",
        "tools.update_store",
        "tower_mode.enter",
        "tower_mode.exit",
        "turn.cancel",
        "turn.ended",
        "turn.prompt",
        "turn.steer",
        "turn.step.interrupted",
        "turn.step.retrying",
        "usage.record",
    }
)
# Keys of other runtimes' envelopes (Copilot's ``data``, Codex's ``payload``);
# a kimi-code record is flat.
_FOREIGN_KEYS = ("data", "payload")


class KimiAdapter(FormatAdapter):
    name = "kimi"
    description = "Kimi Code wire.jsonl: flat {type, ..., time} records, one a line"
    priority = 65

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The ``time`` of the last record seen and of the one before it: an
        # inserted result takes the latest of these and its call's.
        self._time: Any = None
        self._prior: Any = None

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge)

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line: one function, each key read once, shared Entry
        # objects for the lines passed over.
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if type(kind) is not str:
            return None
        time = obj.get("time")
        self._prior, self._time = self._time, time
        if kind == "context.append_loop_event":
            event = obj.get("event")
            if type(event) is not dict:
                return None
            event_type = event.get("type")
            if event_type == "tool.result":
                result = event.get("result")
                output = result.get("output") if type(result) is dict else None
                return Entry(False, False, (self.result_for(event.get("toolCallId"), output),))
            if event_type == "tool.call":
                call_id = event.get("toolCallId")
                if type(call_id) is not str:
                    return PASS_OVER
                name = event.get("name")
                uuid = event.get("uuid")
                agent = obj.get("agentId")
                context = (uuid if type(uuid) is str else None, agent if type(agent) is str else None, time)
                return Entry(calls=(ToolCall(call_id, name if type(name) is str else None, event.get("args"), True, context),))
            if event_type == "step.end" or event_type == "step.begin":
                return _BOUNDARY
            return PASS_OVER  # content parts, and event kinds not known yet
        if kind == "turn.prompt":
            return _USER
        if kind == "context.append_message":
            message = obj.get("message")
            return _OPEN if type(message) is dict and message.get("role") == "user" else PASS_OVER
        if kind in _RESETS:
            return _BOUNDARY
        return PASS_OVER

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        # Before a line, the line seen last is that line and the one before it
        # is the record's predecessor; at the end, the last line is.
        around = (self._prior, self._time) if before is not None else (self._time,)
        records = []
        for pending in closed:
            parent, agent, called = pending.call.context
            record: dict[str, Any] = {"type": "context.append_loop_event"}
            if agent is not None:
                record["agentId"] = agent
            event: dict[str, Any] = {"type": "tool.result"}
            if parent is not None:
                event["parentUuid"] = parent
            event["toolCallId"] = pending.call.id
            # No ``isError``: kimi-code shows the model an error result as
            # "ERROR: Tool execution failed.", a claim the marker does not make.
            event["result"] = {"output": self.marker}
            record["event"] = event
            time = _latest((called, *around))
            if time is not None:
                record["time"] = time
            records.append(record)
        return Insertion(records)


def _latest(times: Sequence[Any]) -> Any:
    """The latest epoch time among ``times``, as written (None if none is a number)."""
    best = None
    for time in times:
        if type(time) in (int, float) and time == time and (best is None or time > best):  # noqa: PLR0124 (not NaN)
            best = time
    return best


def _judge(obj: dict[str, Any]) -> int | None:
    kind = obj.get("type")
    if type(kind) is not str:
        return Detection.NO  # every wire record has a type (Python kimi-cli's have none)
    for key in _FOREIGN_KEYS:
        if key in obj:
            return Detection.NO
    if kind == "context.append_loop_event":
        event = obj.get("event")
        return Detection.CERTAIN if type(event) is dict and type(event.get("type")) is str else Detection.NO
    if kind == "context.append_message":
        message = obj.get("message")
        return Detection.CERTAIN if type(message) is dict and type(message.get("role")) is str else Detection.NO
    if kind == "turn.prompt":
        return Detection.CERTAIN if type(obj.get("input")) is list else Detection.NO
    if kind == "metadata":
        # Python kimi-cli's wire.jsonl opens with the same header; only the records after it tell.
        return Detection.COMPATIBLE if type(obj.get("protocol_version")) is str else Detection.NO
    return Detection.COMPATIBLE if kind in _RECORD_TYPES else None


ADAPTER = KimiAdapter
