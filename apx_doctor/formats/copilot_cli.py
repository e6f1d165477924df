"""GitHub Copilot CLI session events: ``~/.copilot/session-state/<session>/events.jsonl``.

One ``{type, data, id, timestamp, parentId}`` event a line; ``parentId`` is the
id of the event written before it, so the events form one chronological chain:

    {"type": "session.start", "data": {"sessionId": ..., "producer": "copilot-agent", ...}, "id": ..., "timestamp": ..., "parentId": null}
    {"type": "user.message", "data": {"content": "...", ...}, ...}
    {"type": "assistant.message", "data": {"messageId": ..., "content": "...", "toolRequests": [{"toolCallId": ID, "name": ..., "arguments": ...}]}, ...}
    {"type": "tool.execution_start", "data": {"toolCallId": ID, "toolName": ...}, ...}
    {"type": "tool.execution_complete", "data": {"toolCallId": ID, "success": true, "result": {"content": "..."}}, ...}

The calls are the ``toolRequests`` of an ``assistant.message`` (and a
``tool.user_requested`` tool the user ran himself); ``tool.execution_complete``
answers them. ``tool.execution_start`` is progress: a call that started and
never completed is still unanswered. The next model reply (an
``assistant.message`` with another ``messageId``) and a user message close the
turn, and so does ``abort``. A ``session.resume`` does not: there Copilot
itself, when it rebuilds the conversation, stands in a result for the calls
still open at the tail ("Completing N orphaned tool calls"), and 1.0.102
writes it to the file, as a ``tool.execution_complete`` right after the
``session.resume``: that completion answers the call (it says the effects are
unknown, as the not-run record does). An older version that did not write it
leaves the call open until the next message, where the record goes, after the
``session.resume``, where 1.0.102 writes its own. A ``session.compaction_complete`` or
``session.context_cleared`` replaces the history before it and closes pending
calls too. A user message sent while the agent runs (``delivery: "steering"``)
closes nothing. Every other event (turn start and end, reasoning, hooks,
usage, session info, kinds not known yet, ...) is passed over.

A sub-agent's events carry its ``agentId`` (older versions: the
``parentToolCallId`` of the call that started it); they pair within their own
thread, checked from its first event, and its ``subagent.completed`` or
``subagent.failed`` closes what it left open.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from datetime import datetime
from typing import Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import DROP, Detection, FormatAdapter, Insertion, detect_by_line, stable_uuid

_USER = Entry(opens_history=True, boundary=True)
_STEER = Entry(opens_history=True)
_BOUNDARY = Entry(boundary=True)

# Inserted event ids are uuid5(this namespace, session, call event, call id):
# a second run writes the same bytes. The namespace is
# uuid5(NAMESPACE_URL, NAMESPACE_NAME), made when the first record is.
NAMESPACE_NAME = "https://github.com/apx-doctor/apx-doctor/formats/copilot-cli"
# uuid5(NAMESPACE_URL, NAMESPACE_NAME), written out so that a check imports no uuid.
_NAMESPACE = bytes.fromhex("8b4e7cfd11dd5e93b35d4bbc96e76833")

# Events that end a turn, or start the history anew.
_CLOSING = frozenset({"abort", "session.compaction_complete", "session.context_cleared"})
_SUBAGENT_END = frozenset({"subagent.completed", "subagent.failed"})

# Event types that define the format (the Copilot SDK's session-event schema).
_DEFINING = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "tool.user_requested",
        "abort",
    }
)
# Keys of other runtimes' envelopes: Claude Code's ``progress`` lines carry a
# ``data`` too, with a uuid tree around it.
_FOREIGN_KEYS = ("message", "payload", "event", "uuid", "parentUuid", "sessionId")


class CopilotCliAdapter(FormatAdapter):
    name = "copilot-cli"
    description = "GitHub Copilot CLI events.jsonl: {type, data, id, timestamp, parentId} events, one a line"
    priority = 55

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session: str = ""
        # The id and timestamp of the last event seen, and of the one before it.
        self._id: Any = None
        self._prior_id: Any = None
        self._time: Any = None
        self._prior_time: Any = None
        # thread -> messageId of its last assistant.message: a message written
        # over several events is one reply.
        self._message: dict[Hashable, str] = {}
        # Ids of the events --drop-orphans removed -> their parentId.
        self._dropped: dict[str, Any] = {}

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge)

    def classify(self, obj: Any) -> Entry | None:
        # Runs on every line: one function, each key read once, shared Entry
        # objects for the events passed over.
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        data = obj.get("data")
        if type(kind) is not str or type(data) is not dict:
            return None
        self._prior_id, self._id = self._id, obj.get("id")
        self._prior_time, self._time = self._time, obj.get("timestamp")
        agent = obj.get("agentId")
        if type(agent) is str:
            thread: Hashable = agent
        else:
            parent = data.get("parentToolCallId")
            thread = parent if type(parent) is str else None
        sub = thread is not None
        if kind == "tool.execution_complete":
            result = data.get("result")
            content = result.get("content") if type(result) is dict else None
            if content is None:
                error = data.get("error")
                content = error.get("message") if type(error) is dict else None
            return Entry(sub, False, (self.result_for(data.get("toolCallId"), content),), (), thread)
        if kind == "assistant.message":
            message_id = data.get("messageId")
            messages = self._message
            if type(message_id) is str:
                continued = messages.get(thread) == message_id
                messages[thread] = message_id
            else:
                continued = False
                messages.pop(thread, None)
            requests = data.get("toolRequests")
            calls = self._calls(requests, obj, data) if requests and type(requests) is list else ()
            if continued and not calls:
                return PASS_OVER
            return Entry(sub, not continued, (), calls, thread)
        if kind == "user.message":
            self._message.pop(thread, None)
            if data.get("delivery") == "steering":
                return _STEER if not sub else Entry(True, thread=thread)
            return _USER if not sub else Entry(True, True, thread=thread)
        if kind in _CLOSING:
            self._message.pop(thread, None)
            return _BOUNDARY if not sub else Entry(True, True, thread=thread)
        if kind == "session.resume":
            # A new process: its first reply is a new message, not the rest of the last.
            self._message.clear()
            return PASS_OVER
        if kind in _SUBAGENT_END:
            # It names the call that started the sub-agent: the thread of a
            # sub-agent whose events carry that call id as their parent.
            ended = thread if sub else data.get("toolCallId")
            return Entry(True, True, thread=ended) if type(ended) is str else PASS_OVER
        if kind == "tool.user_requested":
            call_id = data.get("toolCallId")
            if type(call_id) is not str:
                return PASS_OVER
            name = data.get("toolName")
            call = ToolCall(call_id, name if type(name) is str else None, data.get("arguments"), True, self._context(obj, data))
            return Entry(sub, False, (), (call,), thread)
        if kind == "session.start":
            session = data.get("sessionId")
            if type(session) is str:
                self._session = session
        return PASS_OVER

    def _calls(self, requests: list[Any], obj: dict[str, Any], data: dict[str, Any]) -> tuple[ToolCall, ...]:
        context = None
        calls = []
        for request in requests:
            if type(request) is not dict:
                continue
            call_id = request.get("toolCallId")
            if type(call_id) is not str:
                continue
            if context is None:
                context = self._context(obj, data)
            name = request.get("name")
            calls.append(ToolCall(call_id, name if type(name) is str else None, request.get("arguments"), True, context))
        return tuple(calls)

    def _context(self, obj: dict[str, Any], data: dict[str, Any]) -> tuple[Any, ...]:
        """What a record answering a call of this event copies from it."""
        copied = {}
        for key in ("interactionId", "turnId", "model", "parentToolCallId"):
            value = data.get(key)
            if type(value) is str:
                copied[key] = value
        agent = obj.get("agentId")
        return (obj.get("id"), obj.get("timestamp"), agent if type(agent) is str else None, copied)

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        # Before a line, the event seen last is that line and the one before it
        # is the records' predecessor in the chain; at the end, the last event is.
        around: tuple[Any, ...]
        if before is not None:
            predecessor, around = self._prior_id, (self._prior_time, self._time)
        else:
            predecessor, around = self._id, (self._time,)
        # An event --drop-orphans removed is no link: its parent is.
        parent = self._resolve(predecessor)
        records = []
        for pending in closed:
            call_event, call_time, agent, copied = pending.call.context
            data: dict[str, Any] = {
                "toolCallId": pending.call.id,
                # A completion must say whether the execution completed
                # successfully; it did not. This is the shape Copilot CLI
                # (1.0.102) itself writes when it resumes a session with a call
                # left open: ``success`` false and its text in
                # ``error.message``, which is what it sends the model. It does
                # not read ``result.content`` of an unsuccessful completion
                # (it sends "Tool execution failed" instead).
                "success": False,
                "error": {"message": self.marker},
            }
            data.update(copied)
            record: dict[str, Any] = {"type": "tool.execution_complete"}
            if agent is not None:
                record["agentId"] = agent
            record["data"] = data
            record["id"] = event_id = stable_uuid(_NAMESPACE, f"{self._session}\x00{_text(call_event)}\x00{pending.call.id}")
            timestamp = _latest((call_time, *around))
            if timestamp is not None:
                record["timestamp"] = timestamp
            record["parentId"] = parent if type(parent) is str else None
            parent = event_id
            records.append(record)
        # The event after the records pointed at their predecessor: it now
        # points at the last of them, so the chain runs through them.
        relinked = None
        if type(before) is dict and type(predecessor) is str and before.get("parentId") == predecessor:
            relinked = dict(before)
            relinked["parentId"] = parent
        return Insertion(records, relinked)

    def _resolve(self, parent: Any) -> Any:
        """``parent``, or the parent it had if --drop-orphans removed it (and so on up)."""
        dropped = self._dropped
        seen = set()
        while type(parent) is str and parent in dropped and parent not in seen:
            seen.add(parent)
            parent = dropped[parent]
        return parent

    def drop_results(self, obj: Any, call_ids: Sequence[str | None]) -> Any:
        # One completion an event: the whole event goes, and the events that
        # pointed at it are re-pointed at its parent (``relink``).
        if type(obj) is dict and type(obj.get("id")) is str:
            self._dropped[obj["id"]] = obj.get("parentId")
        return DROP

    def relink(self, obj: Any) -> Any:
        if not self._dropped or type(obj) is not dict:
            return None
        parent = obj.get("parentId")
        if type(parent) is not str or parent not in self._dropped:
            return None
        relinked = dict(obj)
        relinked["parentId"] = self._resolve(parent)
        return relinked


def _text(value: Any) -> str:
    return value if type(value) is str else ""


def _latest(stamps: Sequence[Any]) -> Any:
    """The latest of ``stamps`` that is a zoned ISO moment, as written.

    Where none is, the last string among them (a file that writes something
    else there keeps its own convention), or None.
    """
    best = None
    fallback = None
    for stamp in stamps:
        if type(stamp) is not str:
            continue
        fallback = stamp
        try:
            moment = datetime.fromisoformat(stamp)
        except ValueError:
            continue
        if moment.tzinfo is None:
            continue
        if best is None or moment > best[0]:
            best = (moment, stamp)
    return best[1] if best is not None else fallback


def _judge(obj: dict[str, Any]) -> int | None:
    kind = obj.get("type")
    if type(kind) is not str or type(obj.get("data")) is not dict:
        return Detection.NO  # every Copilot event has a type and a data object
    for key in _FOREIGN_KEYS:
        if key in obj:
            return Detection.NO
    if kind in _DEFINING:
        return Detection.CERTAIN
    # Other events (session.info, hook.start, ...) and kinds added later are all
    # dotted names; an undotted one is another runtime's.
    return None if "." in kind else Detection.NO


ADAPTER = CopilotCliAdapter
