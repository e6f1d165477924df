"""OpenCode sessions: its SQLite store, and the messages of ``opencode export``.

OpenCode keeps every session in one SQLite database in its data folder
(``~/.local/share/opencode/opencode.db``; ``apx_doctor.databases`` reads it).
A message is a row of ``message`` and each of its parts a row of ``part``;
the doctor reads a message as OpenCode's own API and ``opencode export`` hand
it over::

    {"info": {"id", "role": "user" | "assistant", ...}, "parts": [part, ...]}

A ``user`` message with a text part the user wrote (one not marked
``synthetic``) starts the checked history; every message is a turn boundary.
A call is an assistant's ``{"type": "tool", "callID", "tool", "state"}``
part, and its result is inline: ``state.status`` is ``completed`` (with the
``output``) or ``error`` (with the ``error``) once the call is over, and
``pending`` or ``running`` until then. A call still pending or running when
the next message begins, or when the session ends, was interrupted: OpenCode
itself, resuming such a session, sends the model ``[Tool execution was
interrupted]`` for it and leaves the part as it is.

The not-run record is not a new message: it is the call's own part, in the
final state OpenCode itself gives a tool it stops (``status: "error"``, with
``time.end``), and the marker as the ``error`` text, which is what OpenCode
sends the model for it. OpenCode has no other final status that does not say
the tool completed: ``error`` is also what it writes for a tool it aborted
(``Tool execution aborted``). The record does not set
``metadata.interrupted``: with that flag OpenCode sends the tool's partial
output (``metadata.output``) instead of the error text, and that output is
left as it was. ``apx_doctor.databases`` writes the record into the part's
row; through the library (``repair_messages``), which only inserts messages,
such calls are reported with ``fixable`` false.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine import Entry, PendingCall, ToolCall
from .base import Detection, FormatAdapter, Insertion, detect_by_line, str_or_none

# The statuses of a tool part whose call is over.
FINAL_STATUSES = frozenset({"completed", "error"})

_USER = Entry(opens_history=True, boundary=True)
_BOUNDARY = Entry(boundary=True)


class OpenCodeAdapter(FormatAdapter):
    name = "opencode"
    description = "OpenCode sessions: its SQLite store (opencode.db), or opencode export"
    priority = 60
    # Read whole: an export is one JSON document, the store a database.
    whole_file = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Set where the answers can be written into the calls' own parts
        # (apx_doctor.databases, apx_doctor.documents). Left False, calls are
        # reported as not repairable.
        self.patching = False

    @classmethod
    def detect(cls, samples: Sequence[Any]) -> int:
        return detect_by_line(samples, _judge_message)

    @classmethod
    def detect_document(cls, value: Any) -> int:
        """How sure it is that one whole JSON document is an OpenCode export (or its messages)."""
        messages = value.get("messages") if type(value) is dict else value
        if type(messages) is not list:
            return Detection.NO
        if type(value) is dict and type(value.get("info")) is not dict:
            return Detection.NO
        if not messages:
            return Detection.COMPATIBLE if type(value) is dict else Detection.NO
        return detect_by_line(messages[:64], _judge_message)

    @staticmethod
    def document_messages(value: Any) -> list[Any]:
        messages: list[Any] = value["messages"] if type(value) is dict else value
        return messages

    @staticmethod
    def with_messages(value: Any, messages: list[Any]) -> Any:
        return {**value, "messages": messages} if type(value) is dict else messages

    def classify(self, obj: Any) -> Entry | None:
        if type(obj) is not dict:
            return None
        info, parts = obj.get("info"), obj.get("parts")
        if type(info) is not dict or type(parts) is not list:
            return None
        role = info.get("role")
        if role == "user":
            return _USER if any(_is_prompt(p) for p in parts) else _BOUNDARY
        if role != "assistant":
            return None
        calls = self._open_calls(parts, created_time(info))
        return Entry(False, True, (), calls) if calls else _BOUNDARY

    def _open_calls(self, parts: list[Any], created: Any) -> tuple[ToolCall, ...]:
        open_: dict[str, ToolCall] = {}
        for part in parts:
            call_id = _open_call_id(part)
            if call_id is not None and call_id not in open_:
                name = str_or_none(part.get("tool"))
                # The part (and when its message began) is the context: its answer is the part, made final.
                open_[call_id] = ToolCall(call_id, name, part["state"].get("input"), self.patching, (part, created))
        return tuple(open_.values())

    def describe(self, obj: Any) -> Entry | None:
        """What ``show`` draws for a message: every call of a reply, and the results it holds."""
        entry = self.classify(obj)
        if entry is None or (obj.get("info") or {}).get("role") != "assistant":
            return entry
        calls, results = [], []
        for part in obj["parts"]:
            if type(part) is not dict or part.get("type") != "tool" or not isinstance(part.get("callID"), str):
                continue
            state: Any = part.get("state") if type(part.get("state")) is dict else {}
            calls.append(ToolCall(part["callID"], str_or_none(part.get("tool")), state.get("input")))
            if state.get("status") in FINAL_STATUSES:
                text = state.get("output") if state.get("status") == "completed" else state.get("error")
                results.append(self.result_for(part["callID"], text))
        return Entry(entry.opens_history, True, tuple(results), tuple(calls))

    def not_run_records(self, closed: Sequence[PendingCall], before: Any | None) -> Insertion:
        # The repair writes each answer into the call's own part (answer_in_place);
        # this is each part as it will be, for the report.
        return Insertion([self.answered_part(*p.call.context) for p in closed])

    def not_run_state(self, state: dict[str, Any], created: Any = None) -> dict[str, Any]:
        """``state`` made final as OpenCode makes a stopped tool's, with the marker as its error.

        A final state has a start and an end time. The end is the start: the
        doctor does not know when the turn was cut off, and a made-up time
        would claim more than it knows. A call still pending never started:
        its message's creation time (``created``) stands for both.
        """
        time: Any = state.get("time") if type(state.get("time")) is dict else {}
        start = time.get("start") if _is_number(time.get("start")) else created
        out: dict[str, Any] = dict(state)  # keys keep their order; status and error are set where they stand
        out["status"] = "error"
        out.setdefault("input", {})
        out["error"] = self.marker
        if _is_number(start):
            out["time"] = {**time, "start": start, "end": start}
        return out

    def answered_part(self, part: dict[str, Any], created: Any = None) -> dict[str, Any]:
        """The tool ``part`` with its call answered by the not-run state."""
        return {**part, "state": self.not_run_state(part["state"], created)}

    def answer_in_place(self, message: dict[str, Any], calls: Sequence[ToolCall]) -> dict[str, Any]:
        """``message`` with every one of ``calls`` answered by the not-run state."""
        ids = {call.id for call in calls}
        created = created_time(message["info"])
        parts = [self.answered_part(part, created) if _open_call_id(part) in ids else part for part in message["parts"]]
        return {**message, "parts": parts}


def _judge_message(obj: dict[str, Any]) -> int | None:
    # OpenCode's message envelope: its info and its parts, keys no other
    # format's message has together.
    info, parts = obj.get("info"), obj.get("parts")
    if type(info) is dict and type(parts) is list and info.get("role") in ("user", "assistant"):
        return Detection.CERTAIN
    return Detection.NO


def _is_prompt(part: Any) -> bool:
    return type(part) is dict and part.get("type") == "text" and not part.get("synthetic")


def _open_call_id(part: Any) -> str | None:
    """The call id of a tool part whose call is not over; None for any other part."""
    if type(part) is not dict or part.get("type") != "tool":
        return None
    state, call_id = part.get("state"), part.get("callID")
    if type(state) is not dict or not isinstance(call_id, str):
        return None
    return None if state.get("status") in FINAL_STATUSES else call_id


def created_time(info: dict[str, Any]) -> Any:
    time = info.get("time")
    return time.get("created") if type(time) is dict else None


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


ADAPTER = OpenCodeAdapter
