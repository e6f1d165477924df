"""Gemini CLI sessions: ``~/.gemini/tmp/<project>/chats/session-*.json`` and ``*.jsonl``.

Two shapes hold the same ``ConversationRecord``:

    {"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [MessageRecord, ...]}

- the older session file: one JSON document, written whole each time with
  ``JSON.stringify(conversation, null, 2)`` (no final line ending);
- the newer log: a header line ``{"sessionId", "projectHash", ...}``, then one
  compact record a line: a message record (a string ``id``; appended again each
  time the message changes, and the last record of an id wins while the message
  keeps its place), ``{"$set": {...}}`` (merged into the header; a non-empty
  ``messages`` list there replaces the records' messages) and
  ``{"$rewindTo": id}`` (removes that message and every later one; an unknown
  id removes them all). ``fold`` replays them as Gemini CLI's loader does.

A message is ``{"id", "timestamp", "type", "content", ...}``. ``user`` is the
prompt (a turn boundary that starts the checked history); ``gemini`` is the
model's reply, a boundary too, whose calls are its ``toolCalls[]`` records:
``{"id", "name", "args", "result", "status", "timestamp", ...}`` with the
result inline, a list of ``functionResponse`` parts. ``info``, ``error`` and
``warning`` are the CLI's own notes, never sent to the model: passed over.
A ``functionCall`` part in a reply's ``content`` (sessions that keep the model's
parts) is a call too, answered by the ``toolCalls`` record of its id.

A call is answered when its result arrived (``result`` is there and not null or
empty) or its ``status`` is final: ``success``, ``error`` or ``cancelled``, the
statuses of Gemini CLI's completed calls (``validating``, ``scheduled``,
``awaiting_approval`` and ``executing`` are not). ``cancelled`` is Gemini CLI's
own answer for a call the user or an abort stopped.

The not-run record is not a new message: it is the call's own record with the
result Gemini CLI writes, ``[{"functionResponse": {"id", "name", "response":
{"output": marker}}}]``, and the status ``cancelled``. Of the final statuses,
``success`` claims the tool ran and ``error`` that it failed; ``cancelled`` is
what Gemini CLI itself writes for a call stopped mid-turn, including one
stopped while it ran, so it claims neither. ``apx_doctor.documents`` writes it
into the call's record in a session file, and appends the changed message as a
new record to a log. Through the library (``repair_messages``), which can only
insert messages, such calls are reported with ``fixable`` false.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import PASS_OVER, Entry, PendingCall, ToolCall
from .base import Detection, FormatAdapter, Insertion, detect_by_line, str_or_none

# The statuses of a completed call (Gemini CLI's CompletedToolCall).
FINAL_STATUSES = frozenset({"success", "error", "cancelled"})
NOT_RUN_STATUS = "cancelled"

_USER = Entry(opens_history=True, boundary=True)
_REPLY = Entry(boundary=True)
# The CLI's own notes: shown to the user, never sent to the model.
_NOTES = frozenset({"info", "error", "warning"})


class GeminiCliAdapter(FormatAdapter):
    name = "gemini-cli"
    description = "Gemini CLI sessions: one JSON document, or the JSONL log with $set and $rewindTo"
    priority = 60
    # Read whole (apx_doctor.documents): a log's later records change earlier ones.
    whole_file = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Set by apx_doctor.documents, which writes the answers into the calls'
        # own records. Left False, calls are reported as not repairable here.
        self.patching = False

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge_line)

    @classmethod
    def detect_document(cls, value: Any) -> int:
        """How sure it is that one whole JSON document is a session file."""
        if type(value) is not dict or not isinstance(value.get("messages"), list):
            return Detection.NO
        if isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str):
            return Detection.CERTAIN
        return Detection.COMPATIBLE

    @staticmethod
    def document_messages(value: Any) -> list[Any]:
        messages: list[Any] = value["messages"]
        return messages

    @staticmethod
    def with_messages(value: Any, messages: list[Any]) -> Any:
        return {**value, "messages": messages}  # the same keys in the same order

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        kind = obj.get("type")
        if not isinstance(kind, str):
            # A log's header, $set and $rewindTo lines, should a caller hand them over.
            return PASS_OVER if _is_bookkeeping(obj) else None
        if kind == "user":
            return _USER
        if kind in _NOTES:
            return PASS_OVER
        if kind != "gemini":
            return None
        calls = self._open_calls(obj)
        return Entry(False, True, (), calls) if calls else _REPLY

    def _open_calls(self, message: dict[str, Any]) -> tuple[ToolCall, ...]:
        records = message.get("toolCalls")
        listed = records if isinstance(records, list) else []
        answered: set[str] = set()
        open_: dict[str, ToolCall] = {}
        for record in listed:
            if type(record) is not dict:
                continue
            call_id = record.get("id")
            if not isinstance(call_id, str):
                continue
            if _is_answered(record):
                answered.add(call_id)
                open_.pop(call_id, None)
            elif call_id not in answered and call_id not in open_:
                name = str_or_none(record.get("name"))
                open_[call_id] = ToolCall(call_id, name, record.get("args"), self.patching and name is not None, "record")
        known = {r.get("id") for r in listed if type(r) is dict and isinstance(r.get("id"), str)}
        for part in _parts(message.get("content")):
            call = part.get("functionCall") if type(part) is dict else None
            if type(call) is not dict:
                continue
            call_id, name = call.get("id"), str_or_none(call.get("name"))
            if not isinstance(call_id, str) or call_id in known or call_id in open_:
                continue
            # No record of it at all: the repair adds one, into a toolCalls list
            # (never over a toolCalls value that is no list).
            fixable = self.patching and name is not None and (records is None or isinstance(records, list))
            open_[call_id] = ToolCall(call_id, name, call.get("args"), fixable, "part")
        return tuple(open_.values())

    def describe(self, obj: Any) -> Entry | None:
        """What ``show`` draws for a message: every call of a reply, and the results it holds."""
        entry = self.classify(obj)
        if entry is None or type(obj) is not dict or obj.get("type") != "gemini":
            return entry
        records = obj.get("toolCalls")
        calls, results = [], []
        for record in records if isinstance(records, list) else []:
            if type(record) is dict and isinstance(record.get("id"), str):
                calls.append(ToolCall(record["id"], str_or_none(record.get("name")), record.get("args")))
                if _is_answered(record):
                    results.append(self.result_for(record["id"], _result_text(record.get("result"))))
        shown = {c.id for c in calls}
        calls += [c for c in entry.calls if c.id not in shown]
        return Entry(False, True, tuple(results), tuple(calls))

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        # One answered tool call record per call: what the repair writes into
        # (or, for a call known only from the content, adds to) its message.
        return Insertion([self.answered_record(p.call, None) for p in closed])

    def answered_record(self, call: ToolCall, record: dict[str, Any] | None, timestamp: Any = None) -> dict[str, Any]:
        """``record`` (None: a new one for ``call``) with the not-run result and status."""
        result = [{"functionResponse": {"id": call.id, "name": call.name, "response": {"output": self.marker}}}]
        if record is None:
            new: dict[str, Any] = {"id": call.id, "name": call.name, "args": call.arguments}
            new["result"] = result
            new["status"] = NOT_RUN_STATUS
            if isinstance(timestamp, str):
                new["timestamp"] = timestamp
            return new
        out = dict(record)  # keys keep their order; result and status are set where they stand
        out["result"] = result
        out["status"] = NOT_RUN_STATUS
        return out

    def answer_in_place(self, message: dict[str, Any], calls: Sequence[ToolCall]) -> dict[str, Any]:
        """``message`` with every one of ``calls`` answered by the not-run record."""
        ids = {call.id for call in calls}
        records = message.get("toolCalls")
        out = dict(message)
        updated = list(records) if isinstance(records, list) else []
        by_id = {call.id: call for call in calls}
        for position, record in enumerate(updated):
            if type(record) is dict and isinstance(record.get("id"), str) and record["id"] in ids and not _is_answered(record):
                updated[position] = self.answered_record(by_id[record["id"]], record)
        for call in calls:
            if call.context == "part":
                updated.append(self.answered_record(call, None, message.get("timestamp")))
        out["toolCalls"] = updated
        return out


def _judge_line(obj: dict[str, Any]) -> int | None:
    # The log's header (and a session written on one line) names the session
    # and its project: keys no other runtime's line has together.
    if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
        return Detection.CERTAIN
    return None


def _is_bookkeeping(obj: dict[str, Any]) -> bool:
    return "$set" in obj or "$rewindTo" in obj or ("sessionId" in obj and "projectHash" in obj)


def _is_answered(record: dict[str, Any]) -> bool:
    result = record.get("result")
    if result is not None and result != "" and result != []:
        return True
    status = record.get("status")
    return isinstance(status, str) and status in FINAL_STATUSES


def _parts(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def _result_text(result: Any) -> Any:
    """The text of a result Gemini CLI wrote: a functionResponse's output (or error)."""
    for part in _parts(result):
        response = part.get("functionResponse") if type(part) is dict else None
        answer = response.get("response") if type(response) is dict else None
        if type(answer) is dict:
            return answer.get("output", answer.get("error"))
    return result


# --- the log ------------------------------------------------------------------


class Fold:
    """The conversation a log holds so far, replayed record by record as Gemini CLI loads it."""

    __slots__ = ("messages_line", "metadata", "records")

    def __init__(self) -> None:
        self.metadata: dict[str, Any] = {}
        # message id -> (record, its line); a later record of an id keeps its place.
        self.records: dict[str, tuple[dict[str, Any], int]] = {}
        # The line of the header or $set that last set ``messages``.
        self.messages_line = 0

    def add(self, number: int, record: Any) -> bool:
        """Apply the record on line ``number``; False when it is none of the log's records."""
        if type(record) is not dict:
            return False
        rewind = record.get("$rewindTo")
        if isinstance(rewind, str):
            self._rewind(rewind)
            return True
        message_id = record.get("id")
        if isinstance(message_id, str):
            self.records[message_id] = (record, number)
            return True
        update = record.get("$set")
        if type(update) is dict or type(update) is list:
            # JavaScript spreads an array as its indices.
            self._merge(number, update if type(update) is dict else {str(i): v for i, v in enumerate(update)})
            return True
        if isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            self._merge(number, record)
            return True
        return False

    def _merge(self, number: int, update: dict[str, Any]) -> None:
        self.metadata.update(update)
        if "messages" in update:
            self.messages_line = number

    def _rewind(self, message_id: str) -> None:
        if message_id not in self.records:
            self.records.clear()
            return
        ids = list(self.records)
        for gone in ids[ids.index(message_id) :]:
            del self.records[gone]

    def replaced(self) -> bool:
        """True when a header or $set holds the messages (a non-empty list), not the records."""
        messages = self.metadata.get("messages")
        return isinstance(messages, list) and len(messages) > 0

    def conversation(self) -> tuple[list[Any], list[int]]:
        """The messages Gemini CLI would load, and the line each was read from."""
        if self.replaced():
            messages = self.metadata["messages"]
            return list(messages), [self.messages_line] * len(messages)
        pairs = list(self.records.values())
        return [record for record, _ in pairs], [line for _, line in pairs]


GeminiCliAdapter.log_fold = Fold  # type: ignore[attr-defined]

ADAPTER = GeminiCliAdapter
